package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/race"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// lfm2Spec is a small lfm2 model: 5 layers, attention at 1 and 4 and short
// convolutions (kernel 3) at 0, 2 and 3.
func lfm2Spec(typ tensor.Type, seed uint64) modelgen.Spec {
	return modelgen.Spec{Arch: "lfm2", Shape: modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 5, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 128},
		Family: modelgen.Family{AttentionLayers: []int{1, 4}}, Type: typ, Seed: seed, Std: 0.1, OutputStd: 0.5, SeparateOutput: true, MuteSpecial: true}
}

// lfm2moeSpec is lfm2Spec as lfm2moe: layers 0 and 1 dense, the others
// 8 experts of 64 units, 2 for each token.
func lfm2moeSpec(typ tensor.Type, seed uint64) modelgen.Spec {
	sp := lfm2Spec(typ, seed)
	sp.Arch, sp.DenseLayers, sp.MoE = "lfm2moe", 2, modelgen.MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 64}
	return sp
}

func loadLFM2(t testing.TB, typ tensor.Type) *Model {
	t.Helper()
	m, err := Load(testmodel.GGUF(t, lfm2Spec(typ, 21)), LoadOptions{})
	require.NoError(t, err)
	return m
}

// randomPrompt is n ids past the control tokens, the same for a seed.
func randomPrompt(seed uint64, n, vocab int) []int {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := make([]int, n)
	for i := range p {
		p[i] = 3 + rng.IntN(vocab-3)
	}
	return p
}

// TestLFM2PromptBlocksAreBitIdentical: an lfm2 (and lfm2moe) prompt
// evaluated in blocks leaves, bit for bit, the logits, the KV cache of the
// attention layers and the short convolutions' state that token by token
// leaves.
func TestLFM2PromptBlocksAreBitIdentical(t *testing.T) {
	moe, err := Load(testmodel.GGUF(t, lfm2moeSpec(tensor.Q8_0, 22)), LoadOptions{})
	require.NoError(t, err)
	models := map[string]*Model{"lfm2 F32": loadLFM2(t, tensor.F32), "lfm2 Q8_0": loadLFM2(t, tensor.Q8_0), "lfm2moe Q8_0": moe}
	for typ, m := range models {
		prompt := randomPrompt(1, 70, m.config.VocabSize)
		for _, kv := range []KVType{KVF32, KVF16} {
			ref := prefilled(t, m, kv, 1, prompt)
			for _, block := range []int{2, 7, 32, 64} {
				s := prefilled(t, m, kv, block, prompt)
				requireSameBits(t, ref.logits, s.logits, "%v %v block %d: logits", typ, kv, block)
				requireSameBits(t, ref.kv.k, s.kv.k, "%v %v block %d: keys", typ, kv, block)
				requireSameBits(t, ref.kv.v, s.kv.v, "%v %v block %d: values", typ, kv, block)
				assert.Equal(t, ref.kv.k16, s.kv.k16, "%v %v block %d: F16 keys", typ, kv, block)
				for l := range ref.rec.conv {
					requireSameBits(t, ref.rec.conv[l], s.rec.conv[l], "%v %v block %d: layer %d's state", typ, kv, block, l)
				}
			}
		}
	}
}

// TestLFM2PrefixRule: a session of a hybrid model reuses its cache for a
// prompt that extends it (evaluating only the new tokens) and starts over
// for one that diverges from it, is shorter or is the same; each gives
// the tokens a fresh session gives. A Forward at a position its state has
// not reached is an error naming the position.
func TestLFM2PrefixRule(t *testing.T) {
	m := loadLFM2(t, tensor.Q8_0)
	opts := GenerateOptions{MaxTokens: 8}
	fresh := func(prompt []int) []int {
		s := newSession(t, m)
		res, err := s.GenerateTokens(context.Background(), prompt, opts, nil)
		require.NoError(t, err)
		return res.Tokens
	}
	first := randomPrompt(2, 20, m.config.VocabSize)
	s := newSession(t, m)
	res, err := s.GenerateTokens(context.Background(), first, opts, nil)
	require.NoError(t, err)
	conversation := append(append([]int(nil), first...), res.Tokens[:len(res.Tokens)-1]...) // the last token is not evaluated yet
	for _, tc := range []struct {
		name    string
		prompt  []int
		prefill int // tokens evaluated
	}{
		{"extends the conversation", append(append([]int(nil), conversation...), 7, 8, 9), 3},
		{"diverges", append(append([]int(nil), first[:10]...), 11, 12), 12},
		{"shorter", first[:15], 15},
		{"the same", first[:15], 15},
	} {
		res, err := s.GenerateTokens(context.Background(), tc.prompt, opts, nil)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.prefill, res.Timings.PrefillTokens, "%s: prompt tokens evaluated", tc.name)
		assert.Equal(t, fresh(tc.prompt), res.Tokens, "%s: the tokens of a fresh session", tc.name)
	}
	require.NoError(t, s.Forward(5, 0, false))
	require.NoError(t, s.Forward(6, 1, true))
	var oe *OptionError
	require.True(t, errors.As(s.Forward(7, 5, true), &oe), "a Forward past the state's position")
	assert.Equal(t, "position", oe.Field)
}

