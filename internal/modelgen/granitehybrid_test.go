package modelgen_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// graniteHybrid is a small granitehybrid spec: Mamba-2 but for layer 1,
// which attends; with experts, every feed-forward a mixture of them.
func graniteHybrid(moe bool) modelgen.Spec {
	sp := modelgen.Spec{Arch: "granitehybrid", Type: tensor.Q8_0,
		Shape:  modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 3, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 64},
		Hybrid: &modelgen.GraniteHybrid{Attention: []int{1}, ConvKernel: 4, StateSize: 16, Groups: 2, Heads: 8}}
	if moe {
		sp.MoE = modelgen.MoE{Experts: 4, ExpertsUsed: 2, SharedHiddenDim: 32}
	}
	return sp
}

// TestGraniteHybridFile: the file holds what llama.cpp's converter writes
// for Granite 4's hybrids: head_count_kv as an array with 0 for each
// Mamba-2 layer, the ssm.* keys, rope.scaling.finetuned false; a Mamba-2
// layer's tensors, the small ones F32 whatever the type (ssm_a and ssm_d
// as [1, heads], ssm_norm by groups), an attention layer's q, k, v and
// output only; with experts, the router (F32) and the stacked experts in
// place of the dense feed-forward, and a shared expert without a gate.
func TestGraniteHybridFile(t *testing.T) {
	for _, moe := range []bool{false, true} {
		data, err := modelgen.Build(graniteHybrid(moe))
		require.NoError(t, err)
		f, err := gguf.Parse(data)
		require.NoError(t, err)
		kv, ok := f.Lookup("granitehybrid.attention.head_count_kv")
		require.True(t, ok)
		heads, _ := kv.Int32s()
		assert.Equal(t, []int32{0, 2, 0}, heads)
		for key, want := range map[string]uint32{"ssm.conv_kernel": 4, "ssm.state_size": 16, "ssm.group_count": 2,
			"ssm.inner_size": 128, "ssm.time_step_rank": 8} {
			got, err := f.Uint32("granitehybrid." + key)
			require.NoError(t, err, key)
			assert.Equal(t, want, got, key)
		}
		rope, err := f.Bool("granitehybrid.rope.scaling.finetuned")
		require.NoError(t, err)
		assert.False(t, rope)
		for name, want := range map[string]struct {
			dims []uint64
			typ  tensor.Type
		}{
			"blk.0.ssm_in.weight":     {[]uint64{64, 128 + 192 + 8}, tensor.Q8_0},
			"blk.0.ssm_conv1d.weight": {[]uint64{4, 192}, tensor.F32},
			"blk.0.ssm_a":             {[]uint64{1, 8}, tensor.F32},
			"blk.0.ssm_d":             {[]uint64{1, 8}, tensor.F32},
			"blk.0.ssm_norm.weight":   {[]uint64{64, 2}, tensor.F32},
			"blk.0.ssm_out.weight":    {[]uint64{128, 64}, tensor.Q8_0},
			"blk.1.attn_q.weight":     {[]uint64{64, 64}, tensor.Q8_0},
		} {
			ti, ok := f.Tensor(name)
			require.True(t, ok, name)
			assert.Equal(t, want.dims, ti.Dims, name)
			assert.Equal(t, want.typ, ti.Type, name)
		}
		for _, absent := range []string{"blk.0.attn_q.weight", "blk.1.ssm_in.weight", "blk.0.ffn_gate_inp_shexp.weight"} {
			_, ok := f.Tensor(absent)
			assert.False(t, ok, absent)
		}
		_, dense := f.Tensor("blk.2.ffn_up.weight")
		_, experts := f.Tensor("blk.2.ffn_up_exps.weight")
		_, shared := f.Tensor("blk.2.ffn_up_shexp.weight")
		assert.Equal(t, !moe, dense)
		assert.Equal(t, moe, experts)
		assert.Equal(t, moe, shared)
		if moe {
			router, _ := f.Tensor("blk.2.ffn_gate_inp.weight")
			assert.Equal(t, tensor.F32, router.Type)
			n, err := f.Uint32("granitehybrid.expert_shared_feed_forward_length")
			require.NoError(t, err)
			assert.Equal(t, uint32(32), n)
		}
	}
}

// TestGraniteHybridSpecErrors: specs llama.cpp could not load, or that are
// not Granite 4's, are refused.
func TestGraniteHybridSpecErrors(t *testing.T) {
	for name, edit := range map[string]func(*modelgen.Spec){
		"no Hybrid":                        func(sp *modelgen.Spec) { sp.Hybrid = nil },
		"Hybrid on llama":                  func(sp *modelgen.Spec) { sp.Arch = "llama" },
		"no attention layer":               func(sp *modelgen.Spec) { sp.Hybrid.Attention = nil },
		"attention layer past the last":    func(sp *modelgen.Spec) { sp.Hybrid.Attention = []int{3} },
		"heads not dividing inner":         func(sp *modelgen.Spec) { sp.Hybrid.Heads = 7 },
		"groups not dividing the heads":    func(sp *modelgen.Spec) { sp.Hybrid.Groups = 3 },
		"no state":                         func(sp *modelgen.Spec) { sp.Hybrid.StateSize = 0 },
		"experts of another width":         func(sp *modelgen.Spec) { sp.MoE = modelgen.MoE{Experts: 4, ExpertsUsed: 2, ExpertHiddenDim: 32} },
		"more experts used than there are": func(sp *modelgen.Spec) { sp.MoE = modelgen.MoE{Experts: 2, ExpertsUsed: 3} },
	} {
		t.Run(name, func(t *testing.T) {
			sp := graniteHybrid(false)
			h := *sp.Hybrid
			sp.Hybrid = &h
			edit(&sp)
			_, err := modelgen.Build(sp)
			assert.ErrorIs(t, err, modelgen.ErrSpec)
		})
	}
}
