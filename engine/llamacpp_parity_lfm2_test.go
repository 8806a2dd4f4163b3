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

// lfm2moeParityCases are the lfm2moe rows: lfm2Shape's layers, the first
// two with dense feed-forwards and the others with 8 experts of 64 units,
// 2 for each token chosen by their sigmoids plus the selection bias, in
// F32 (F32 cache) and Q8_0 (F16 cache): lfm2's Q8_0 with an F32 cache
// already covers that cache, and each quantized case of a mixture of
// experts takes its near ties of two experts through several rounds.
func lfm2moeParityCases() []llamacppref.Case {
	var cases []llamacppref.Case
	for _, c := range lfm2ParityCases() {
		if c.Spec.Type != tensor.F32 && c.KVType != llamacppref.KVF16 {
			continue
		}
		c.Name = "lfm2moe" + c.Name[len("lfm2"):]
		c.Spec.Arch = "lfm2moe"
		c.Spec.DenseLayers = 2
		c.Spec.MoE = modelgen.MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 64}
		cases = append(cases, c)
	}
	return cases
}

// TestParityLFM2MoEWithLlamaCpp holds lfm2moe, lfm2's layers with a
// mixture of experts after the leading dense ones, to llama.cpp.
func TestParityLFM2MoEWithLlamaCpp(t *testing.T) {
	for _, r := range llamacppref.Check(t, lfm2moeParityCases(), loadParity) {
		t.Log(r)
	}
}
