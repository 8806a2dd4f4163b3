//go:build !js

package engine

import (
	"fmt"
	"testing"

	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// gemma3nParityCases are small random gemma3n models (dim 64, heads of
// 32, a sliding window of 16 positions, every 5th layer full), continued
// greedily for 64 tokens after prompts of 1, 17 and 41 tokens, as
// gemmaParityCases' are; every layer has AltUp's four streams, LAuReL and
// per-layer embeddings of 256 values, the first 10 the sparse gate, and
// the logits are soft-capped at 30 (all of which llama.cpp fixes).
//
// "F32" has 22 layers, so that layers 20 and 21 read layer 18's cache (the
// first shared layer is llama.cpp's fixed 20th); "Q8_0" has 11 (the sparse
// gate's last and the first after it). Both have weights of std 0.03 and
// an output of their own (std 0.3), for margins between the best tokens.
// Each Q8_0 rounding of a product's input that falls the other way from
// llama.cpp's (a value within an ulp of a step) moves what follows, and
// through four streams and some fifty products a layer a deeper model
// amplifies it: at 22 layers the Q8_0 model's probabilities part from
// llama.cpp's by up to 2.6e-1 (5.9e-2 after the prompts), at 11 by 1.6e-2.
// Gemma 3n's GELU goes through ggml's F16 table (llamacppref's
// f16Activations), so the F32 model rounds too: measured 1.5e-3 at most,
// all 192 tokens llama.cpp's.
func gemma3nParityCases() []llamacppref.Case {
	prompts, runs := slidingParityRuns(384)
	var cases []llamacppref.Case
	for _, v := range []struct {
		run    parityRun
		layers int
	}{{runs[0], 22}, {runs[1], 11}} {
		shape := modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: v.layers, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 384, ContextLength: 128}
		cases = append(cases, llamacppref.Case{
			Name:    fmt.Sprintf("gemma3n-%v-kv%s", v.run.typ, v.run.kv),
			KVType:  v.run.kv,
			Prompts: prompts,
			Spec: modelgen.Spec{Arch: "gemma3n", Shape: shape, Family: modelgen.Family{SlidingWindow: 16, FinalSoftCap: 30},
				Type: v.run.typ, Seed: 14, Std: 0.03, OutputStd: 0.3, SeparateOutput: true, MuteSpecial: true},
		})
	}
	return cases
}

// TestParityWithLlamaCppGemma3n holds gemma3n to llama.cpp as
// TestParityWithLlamaCpp holds the other families.
func TestParityWithLlamaCppGemma3n(t *testing.T) {
	llamacppref.Check(t, gemma3nParityCases(), loadParity)
}
