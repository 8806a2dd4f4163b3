package engine

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestPromptBlocksAreBitIdentical: evaluating a prompt
// in blocks leaves, bit for bit, the KV cache and the logits that token by
// token leaves, and the same greedy continuation, for blocks of every size
// and both KV cache types — the llama2.c checkpoint, every quantization of
// the GGUF files, and random models with biases (qwen2), q/k norms and
// heads wider than dim/heads (qwen3), grouped-query attention and K-quants,
// gemma's, whose sliding-window layers keep rings of their window, and
// mixtures of experts, whose blocks go expert by expert.
func TestPromptBlocksAreBitIdentical(t *testing.T) {
	models := map[string]*Model{"stories260K.bin": loadStories260K(t)}
	for _, name := range []string{"F32", "F16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K_M", "Q6_K"} {
		models["stories260K-"+name] = loadGGUFModel(t, "stories260K-"+name+".gguf")
	}
	// K-quant rows are whole super-blocks of 256 (Q2_K and Q3_K have no
	// fallback type for others).
	kShape := modelgen.Shape{Dim: 256, HiddenDim: 512, Layers: 2, Heads: 8, KVHeads: 2, VocabSize: 300, ContextLength: 128}
	for _, sp := range []modelgen.Spec{
		{Arch: "qwen2", Shape: modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 128}, Type: tensor.Q8_0, Seed: 1},
		{Arch: "qwen3", Shape: modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 300, ContextLength: 128}, Type: tensor.Q8_0, Seed: 5},
		// The families' own steps: fused matrices, partial rotary and
		// LongRoPE; layers without rope; post-norms and whole q/k norms;
		// multipliers.
		{Arch: "phi3", Shape: familyShape, Family: modelgen.Family{RopeDims: 12, RopeOriginalContext: 64, RopeAttnFactor: 1.2,
			RopeFactorsLong: []float32{1, 2, 4, 8, 16, 32}, RopeFactorsShort: []float32{1, 1, 1, 1.1, 1.2, 1.3}}, Type: tensor.Q8_0, Seed: 6},
		{Arch: "smollm3", Shape: withLayers(familyShape, 4), Type: tensor.Q8_0, Seed: 7},
		{Arch: "olmo2", Shape: familyShape, Type: tensor.Q8_0, SeparateOutput: true, Seed: 8},
		{Arch: "granite", Shape: familyShape, Family: modelgen.Family{EmbeddingScale: 12, AttentionScale: 0.0625, ResidualScale: 0.22, LogitScale: 8},
			Type: tensor.Q8_0, Seed: 9},
		{Shape: kShape, Type: tensor.Q4_K, SeparateOutput: true, Seed: 2},
		{Shape: kShape, Type: tensor.Q2_K, SeparateOutput: true, Seed: 3},
		{Shape: kShape, Type: tensor.Q3_K, SeparateOutput: true, Seed: 4},
		{Shape: modelgen.Shape{Dim: 256, HiddenDim: 768, Layers: 2, Heads: 8, KVHeads: 2, VocabSize: 301, ContextLength: 128}, Type: tensor.Q5_K, SeparateOutput: true, Seed: 3},
		// Sliding windows of 16 positions, which the prompt of 70 passes
		// (and a block of 32 or 64 covers): gemma3's rings wrap round.
		gemmaSpec("gemma2", tensor.Q8_0, 16),
		gemmaSpec("gemma3", tensor.Q8_0, 16),
		// MXFP4 matrices (gpt-oss's experts' format) in a plain model.
		{Shape: modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 128}, Type: tensor.MXFP4, SeparateOutput: true, Seed: 10},
	} {
		b, err := modelgen.Build(sp)
		require.NoError(t, err)
		m, err := Load(b, LoadOptions{})
		require.NoError(t, err)
		models[fmt.Sprintf("%s %v", sp.Arch, sp.Type)] = m
	}
	// Mixtures of experts: a block's tokens grouped by expert (moe.go).
	maps.Copy(models, moeModels(t))
	// gpt-oss: sinks, sliding rings, biases, MXFP4 experts (gptoss_test.go).
	models["gpt-oss MXFP4"] = gptOSSModel(t, tensor.MXFP4)
	for name, m := range models {
		for _, kv := range []KVType{KVF32, KVF16} {
			t.Run(name+" "+kv.String(), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(3, uint64(len(name))))
				prompt := make([]int, 70)
				for i := range prompt {
					prompt[i] = 3 + rng.IntN(m.config.VocabSize-3)
				}
				ref := prefilled(t, m, kv, 1, prompt)
				for _, block := range []int{2, 7, 32, 64} {
					s := prefilled(t, m, kv, block, prompt)
					requireSameBits(t, ref.logits, s.logits, "block %d: logits", block)
					requireSameBits(t, ref.kv.k, s.kv.k, "block %d: keys", block)
					requireSameBits(t, ref.kv.v, s.kv.v, "block %d: values", block)
					assert.Equal(t, ref.kv.k16, s.kv.k16, "block %d: F16 keys", block)
					assert.Equal(t, ref.kv.v16, s.kv.v16, "block %d: F16 values", block)
				}
			})
		}
	}
}

