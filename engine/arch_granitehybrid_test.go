package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// TestGraniteHybridLayers: the layers whose head_count_kv is 0 are
// Mamba-2, without attention; the others attend, unrotated where
// rope.scaling.finetuned is false (as Granite 4's files say) and rotated
// where it is true; the Mamba-2 shape is the ssm.* keys'; a split across
// workers and a device refuse the model, naming its Mamba-2 layers.
func TestGraniteHybridLayers(t *testing.T) {
	for _, rope := range []bool{false, true} {
		sp := graniteHybridSpec(tensor.F32)
		sp.Hybrid.Rope = rope
		m, err := Load(testmodel.GGUF(t, sp), LoadOptions{})
		require.NoError(t, err)
		c := m.Config()
		assert.Equal(t, SSMShape{ConvKernel: 4, InnerSize: 128, StateSize: 32, TimeStepRank: 8, GroupCount: 2}, c.SSM)
		assert.Equal(t, 2, c.KVHeads)
		for l := range c.Layers {
			spec := c.Layer(l)
			if l == 2 || l == 5 {
				assert.Equal(t, LayerAttention, spec.Kind, "layer %d", l)
				assert.Equal(t, !rope, spec.Attention.NoPE, "layer %d", l)
				assert.Equal(t, float32(0.0625), spec.Attention.Scale)
				continue
			}
			assert.Equal(t, LayerMamba2, spec.Kind, "layer %d", l)
			assert.True(t, spec.Kind.Recurrent())
			assert.Equal(t, float32(0.22), spec.ResidualScale, "layer %d", l)
		}
		assert.Equal(t, "mamba2", c.Layer(0).Kind.String())
		info := m.Info()
		assert.Equal(t, c.SSM, info.SSM)
		assert.Equal(t, float32(0.0625), info.AttentionScale)
		if rope {
			assert.Zero(t, info.NoRopeInterval)
		} else {
			assert.Equal(t, 1, info.NoRopeInterval, "no layer rotates")
		}
		// Neither a split across workers nor a device computes Mamba-2
		// layers: both refuse, saying why.
		err = m.SplitError()
		require.ErrorIs(t, err, ErrUnsupported)
		assert.ErrorContains(t, err, "Mamba-2")
		_, err = m.Cut(Part{})
		assert.ErrorContains(t, err, "Mamba-2")
		require.ErrorIs(t, m.DeviceSupports(), ErrUnsupported)
		assert.ErrorContains(t, m.DeviceSupports(), "mamba2")
	}
}

