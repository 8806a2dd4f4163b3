//go:build !js

package engine

import (
	"testing"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestGemma4KeysAsLlamaCpp: what the engine does with the gemma4 keys
// whose reading the parity models do not vary is llama.cpp's, as
// checkKeysAsLlamaCpp holds the gemma keys: a model with the key written
// (or left out) evaluated after a prompt of 61 tokens, past its window of
// 8, by llama.cpp and by the engine, which must agree (its output weak,
// OutputStd 0.05, so that the distribution is flat and every logit shows
// in it; stronger where a soft-cap of 30 must show, which makes it more
// chaotic: measured 2.4e-5, hence its tolerance of 5e-5); and the engine
// reading the key otherwise must not, or the model was not telling the
// two apart.
func TestGemma4KeysAsLlamaCpp(t *testing.T) {
	runner := llamacppref.Need(t)
	spec := func(edit func(sp *modelgen.Spec)) modelgen.Spec {
		sp := gemma4Spec(tensor.F32)
		sp.OutputStd = 0.05 // a flat distribution: every logit shows in it
		if edit != nil {
			edit(&sp)
		}
		return sp
	}
	// sliding reads the keys as the engine does, then edits the sliding
	// layers' attention.
	sliding := func(edit func(a *AttentionSpec)) func(*hyperParams) {
		return func(p *hyperParams) {
			each := p.layers.each
			p.layers.each = func(l int, s *LayerSpec) {
				each(l, s)
				if s.Attention.Window > 0 {
					edit(&s.Attention)
				}
			}
		}
	}
	tests := []keyCase{
		{name: "gemma4", spec: spec(nil)},
		{name: "rope.freq_base_swa", spec: spec(nil), set: map[string]gguf.Value{"gemma4.rope.freq_base_swa": gguf.ValueOf(float32(500))},
			other: sliding(func(a *AttentionSpec) { a.RopeTheta = 10000 })},
		{name: "without rope.freq_base_swa: 10000", spec: spec(nil), other: sliding(func(a *AttentionSpec) { a.RopeTheta = 0 })},
		{name: "linear rope scaling: the full layers only", spec: spec(nil),
			set:   map[string]gguf.Value{"gemma4.rope.scaling.type": gguf.ValueOf("linear"), "gemma4.rope.scaling.factor": gguf.ValueOf(float32(4))},
			other: sliding(func(a *AttentionSpec) { a.RopeScale = 0 })},
		{name: "final_logit_softcapping", spec: spec(func(sp *modelgen.Spec) { sp.FinalSoftCap = 0.5 }),
			other: func(p *hyperParams) { p.FinalSoftCap = 0 }},
		{name: "without final_logit_softcapping: 30", spec: spec(func(sp *modelgen.Spec) { sp.OutputStd = 0.3 }), drop: "gemma4.final_logit_softcapping",
			other: func(p *hyperParams) { p.FinalSoftCap = 0 }, tolerance: 5e-5},
		{name: "the sliding layers without rope_freqs", spec: spec(nil), other: sliding(func(a *AttentionSpec) { a.NoRopeFactors = false })},
	}
	checkKeysAsLlamaCpp(t, runner, tests)
}
