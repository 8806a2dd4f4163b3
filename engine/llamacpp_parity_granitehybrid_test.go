//go:build !js

package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
)

// graniteHybridParityCases are TestParityWithLlamaCpp's granitehybrid
// rows: graniteHybridSpec and graniteHybridMoESpec (experts) in F32 (F32
// cache) and Q8_0 (F32 and F16 caches), continued greedily for 64 tokens
// after 3 prompts.
func graniteHybridParityCases() []llamacppref.Case {
	var cases []llamacppref.Case
	for _, r := range []struct {
		typ tensor.Type
		kv  llamacppref.KVType
	}{{tensor.F32, llamacppref.KVF32}, {tensor.Q8_0, llamacppref.KVF32}, {tensor.Q8_0, llamacppref.KVF16}} {
		cases = append(cases, llamacppref.Case{
			Name:   fmt.Sprintf("granitehybrid-%v-kv%s", r.typ, r.kv),
			KVType: r.kv,
			Spec:   graniteHybridSpec(r.typ),
		}, llamacppref.Case{
			Name:   fmt.Sprintf("granitehybrid-moe-%v-kv%s", r.typ, r.kv),
			KVType: r.kv,
			Spec:   graniteHybridMoESpec(r.typ),
		})
	}
	return cases
}