// TestLFM2DecodeStepAllocatesNothing: a decode step of a hybrid model
// allocates nothing, its state and scratch allocated once.
func TestLFM2DecodeStepAllocatesNothing(t *testing.T) {
	race.SkipAllocationCount(t)
	m := loadLFM2(t, tensor.Q8_0)
	for _, kv := range []KVType{KVF32, KVF16} {
		s := newSessionKV(t, m, kv)
		pos := 0
		allocs := testing.AllocsPerRun(50, func() {
			if err := s.forward(3+pos%250, pos%s.context, true); err != nil {
				t.Fatal(err)
			}
			pos++
		})
		assert.Zero(t, allocs, "%v", kv)
	}
}

// TestLFM2Refusals: what the engine does not run of an lfm2 model is
// refused with its reason: a device, a split, keys of variants it does not
// compute, tensors in layers of the wrong kind.
func TestLFM2Refusals(t *testing.T) {
	m := loadLFM2(t, tensor.F32)
	assert.ErrorContains(t, m.DeviceSupports(), "layer 0 is a shortconv layer")
	_, err := m.Cut(Part{})
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "recurrent state")
	data := testmodel.GGUF(t, lfm2Spec(tensor.F32, 21))
	for _, tc := range []struct {
		name string
		key  string
		v    gguf.Value
		want error
	}{
		{"a sliding window", "lfm2.attention.sliding_window", gguf.ValueOf(uint32(16)), ErrUnsupported},
		{"bidirectional", "lfm2.attention.causal", gguf.ValueOf(false), ErrUnsupported},
		{"attention layers of different widths", "lfm2.attention.head_count_kv", gguf.ArrayOf([]int32{0, 2, 0, 0, 4}), ErrUnsupported},
		{"a count per layer for fewer layers", "lfm2.attention.head_count_kv", gguf.ArrayOf([]int32{0, 2, 0, 0}), ErrFormat},
		{"a negative count", "lfm2.attention.head_count_kv", gguf.ArrayOf([]int32{0, 2, 0, -1, 2}), ErrFormat},
		{"a convolution of one position", "lfm2.shortconv.l_cache", gguf.ValueOf(uint32(1)), ErrFormat},
		// Layer 0's convolution tensors in an attention layer, its
		// attention tensors missing.
		{"a short convolution's tensors in an attention layer", "lfm2.attention.head_count_kv", gguf.ArrayOf([]int32{2, 2, 0, 0, 2}), ErrFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edited, err := modelgen.SetKV(data, tc.key, tc.v)
			require.NoError(t, err)
			_, err = Load(edited, LoadOptions{})
			assert.ErrorIs(t, err, tc.want)
		})
	}
	moe := testmodel.GGUF(t, lfm2moeSpec(tensor.F32, 22))
	_, err = Load(moe, LoadOptions{})
	require.NoError(t, err)
	softmax, err := modelgen.SetKV(moe, "lfm2moe.expert_gating_func", gguf.ValueOf(uint32(1)))
	require.NoError(t, err)
	_, err = Load(softmax, LoadOptions{})
	assert.ErrorIs(t, err, ErrUnsupported, "lfm2moe gated by a softmax")
}

// TestLFM2Info: Info says each layer's kind, the convolutions' span and
// the recurrent state's size, and the memory estimate counts the state
// beside a KV cache of the attention layers alone.
func TestLFM2Info(t *testing.T) {
	m := loadLFM2(t, tensor.F32)
	info := m.Info()
	var kinds []LayerKind
	for _, s := range info.LayerSpecs {
		kinds = append(kinds, s.Kind)
	}
	assert.Equal(t, []LayerKind{LayerShortConv, LayerAttention, LayerShortConv, LayerShortConv, LayerAttention}, kinds)
	assert.Equal(t, 3, info.ShortConvKernel)
	assert.Equal(t, int64(3*2*64*4), info.RecurrentStateBytes, "3 layers of 2 positions of 64 channels, float32")
	assert.Equal(t, 2, info.KVHeads)
	s := newSessionKV(t, m, KVF32)
	assert.Equal(t, 2*2*128*m.config.KVDim(), len(s.kv.k)+len(s.kv.v), "the attention layers' keys and values only")
}
