//go:build !js

package engine

import (
	"fmt"
	"testing"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// qwen35ParityCases are qwen35's rows of the parity check: F32 weights
// with an F32 cache, and Q8_0 weights with an F16 cache (llama.cpp's
// default; the recurrent state is float32 whatever the cache), each
// continued greedily for 64 tokens after llamacppref's 3 prompts.
func qwen35ParityCases() []llamacppref.Case {
	var cases []llamacppref.Case
	for _, r := range []struct {
		typ tensor.Type
		kv  llamacppref.KVType
	}{{tensor.F32, llamacppref.KVF32}, {tensor.Q8_0, llamacppref.KVF16}} {
		cases = append(cases, llamacppref.Case{
			Name:   fmt.Sprintf("qwen35-%v-kv%s", r.typ, r.kv),
			KVType: r.kv,
			Spec: modelgen.Spec{Arch: "qwen35", Shape: qwen35Shape, Type: r.typ, Seed: 14, Std: 0.1, OutputStd: 0.5,
				SeparateOutput: true, MuteSpecial: true},
		})
	}
	return cases
}

// TestParityWithLlamaCppQwen35 holds qwen35 to llama.cpp as
// TestParityWithLlamaCpp holds the other families: the greedy tokens must
// be llama.cpp's, and the top-10 probabilities at every step within its
// tolerances.
func TestParityWithLlamaCppQwen35(t *testing.T) {
	llamacppref.Check(t, qwen35ParityCases(), loadParity)
}
