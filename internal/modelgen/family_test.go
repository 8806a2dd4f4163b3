package modelgen_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestFamilyFiles: each family's file holds the tensors and keys llama.cpp's
// converter writes for it: phi3's fused attn_qkv and ffn_up and its
// LongRoPE factors and keys, olmo2's post-norms and whole-vector q/k norms
// without pre-norms, the LlamaModel keys of smollm3 and granite, and
// granite's multipliers.
func TestFamilyFiles(t *testing.T) {
	shape := modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 64}
	long := []float32{1, 2, 4, 8, 16, 32}
	tests := []struct {
		name    string
		spec    modelgen.Spec
		tensors map[string][]uint64 // dims; nil: absent
		keys    map[string]any
	}{
		{"phi3 LongRoPE, partial rotary", modelgen.Spec{Arch: "phi3", Shape: shape, Family: modelgen.Family{RopeDims: 12,
			RopeOriginalContext: 16, RopeAttnFactor: 1.2, SlidingWindow: 2047, RopeFactorsLong: long, RopeFactorsShort: long}},
			map[string][]uint64{"blk.1.attn_qkv.weight": {64, 64 + 2*32}, "blk.1.ffn_up.weight": {64, 192}, "blk.1.ffn_gate.weight": nil,
				"blk.1.attn_q.weight": nil, "rope_factors_long.weight": {6}, "rope_factors_short.weight": {6}, "output.weight": nil},
			map[string]any{"phi3.rope.dimension_count": uint32(12), "phi3.rope.scaling.original_context_length": uint32(16),
				"phi3.rope.scaling.attn_factor": float32(1.2), "phi3.attention.sliding_window": uint32(2047)}},
		{"phi3 without LongRoPE", modelgen.Spec{Arch: "phi3", Shape: shape},
			map[string][]uint64{"rope_factors_long.weight": nil},
			map[string]any{"phi3.rope.dimension_count": uint32(16), "phi3.rope.scaling.original_context_length": uint32(64),
				"phi3.rope.scaling.attn_factor": nil, "phi3.attention.sliding_window": uint32(0)}},
		{"olmo2", modelgen.Spec{Arch: "olmo2", Shape: shape, SeparateOutput: true},
			map[string][]uint64{"blk.0.attn_q_norm.weight": {64}, "blk.0.attn_k_norm.weight": {32}, "blk.0.post_attention_norm.weight": {64},
				"blk.0.post_ffw_norm.weight": {64}, "blk.0.attn_norm.weight": nil, "blk.0.ffn_norm.weight": nil, "output.weight": {64, 300}},
			map[string]any{"olmo2.rope.dimension_count": nil}},
		{"smollm3", modelgen.Spec{Arch: "smollm3", Shape: shape},
			map[string][]uint64{"blk.0.attn_q.weight": {64, 64}, "blk.0.ffn_gate.weight": {64, 96}},
			map[string]any{"smollm3.rope.dimension_count": uint32(16), "smollm3.vocab_size": uint32(300)}},
		{"granite", modelgen.Spec{Arch: "granite", Shape: shape, Family: modelgen.Family{EmbeddingScale: 12, ResidualScale: 0.22, LogitScale: 8}},
			map[string][]uint64{"blk.0.attn_norm.weight": {64}},
			map[string]any{"granite.embedding_scale": float32(12), "granite.residual_scale": float32(0.22), "granite.logit_scale": float32(8),
				"granite.attention.scale": nil, "granite.rope.dimension_count": uint32(16)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := parse(t, tt.spec)
			for name, dims := range tt.tensors {
				ti, ok := f.Tensor(name)
				require.Equal(t, dims != nil, ok, name)
				if ok {
					assert.Equal(t, dims, ti.Dims, name)
				}
			}
			for key, want := range tt.keys {
				v, ok := f.Lookup(key)
				require.Equal(t, want != nil, ok, key)
				if ok {
					assert.Equal(t, want, v.Any(), key)
				}
			}
		})
	}
}

// TestFamilySpecErrors: specs the converter would never write are errors.
func TestFamilySpecErrors(t *testing.T) {
	shape := modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 1, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 64}
	for name, sp := range map[string]modelgen.Spec{
		"llama with partial rotary":   {Shape: shape, Family: modelgen.Family{RopeDims: 8}},
		"phi3 odd rotary":             {Arch: "phi3", Shape: shape, Family: modelgen.Family{RopeDims: 7}},
		"phi3 long factors alone":     {Arch: "phi3", Shape: shape, Family: modelgen.Family{RopeFactorsLong: make([]float32, 8)}},
		"phi3 factors of wrong size":  {Arch: "phi3", Shape: shape, Family: modelgen.Family{RopeFactorsLong: make([]float32, 4), RopeFactorsShort: make([]float32, 4)}},
		"granite without logit scale": {Arch: "granite", Shape: shape},
		"llama with a multiplier":     {Shape: shape, Family: modelgen.Family{LogitScale: 8}},
		"olmo2 tied":                  {Arch: "olmo2", Shape: shape},
	} {
		_, err := modelgen.Build(sp)
		assert.ErrorIs(t, err, modelgen.ErrSpec, name)
	}
}