// TestGraniteHybridFileErrors: files llama.cpp would refuse, or that the
// engine cannot compute, are refused naming what is wrong.
func TestGraniteHybridFileErrors(t *testing.T) {
	base := testmodel.GGUF(t, graniteHybridSpec(tensor.F32))
	// edit is base with its metadata set (a nil value deletes the key),
	// without the tensor drop and with one more, extra, of the dims given.
	edit := func(kvs map[string]*gguf.Value, drop, extra string, dims ...uint64) []byte {
		f, err := gguf.Parse(base)
		require.NoError(t, err)
		b := gguf.NewBuilder()
		for _, kv := range f.KVs() {
			if _, ok := kvs[kv.Key]; !ok {
				b.Set(kv.Key, kv.Value)
			}
		}
		for k, v := range kvs {
			if v != nil {
				b.Set(k, *v)
			}
		}
		for _, ti := range f.Tensors() {
			if ti.Name != drop {
				b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
			}
		}
		if extra != "" {
			n := uint64(1)
			for _, d := range dims {
				n *= d
			}
			b.AddTensor(extra, tensor.F32, dims, make([]byte, 4*n))
		}
		data, err := b.Bytes()
		require.NoError(t, err)
		return data
	}
	val := func(v gguf.Value) *gguf.Value { return &v }
	kv := func(vals ...int32) *gguf.Value { return val(gguf.ArrayOf(vals)) }
	const key = "granitehybrid.attention.head_count_kv"
	tests := []struct {
		name string
		data []byte
		want string
		kind error
	}{
		{"head_count_kv of 5 layers", edit(map[string]*gguf.Value{key: kv(0, 0, 2, 0, 0)}, "", ""), "5 values for 6 layers", ErrFormat},
		{"kv heads differ", edit(map[string]*gguf.Value{key: kv(0, 0, 2, 0, 0, 1)}, "", ""), "layer 5 has 1 kv heads", ErrUnsupported},
		{"every layer Mamba-2", edit(map[string]*gguf.Value{key: kv(0, 0, 0, 0, 0, 0)}, "", ""), "no layer attends", ErrUnsupported},
		{"head_count_kv a string", edit(map[string]*gguf.Value{key: val(gguf.ValueOf("2"))}, "", ""), key, ErrFormat},
		{"no ssm.state_size", edit(map[string]*gguf.Value{"granitehybrid.ssm.state_size": nil}, "", ""), "ssm.state_size", ErrFormat},
		{"inner not twice the stream", edit(map[string]*gguf.Value{"granitehybrid.ssm.inner_size": val(gguf.ValueOf(uint32(64)))}, "", ""), "not twice", ErrUnsupported},
		{"groups not dividing the heads", edit(map[string]*gguf.Value{"granitehybrid.ssm.group_count": val(gguf.ValueOf(uint32(3)))}, "", ""), "the groups the heads", ErrFormat},
		{"a Mamba-2 layer without ssm_a", edit(nil, "blk.0.ssm_a", ""), "missing tensor blk.0.ssm_a", ErrFormat},
		{"an attention layer without attn_q", edit(nil, "blk.2.attn_q.weight", ""), "missing tensor blk.2.attn_q.weight", ErrFormat},
		{"queries in a Mamba-2 layer", edit(nil, "", "blk.0.attn_q.weight", 64, 64), "blk.0.attn_q.weight in layer 0, a mamba2 layer", ErrFormat},
		{"ssm_d in an attention layer", edit(nil, "", "blk.2.ssm_d", 1, 8), "blk.2.ssm_d in layer 2, a attention layer", ErrFormat},
		{"ssm_a of 1-D", edit(nil, "blk.0.ssm_a", "blk.0.ssm_a", 8), "blk.0.ssm_a has 1 dimensions, want 2", ErrFormat},
		{"conv1d transposed", edit(nil, "blk.1.ssm_conv1d.weight", "blk.1.ssm_conv1d.weight", 256, 4), "blk.1.ssm_conv1d.weight is 4×256, want 256×4", ErrFormat},
		{"an output bias", edit(nil, "", "blk.2.attn_output.bias", 64), "blk.2.attn_output.bias", ErrUnsupported},
		{"experts without expert_count", edit(nil, "", "blk.3.ffn_up_exps.weight", 64, 160, 4), "blk.3: experts' tensors in a model without expert_count", ErrFormat},
		{"expert_count without experts", edit(map[string]*gguf.Value{"granitehybrid.expert_count": val(gguf.ValueOf(uint32(4))),
			"granitehybrid.expert_used_count": val(gguf.ValueOf(uint32(2)))}, "", ""), "blk.0.ffn_up.weight: a model of 4 experts has no dense feed-forward", ErrFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.data, LoadOptions{})
			assert.ErrorIs(t, err, tt.kind)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// TestGraniteHybridPrefixRule: a session reuses its cache only when the
// cached tokens begin the new prompt (their Mamba-2 states cannot be
// rewound), and whatever it reuses or restarts, it generates the tokens a
// fresh session does: after a prompt that extends the conversation (the
// cached tokens not evaluated again), one that diverges from it, one
// shorter, and the same prompt again (each evaluated whole).
func TestGraniteHybridPrefixRule(t *testing.T) {
	m, err := Load(testmodel.GGUF(t, graniteHybridSpec(tensor.Q8_0)), LoadOptions{})
	require.NoError(t, err)
	generate := func(s *Session, prompt []int) Result {
		res, err := s.GenerateTokens(context.Background(), prompt, GenerateOptions{MaxTokens: 8}, nil)
		require.NoError(t, err)
		return res
	}
	fresh := func(prompt []int) []int {
		s, err := m.NewSession(SessionOptions{})
		require.NoError(t, err)
		return generate(s, prompt).Tokens
	}
	first := []int{5, 17, 300, 42, 42, 8, 99, 120, 7, 64}
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	res := generate(s, first)
	assert.Equal(t, fresh(first), res.Tokens)
	conversation := append(slices.Clone(first), res.Tokens...)
	for _, tt := range []struct {
		name   string
		prompt []int
		reuses bool // some cached tokens, not the whole prompt, are evaluated
	}{
		{"extends", append(slices.Clone(conversation), 11, 12), true},
		{"diverges", append(slices.Clone(first[:6]), 13, 14, 15), false},
		{"shorter", first[:4], false},
		{"same again", first[:4], false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := generate(s, tt.prompt)
			assert.Equal(t, fresh(tt.prompt), res.Tokens)
			if tt.reuses {
				assert.Less(t, res.Timings.PrefillTokens, 4)
			} else {
				assert.Equal(t, len(tt.prompt), res.Timings.PrefillTokens)
			}
		})
	}
}
