//go:build !js

package engine

import (
	"fmt"
	"testing"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestParityMoEWithLlamaCpp checks the mixtures of experts against
// llama.cpp as TestParityWithLlamaCpp checks the other families: small
// random models in F32 (F32 cache) and Q8_0 (F32 and F16 caches), 3
// prompts continued greedily for 64 tokens, llama.cpp's 10 most probable
// tokens' probabilities at every step. qwen3moe: qwen3's attention (heads
// twice dim/heads wide) and in each layer 8 experts of which each token
// takes 2; a second model of 3 layers takes 4 of 16, so that tokens share
// few experts and prompts spread over all of them. qwen2moe: qwen2's
// attention (q/k/v biases) and 2 of 8 experts, their weights not
// renormalised, beside a shared expert gated by a sigmoid.
func TestParityMoEWithLlamaCpp(t *testing.T) {
	llamacppref.Check(t, moeParityCases(), loadParity)
}

// moeParityCases are TestParityMoEWithLlamaCpp's cases.
func moeParityCases() []llamacppref.Case {
	shape := modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 384, ContextLength: 128}
	three := shape
	three.Layers = 3
	qwen2 := shape // heads of dim/heads
	qwen2.HeadDim = 0
	var cases []llamacppref.Case
	for _, a := range []struct {
		name, arch string
		shape      modelgen.Shape
		moe        modelgen.MoE
	}{
		{"qwen3moe", "qwen3moe", shape, modelgen.MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 64}},
		{"qwen3moe-16", "qwen3moe", three, modelgen.MoE{Experts: 16, ExpertsUsed: 4, ExpertHiddenDim: 32}},
		{"qwen2moe", "qwen2moe", qwen2, modelgen.MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 32, SharedHiddenDim: 96}},
	} {
		cases = append(cases, parityRuns(a.name, modelgen.Spec{Arch: a.arch, Shape: a.shape, MoE: a.moe, Std: 0.1, OutputStd: 0.5})...)
	}
	for i := range cases {
		cases[i].RoundingTolerance = moeRoundingTolerance
	}
	return cases
}

// moeRoundingTolerance is llamacppref.DefaultRoundingTolerance raised for
// the experts' router: where two experts' router logits are within
// rounding of a tie, a rounded value that lands the other way picks the
// other expert, and the step moves more than attention alone moves it.
// llama.cpp's own sums depend on the CPU it runs on: qwen3moe-16 in Q8_0
// differs by up to 5e-2 on an AVX-512 Xeon and by 5.9e-2 on an AVX2 EPYC.
const moeRoundingTolerance = 7e-2

// parityRuns are a family's three parity cases of the model sp: F32
// weights with an F32 cache, Q8_0 weights with an F32 and an F16 cache,
// each with seed 14, a separate output and BOS and EOS muted.
func parityRuns(name string, sp modelgen.Spec) []llamacppref.Case {
	var cases []llamacppref.Case
	for _, c := range []struct {
		typ tensor.Type
		kv  llamacppref.KVType
	}{{tensor.F32, llamacppref.KVF32}, {tensor.Q8_0, llamacppref.KVF32}, {tensor.Q8_0, llamacppref.KVF16}} {
		sp.Type, sp.Seed, sp.SeparateOutput, sp.MuteSpecial = c.typ, 14, true, true
		cases = append(cases, llamacppref.Case{Name: fmt.Sprintf("%s-%v-kv%s", name, c.typ, c.kv), KVType: c.kv, Spec: sp})
	}
	return cases
}
