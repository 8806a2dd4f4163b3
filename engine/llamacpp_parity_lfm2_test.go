//go:build !js

package engine

import (
	"fmt"
	"testing"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// lfm2Shape is the lfm2 parity models' shape: 5 layers, short
// convolutions (kernel 3, LFM2's) at 0, 2 and 3 and attention at 1 and 4,
// so that a convolution follows attention and another convolution, and
// attention a convolution.
var lfm2Shape = modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 5, Heads: 4, KVHeads: 2, VocabSize: 384, ContextLength: 128}

// lfm2Family is the lfm2 parity models' layer pattern.
var lfm2Family = modelgen.Family{AttentionLayers: []int{1, 4}}

// lfm2ParityCases are the lfm2 rows of the parity check: the model in F32
// (F32 cache) and in Q8_0 (F32 and F16 caches; the convolution kernels
// stay F32, as llama-quantize leaves them), each continued greedily for 64
// tokens after 3 prompts.
func lfm2ParityCases() []llamacppref.Case {
	var cases []llamacppref.Case
	for _, r := range []struct {
		typ tensor.Type
		kv  llamacppref.KVType
	}{{tensor.F32, llamacppref.KVF32}, {tensor.Q8_0, llamacppref.KVF32}, {tensor.Q8_0, llamacppref.KVF16}} {
		cases = append(cases, llamacppref.Case{
			Name:   fmt.Sprintf("lfm2-%v-kv%s", r.typ, r.kv),
			KVType: r.kv,
			Spec: modelgen.Spec{Arch: "lfm2", Shape: lfm2Shape, Family: lfm2Family, Type: r.typ, Seed: 14, Std: 0.1, OutputStd: 0.5,
				SeparateOutput: true, MuteSpecial: true},
		})
	}
	return cases
}

// TestParityLFM2WithLlamaCpp holds lfm2, short convolutions beside
// attention, to llama.cpp as TestParityWithLlamaCpp holds the others:
// greedy tokens and the top-10 probabilities at every step.
func TestParityLFM2WithLlamaCpp(t *testing.T) {
	for _, r := range llamacppref.Check(t, lfm2ParityCases(), loadParity) {
		t.Log(r)
	}
}