// prefilled is a session with a kv cache and block-sized prompt blocks
// that has evaluated prompt and generated a greedy token from it.
func prefilled(t *testing.T, m *Model, kv KVType, block int, prompt []int) *Session {
	t.Helper()
	s, err := m.NewSession(SessionOptions{PromptBlock: block, KVType: kv})
	require.NoError(t, err)
	res, err := s.GenerateTokens(context.Background(), prompt, GenerateOptions{MaxTokens: 1}, nil)
	require.NoError(t, err)
	require.Len(t, res.Tokens, 1)
	return s
}

func requireSameBits(t *testing.T, want, got []float32, msg string, args ...any) {
	t.Helper()
	require.Equal(t, len(want), len(got))
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("%s: element %d is %v, token by token %v", fmt.Sprintf(msg, args...), i, got[i], want[i])
		}
	}
}

// TestPromptBlockOption: PromptBlock is checked and defaults, and
// ForwardBlock evaluates a block of up to PromptBlock tokens with the bits
// of Forward's token by token.
func TestPromptBlockOption(t *testing.T) {
	m := loadStories260K(t)
	_, err := m.NewSession(SessionOptions{PromptBlock: -1})
	assert.ErrorIs(t, err, ErrInvalidOption)
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	assert.Equal(t, DefaultPromptBlock, s.PromptBlock())
	s, err = m.NewSession(SessionOptions{PromptBlock: 1 << 20})
	require.NoError(t, err)
	assert.Equal(t, s.context, s.PromptBlock(), "at most the context")

	s, err = m.NewSession(SessionOptions{PromptBlock: 4, ContextLength: 16})
	require.NoError(t, err)
	one, err := m.NewSession(SessionOptions{PromptBlock: 1, ContextLength: 16})
	require.NoError(t, err)
	tokens := []int{1, 40, 300, 7, 12, 99}
	for pos, tok := range tokens {
		require.NoError(t, one.Forward(tok, pos, pos == 3 || pos == 5))
		if pos == 3 {
			require.NoError(t, s.ForwardBlock(tokens[:4], 0, true))
			requireSameBits(t, one.Logits(), s.Logits(), "a block of 4")
		}
	}
	require.NoError(t, s.ForwardBlock(tokens[4:], 4, true))
	requireSameBits(t, one.Logits(), s.Logits(), "a block of 2")
	for name, call := range map[string]func() error{
		"no tokens":        func() error { return s.ForwardBlock(nil, 0, true) },
		"more than block":  func() error { return s.ForwardBlock(tokens[:5], 0, true) },
		"past the vocab":   func() error { return s.ForwardBlock([]int{1, m.config.VocabSize}, 0, true) },
		"negative token":   func() error { return s.ForwardBlock([]int{-1}, 0, true) },
		"past the context": func() error { return s.ForwardBlock(tokens[:2], 15, true) },
		"negative pos":     func() error { return s.ForwardBlock(tokens[:2], -1, true) },
	} {
		assert.ErrorIs(t, call(), ErrInvalidOption, name)
	}
}
