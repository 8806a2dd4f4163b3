package modelgen_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestGemmaFiles: gemma2 and gemma3 files hold what llama.cpp's converter
// writes for them: the keys (gemma2: soft-caps and window, no rope base;
// gemma3: rope base and window, a final soft-cap only when set),
// key_length and value_length, and each layer's post-norms (gemma3: q/k
// norms too), norm weights around 1; the output tied but for a gemma3
// with SeparateOutput.
func TestGemmaFiles(t *testing.T) {
	shape := modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 300, ContextLength: 32}
	tests := []struct {
		name    string
		spec    modelgen.Spec
		keys    map[string]any // key (after the arch's prefix) → value; nil: absent
		tensors int
	}{
		{"gemma2, Gemma 2's values", modelgen.Spec{Arch: "gemma2", Shape: shape, Seed: 1}, map[string]any{
			"attention.sliding_window": uint32(4096), "attn_logit_softcapping": float32(50), "final_logit_softcapping": float32(30),
			"rope.freq_base": nil, "attention.key_length": uint32(32), "attention.value_length": uint32(32),
		}, 1 + 2*(7+4) + 1},
		{"gemma2, its own", modelgen.Spec{Arch: "gemma2", Shape: shape, Seed: 1, RopeTheta: 500,
			Family: modelgen.Family{SlidingWindow: 16, AttnSoftCap: 2, FinalSoftCap: 3}}, map[string]any{
			"attention.sliding_window": uint32(16), "attn_logit_softcapping": float32(2), "final_logit_softcapping": float32(3),
			"rope.freq_base": float32(500),
		}, 1 + 2*(7+4) + 1},
		{"gemma3, Gemma-3-1B's values", modelgen.Spec{Arch: "gemma3", Shape: shape, Seed: 1}, map[string]any{
			"attention.sliding_window": uint32(512), "attn_logit_softcapping": nil, "final_logit_softcapping": nil,
			"rope.freq_base": float32(1e6), "attention.key_length": uint32(32),
		}, 1 + 2*(7+6) + 1},
		{"gemma3, a final soft-cap and an output", modelgen.Spec{Arch: "gemma3", Shape: shape, Seed: 1, SeparateOutput: true,
			Family: modelgen.Family{SlidingWindow: 8, FinalSoftCap: 10}}, map[string]any{
			"attention.sliding_window": uint32(8), "final_logit_softcapping": float32(10),
		}, 1 + 2*(7+6) + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := parse(t, tt.spec)
			for key, want := range tt.keys {
				v, ok := f.Lookup(tt.spec.Arch + "." + key)
				if want == nil {
					assert.False(t, ok, key)
					continue
				}
				require.True(t, ok, key)
				assert.Equal(t, want, v.Any(), key)
			}
			assert.Len(t, f.Tensors(), tt.tensors)
			for _, name := range []string{"blk.1.post_attention_norm.weight", "blk.1.post_ffw_norm.weight"} {
				ti, ok := f.Tensor(name)
				require.True(t, ok, name)
				assert.Equal(t, []uint64{64}, ti.Dims)
				var mean float64
				for _, v := range tensor.Float32s(ti.Data) {
					mean += float64(v) / 64
				}
				assert.InDelta(t, 1, mean, 0.02, "%s: the converter's 1 + w", name)
			}
			_, qNorm := f.Tensor("blk.0.attn_q_norm.weight")
			assert.Equal(t, tt.spec.Arch == "gemma3", qNorm)
			_, output := f.Tensor("output.weight")
			assert.Equal(t, tt.spec.SeparateOutput, output)

			data, err := modelgen.Build(tt.spec)
			require.NoError(t, err)
			m, err := engine.Load(data, engine.LoadOptions{})
			require.NoError(t, err)
			assert.Equal(t, tt.spec.Arch, m.Architecture())
		})
	}
}

// TestGemmaSpecErrors: what llama.cpp would refuse, or a gemma field on
// another architecture, is an ErrSpec error.
func TestGemmaSpecErrors(t *testing.T) {
	shape := modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 32}
	for name, sp := range map[string]modelgen.Spec{
		"gemma2 with an output":        {Arch: "gemma2", Shape: shape, SeparateOutput: true},
		"gemma3 with attention caps":   {Arch: "gemma3", Shape: shape, Family: modelgen.Family{AttnSoftCap: 50}},
		"a window on llama":            {Shape: shape, Family: modelgen.Family{SlidingWindow: 16}},
		"a negative window":            {Arch: "gemma3", Shape: shape, Family: modelgen.Family{SlidingWindow: -1}},
		"a soft-cap that is not a cap": {Arch: "gemma2", Shape: shape, Family: modelgen.Family{FinalSoftCap: -3}},
	} {
		_, err := modelgen.Build(sp)
		assert.ErrorIs(t, err, modelgen.ErrSpec, name)
	}
}
