package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// qwen35Shape is the Qwen3.5 of the tests and the parity cases: 8
// layers, of which 3 and 7 attend (full_attention_interval 4) and the
// others are Gated DeltaNet layers; attention heads twice as wide as
// dim/heads (4 of 32 over a 64-wide stream), a quarter of each rotated (8
// dimensions); DeltaNet heads of 32, 4 value heads over 2 query and key
// heads (each key head read by two value heads), a convolution over 4
// positions.
var qwen35Shape = modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 8, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 384, ContextLength: 128}

// qwen35Spec is a small qwen35 model (the parity cases' shape) of type typ.
func qwen35Spec(typ tensor.Type) modelgen.Spec {
	return modelgen.Spec{Arch: "qwen35", Shape: qwen35Shape, Type: typ, Seed: 3, Std: 0.1, OutputStd: 0.5, SeparateOutput: true}
}

func loadQwen35(t testing.TB, typ tensor.Type) *Model {
	t.Helper()
	m, err := Load(testmodel.GGUF(t, qwen35Spec(typ)), LoadOptions{})
	require.NoError(t, err)
	return m
}

// TestQwen35Layers: the file's layers are Gated DeltaNet layers but every
// full_attention_interval-th, which attends (gated, q/k norms, partial
// rotary); the recurrent state is the DeltaNet layers' convolution and
// matrices, float32; the KV cache the attention layers' alone.
func TestQwen35Layers(t *testing.T) {
	m := loadQwen35(t, tensor.F32)
	c := m.Config()
	for l := range c.Layers {
		spec := c.Layer(l)
		if l == 3 || l == 7 {
			assert.Equal(t, LayerAttention, spec.Kind, "layer %d", l)
			assert.True(t, spec.Attention.Gated, "layer %d", l)
			assert.Equal(t, QKNormHeads, spec.QKNorm, "layer %d", l)
		} else {
			assert.Equal(t, LayerDeltaNet, spec.Kind, "layer %d", l)
		}
	}
	assert.Equal(t, 8, c.RotaryDims())
	assert.Equal(t, SSMShape{ConvKernel: 4, InnerSize: 128, StateSize: 32, TimeStepRank: 4, GroupCount: 2}, c.SSM)
	// 6 DeltaNet layers: 3 positions of 2·64+128 channels, 4 heads of 32×32.
	assert.Equal(t, int64(6*4*(3*256+4*32*32)), c.RecurrentStateBytes())
	assert.Equal(t, int64(2*2*128*c.KVDim()*4), c.KVCacheBytes(128, KVF32))
	info := m.Info()
	assert.Equal(t, c.SSM, info.SSM)
	assert.Equal(t, c.RecurrentStateBytes(), info.RecurrentStateBytes)
	// Neither a split across workers nor a device computes DeltaNet
	// layers: both refuse, saying why.
	err := m.SplitError()
	require.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "Gated DeltaNet")
	require.ErrorIs(t, m.DeviceSupports(), ErrUnsupported)
	assert.ErrorContains(t, m.DeviceSupports(), "deltanet")
}

// qwen35moeSpec is a small qwen35moe model: qwen35Spec's shape, 4 layers,
// 8 experts of which a token takes 2, and a shared expert.
func qwen35moeSpec(typ tensor.Type) modelgen.Spec {
	sp := qwen35Spec(typ)
	sp.Arch, sp.Layers = "qwen35moe", 4
	sp.MoE = modelgen.MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 32, SharedHiddenDim: 64}
	return sp
}

func loadQwen35MoE(t testing.TB, typ tensor.Type) *Model {
	t.Helper()
	m, err := Load(testmodel.GGUF(t, qwen35moeSpec(typ)), LoadOptions{})
	require.NoError(t, err)
	return m
}

// TestQwen35BlockMatchesTokens: a prompt evaluated in blocks (of 32, then
// 9) leaves the logits and every recurrent layer's state its tokens one by
// one leave, bit for bit, in F32 and Q8_0, for qwen35 and qwen35moe (whose
// blocks also group their tokens by expert).
func TestQwen35BlockMatchesTokens(t *testing.T) {
	for _, sp := range []modelgen.Spec{qwen35Spec(tensor.F32), qwen35Spec(tensor.Q8_0), qwen35moeSpec(tensor.F32), qwen35moeSpec(tensor.Q8_0)} {
		typ := fmt.Sprintf("%s %v", sp.Arch, sp.Type)
		m, err := Load(testmodel.GGUF(t, sp), LoadOptions{})
		require.NoError(t, err)
		prompt := make([]int, 41)
		for i := range prompt {
			prompt[i] = 3 + (i*37)%300
		}
		block, err := m.NewSession(SessionOptions{PromptBlock: 32})
		require.NoError(t, err)
		require.NoError(t, block.forwardBlock(prompt[:32], 0, false))
		require.NoError(t, block.forwardBlock(prompt[32:], 32, true))
		tokens := newSession(t, m)
		for pos, tok := range prompt {
			require.NoError(t, tokens.forward(tok, pos, pos == len(prompt)-1))
		}
		require.Equal(t, tokens.Logits(), block.Logits(), "%v logits", typ)
		for l := range m.Config().Layers {
			require.Equal(t, tokens.rec.conv[l], block.rec.conv[l], "%v layer %d convolution state", typ, l)
			require.Equal(t, tokens.rec.ssm[l], block.rec.ssm[l], "%v layer %d matrices", typ, l)
		}
	}
}

