//go:build !js

package engine

import (
	"fmt"
	"testing"

	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// gemma4ParityCases are small random gemma4 models with a sliding window
// of 16 positions, continued greedily for 64 tokens after prompts of 1, 17
// and 41 tokens (up to 105 positions: the rings wrap round several times),
// as gemmaParityCases' are. "gemma4" has Gemma-4-E2B's parts: 9 layers,
// of every 3 the last full; the sliding layers' heads (16) half as wide as
// the full layers' (32), which rotate a quarter of theirs (rope_freqs) at
// a base of 1e6 against the sliding layers' 10000, and have one key/value
// head against the sliding layers' 2; the last 3 layers share the caches
// of layers 4 (sliding) and 5 (full), with feed-forwards twice as wide;
// per-layer embeddings of 32 values; an output scale in every layer; the
// logits soft-capped at 30. "gemma4-kv" has the larger models' parts
// instead: no per-layer embeddings or shared caches, the full layers'
// values their keys (no attn_v), an output matrix of its own. "gemma4" is
// in F32 (F32 cache) and Q8_0 (F32 and F16 caches); "gemma4-kv" in F32
// only: with an output of its own its distributions are flatter, and as
// gemma3-output's (gemmaParityCases) it is chaotic, each GELU input that
// an F16 rounding boundary separates from llama.cpp's moving what
// follows: in F32 it agrees within the rounding tolerance (measured
// 5.5e-4; with attn_v, 3.3e-4), in Q8_0 it parts by up to 7.5e-2.
func gemma4ParityCases() []llamacppref.Case {
	shape := modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 9, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 384, ContextLength: 128}
	sliding := make([]bool, shape.Layers)
	for l := range sliding {
		sliding[l] = l%3 != 2
	}
	prompts, all := slidingParityRuns(shape.VocabSize)
	var cases []llamacppref.Case
	for _, v := range []struct {
		name   string
		gemma4 *modelgen.Gemma4
		output bool
		outStd float64 // the output's: a separate one's larger, for margins between the best tokens
		runs   []parityRun
	}{
		{"gemma4", &modelgen.Gemma4{Sliding: sliding, SlidingHeadDim: 16, FullKVHeads: 1, SharedKVLayers: 3, DoubleWide: true,
			PerLayerDim: 32, OutputScale: true}, false, 0.1, all},
		{"gemma4-kv", &modelgen.Gemma4{Sliding: sliding, SlidingHeadDim: 16, FullKeysAsValues: true}, true, 0.25, all[:1]},
	} {
		for _, r := range v.runs {
			cases = append(cases, llamacppref.Case{
				Name:    fmt.Sprintf("%s-%v-kv%s", v.name, r.typ, r.kv),
				KVType:  r.kv,
				Prompts: prompts,
				Spec: modelgen.Spec{Arch: "gemma4", Shape: shape, Family: modelgen.Family{SlidingWindow: 16, FinalSoftCap: 30}, Gemma4: v.gemma4,
					Type: r.typ, Seed: 14, Std: 0.1, OutputStd: v.outStd, SeparateOutput: v.output, MuteSpecial: true},
			})
		}
	}
	return cases
}

// TestParityWithLlamaCppGemma4 holds gemma4 to llama.cpp as
// TestParityWithLlamaCpp holds the other families.
func TestParityWithLlamaCppGemma4(t *testing.T) {
	llamacppref.Check(t, gemma4ParityCases(), loadParity)
}
