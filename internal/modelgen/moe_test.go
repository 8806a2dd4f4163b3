package modelgen

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// TestMoESpecs: a mixture of experts' spec is checked against its
// architecture, and its file holds the experts as 3-D tensors, the router
// in F32, and the keys llama.cpp reads.
func TestMoESpecs(t *testing.T) {
	sh := Shape{Dim: 64, HiddenDim: 96, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 64}
	moe := MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 32}
	shared := moe
	shared.SharedHiddenDim = 48
	for _, tt := range []struct {
		name string
		spec Spec
		ok   bool
	}{
		{"qwen3moe", Spec{Arch: "qwen3moe", Shape: sh, MoE: moe, Type: tensor.Q8_0}, true},
		{"qwen2moe", Spec{Arch: "qwen2moe", Shape: sh, MoE: shared, SeparateOutput: true}, true},
		{"experts in llama", Spec{Shape: sh, MoE: moe}, false},
		{"qwen3moe without experts", Spec{Arch: "qwen3moe", Shape: sh}, false},
		{"more used than experts", Spec{Arch: "qwen3moe", Shape: sh, MoE: MoE{Experts: 2, ExpertsUsed: 3, ExpertHiddenDim: 32}}, false},
		{"qwen3moe with a shared expert", Spec{Arch: "qwen3moe", Shape: sh, MoE: shared}, false},
		{"qwen2moe without a shared expert", Spec{Arch: "qwen2moe", Shape: sh, MoE: moe, SeparateOutput: true}, false},
		{"qwen2moe tied output", Spec{Arch: "qwen2moe", Shape: sh, MoE: shared}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := Build(tt.spec)
			if !tt.ok {
				assert.ErrorIs(t, err, ErrSpec)
				return
			}
			require.NoError(t, err)
			f, err := gguf.Parse(data)
			require.NoError(t, err)
			n, err := f.Uint32(tt.spec.Arch + ".expert_count")
			require.NoError(t, err)
			assert.Equal(t, uint32(8), n)
			up, ok := f.Tensor("blk.1.ffn_up_exps.weight")
			require.True(t, ok)
			assert.Equal(t, []uint64{64, 32, 8}, up.Dims)
			assert.Equal(t, tt.spec.Type, up.Type)
			router, ok := f.Tensor("blk.0.ffn_gate_inp.weight")
			require.True(t, ok)
			assert.Equal(t, []uint64{64, 8}, router.Dims)
			assert.Equal(t, tensor.F32, router.Type, "llama-quantize leaves routers F32")
			_, ok = f.Tensor("blk.0.ffn_gate_inp_shexp.weight")
			assert.Equal(t, tt.spec.SharedHiddenDim > 0, ok)
		})
	}
}

// TestGemma4MoESpecs: a gemma4 with experts writes them as the converter
// does (the gate and up in one stack, the router's input scale, the
// experts' norms and output scales) in every layer but DenseLayers, and
// the Gemma4 fields of experts need experts.
func TestGemma4MoESpecs(t *testing.T) {
	sh := Shape{Dim: 64, HiddenDim: 96, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 16, VocabSize: 300, ContextLength: 64}
	moe := MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 32}
	for _, tt := range []struct {
		name   string
		moe    MoE
		gemma4 Gemma4
		ok     bool
	}{
		{"experts but in layer 1", moe, Gemma4{DenseLayers: []int{1}}, true},
		{"gate and up apart", moe, Gemma4{SeparateGateUp: true}, true},
		{"dense layers without experts", MoE{}, Gemma4{DenseLayers: []int{1}}, false},
		{"a dense layer past the last", moe, Gemma4{DenseLayers: []int{3}}, false},
		{"a shared expert", MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 32, SharedHiddenDim: 32}, Gemma4{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.gemma4
			data, err := Build(Spec{Arch: "gemma4", Shape: sh, MoE: tt.moe, Gemma4: &g, Family: Family{SlidingWindow: 8}})
			if !tt.ok {
				assert.ErrorIs(t, err, ErrSpec)
				return
			}
			require.NoError(t, err)
			f, err := gguf.Parse(data)
			require.NoError(t, err)
			n, err := f.Uint32("gemma4.expert_count")
			require.NoError(t, err)
			assert.Equal(t, uint32(8), n)
			for l := range sh.Layers {
				has := func(name string) bool {
					_, ok := f.Tensor(fmt.Sprintf("blk.%d.%s", l, name))
					return ok
				}
				experts := !slices.Contains(g.DenseLayers, l)
				for _, name := range []string{"ffn_gate_inp.weight", "ffn_gate_inp.scale", "pre_ffw_norm_2.weight", "post_ffw_norm_1.weight",
					"post_ffw_norm_2.weight", "ffn_down_exps.weight", "ffn_down_exps.scale"} {
					assert.Equal(t, experts, has(name), "layer %d: %s", l, name)
				}
				assert.Equal(t, experts && !g.SeparateGateUp, has("ffn_gate_up_exps.weight"), "layer %d", l)
				assert.Equal(t, experts && g.SeparateGateUp, has("ffn_gate_exps.weight") && has("ffn_up_exps.weight"), "layer %d", l)
				assert.True(t, has("ffn_gate.weight"), "layer %d keeps its dense feed-forward", l)
			}
			if gu, ok := f.Tensor("blk.0.ffn_gate_up_exps.weight"); ok {
				assert.Equal(t, []uint64{64, 64, 8}, gu.Dims)
			}
		})
	}
}