// TestQwen35PrefixRule: a session that generated after one prompt gives,
// after a prompt that diverges from it, and after one that extends its
// conversation, exactly the tokens and logits a fresh session gives.
func TestQwen35PrefixRule(t *testing.T) {
	m := loadQwen35(t, tensor.F32)
	greedy := GenerateOptions{MaxTokens: 6} // greedy
	run := func(s *Session, prompt []int) ([]int, []float32) {
		res, err := s.GenerateTokens(context.Background(), prompt, greedy, nil)
		require.NoError(t, err)
		return res.Tokens, append([]float32(nil), s.Logits()...)
	}
	s := newSession(t, m)
	first, _ := run(s, []int{5, 9, 14, 20, 33})
	extended := append(append([]int{5, 9, 14, 20, 33}, first...), 40, 41)
	for _, prompt := range [][]int{
		{5, 9, 14, 77, 78, 79}, // diverges at its fourth token
		{5, 9, 14, 77, 78, 79, 80},
		{5, 9}, // shorter than the conversation
	} {
		got, gotLogits := run(s, prompt)
		want, wantLogits := run(newSession(t, m), prompt)
		require.Equal(t, want, got, "after %v", prompt)
		require.Equal(t, wantLogits, gotLogits, "after %v", prompt)
	}
	s = newSession(t, m)
	run(s, []int{5, 9, 14, 20, 33})
	got, gotLogits := run(s, extended)
	want, wantLogits := run(newSession(t, m), extended)
	require.Equal(t, want, got, "extending the conversation")
	require.Equal(t, wantLogits, gotLogits, "extending the conversation")
}

// TestQwen35Keys: what the engine reads of a qwen35 file's keys and what
// it refuses, each on modelgen's file with one key changed.
func TestQwen35Keys(t *testing.T) {
	data := testmodel.GGUF(t, qwen35Spec(tensor.F32))
	for _, tc := range []struct {
		name  string
		key   string
		value gguf.Value
		want  error          // nil: loads
		check func(c Config) // what loaded
	}{
		{name: "full_attention_interval 2: every other layer attends", key: "qwen35.full_attention_interval", value: gguf.ValueOf(uint32(2)),
			want: ErrFormat}, // the file's layers are laid out for 4: layer 1 has no attn_q
		{name: "rope sections leaving a pair unturned", key: "qwen35.rope.dimension_sections", value: gguf.ArrayOf([]int32{1, 1, 1, 1}),
			want: ErrUnsupported},
		{name: "rope sections of Qwen3.5's sizes", key: "qwen35.rope.dimension_sections", value: gguf.ArrayOf([]int32{11, 11, 10, 0}),
			check: func(c Config) { assert.Equal(t, 8, c.RotaryDims()) }},
		{name: "recurrent layers listed", key: "qwen35.attention.recurrent_layers", value: gguf.ArrayOf([]int32{1, 1, 1, 0, 1, 1, 1, 0}),
			want: ErrUnsupported},
		{name: "inner size not heads × state", key: "qwen35.ssm.inner_size", value: gguf.ValueOf(uint32(96)), want: ErrFormat},
		{name: "value heads not a multiple of key heads", key: "qwen35.ssm.group_count", value: gguf.ValueOf(uint32(3)), want: ErrFormat},
		{name: "a prediction layer: block_count counts it", key: "qwen35.nextn_predict_layers", value: gguf.ValueOf(uint32(1)),
			check: func(c Config) { assert.Equal(t, 7, c.Layers) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := modelgen.SetKV(data, tc.key, tc.value)
			require.NoError(t, err)
			m, err := Load(b, LoadOptions{})
			if tc.want != nil {
				require.True(t, errors.Is(err, tc.want), "got %v, want %v", err, tc.want)
				return
			}
			require.NoError(t, err)
			tc.check(m.Config())
		})
	}
}

// TestSplitQueryGate: gated attention's products, each head's queries
// then its gate, come apart into the queries and the gates, and the output
// is multiplied by σ(gate).
func TestSplitQueryGate(t *testing.T) {
	// 2 tokens, 2 heads of 2: q00 q01 g00 g01 q10 q11 g10 g11, per token.
	qg := []float32{1, 2, 10, 20, 3, 4, 30, 40, 5, 6, 50, 60, 7, 8, 70, 80}
	gate := make([]float32, 8)
	splitQueryGate(qg, gate, 2, 2)
	assert.Equal(t, []float32{1, 2, 3, 4, 5, 6, 7, 8}, qg[:8])
	assert.Equal(t, []float32{10, 20, 30, 40, 50, 60, 70, 80}, gate)
	attn := []float32{2, 2}
	gateOutput(attn, []float32{0, float32(math.Log(3))})
	assert.InDelta(t, 1, attn[0], 1e-7)
	assert.InDelta(t, 1.5, attn[1], 1e-6)
}
