//go:build !js

package engine

import (
	"fmt"
	"testing"

	"github.com/wasmlm/wasmlm/internal/llamacppref"
)

// gemma4MoEParityCases are gemma4MoESpec in F32 (F32 cache) and Q8_0 (F32
// and F16 caches), continued greedily for 64 tokens after the sliding
// families' prompts of 1, 17 and 41 tokens. Its next-token distributions
// are flat (OutputStd 0.1: the most probable token near 1.5%), as a
// sharper output (0.2) makes the Q8_0 runs chaotic, each expert choice
// that a rounding separates from llama.cpp's moving what follows (measured
// 7.2e-2); with seed 14 rather than 3, a Q8_0 continuation meets two
// tokens within 3e-4 of each other (relative), which llama.cpp's and the
// engine's roundings order differently.
func gemma4MoEParityCases() []llamacppref.Case {
	sp := gemma4MoESpec()
	prompts, runs := slidingParityRuns(sp.VocabSize)
	var cases []llamacppref.Case
	for _, r := range runs {
		sp.Type = r.typ
		cases = append(cases, llamacppref.Case{Name: fmt.Sprintf("gemma4-moe-%v-kv%s", r.typ, r.kv), KVType: r.kv, Prompts: prompts, Spec: sp})
	}
	return cases
}

// TestParityWithLlamaCppGemma4MoE holds Gemma 4's mixtures of experts to
// llama.cpp as TestParityWithLlamaCppGemma4 holds its dense models.
func TestParityWithLlamaCppGemma4MoE(t *testing.T) {
	llamacppref.Check(t, gemma4MoEParityCases(), loadParity)
}
