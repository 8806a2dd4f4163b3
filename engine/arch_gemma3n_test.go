package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// gemma3nSpec is a small gemma3n model: 22 layers, so that the last two
// read layer 18's cache, as llama.cpp's gemma3n fixes.
func gemma3nSpec(typ tensor.Type) modelgen.Spec {
	return modelgen.Spec{Arch: "gemma3n", Type: typ, Seed: 3, Std: 0.05,
		Shape:  modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 22, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 384, ContextLength: 128},
		Family: modelgen.Family{SlidingWindow: 8, FinalSoftCap: 30}}
}

// loadGemma3n loads gemma3nSpec in type typ.
func loadGemma3n(t testing.TB, typ tensor.Type) *Model {
	t.Helper()
	m, err := Load(testmodel.GGUF(t, gemma3nSpec(typ)), LoadOptions{})
	require.NoError(t, err)
	return m
}

// TestGemma3nLayers: each layer's recipe is what llama.cpp's gemma3n
// fixes: every 5th layer full, the sparse gate in the first 10, layers
// 20 and 21 (sliding) reading layer 18's cache.
func TestGemma3nLayers(t *testing.T) {
	m := loadGemma3n(t, tensor.F32)
	c := m.config
	assert.Equal(t, []int{4, 256, 64}, []int{c.AltUp, c.PerLayerDim, c.LaurelRank})
	assert.Equal(t, float32(30), c.FinalSoftCap)
	for l := range c.Layers {
		s := c.Layer(l)
		assert.True(t, s.AltUp, "layer %d", l)
		assert.Equal(t, l%5 != 4, s.Attention.Window == 8, "layer %d slides", l)
		assert.Equal(t, l < 10, s.GateSparsity != 0, "layer %d's gate", l)
		assert.Equal(t, l >= 20, s.Attention.SharedKV, "layer %d shares", l)
		if s.Attention.SharedKV {
			assert.Equal(t, 18, s.Attention.KVLayer, "layer %d", l)
		}
	}
}

// TestGemma3nBlocksAreTokens: a prompt evaluated in blocks leaves the
// logits its tokens one by one leave, with one thread and two.
func TestGemma3nBlocksAreTokens(t *testing.T) {
	m := loadGemma3n(t, tensor.Q8_0)
	prompt := make([]int, 40)
	for i := range prompt {
		prompt[i] = 3 + i*37%380
	}
	ref, err := m.NewSession(SessionOptions{PromptBlock: 1, Threads: 1})
	require.NoError(t, err)
	for pos, tok := range prompt {
		require.NoError(t, ref.forward(tok, pos, pos == len(prompt)-1))
	}
	for _, threads := range []int{1, 2} {
		s, err := m.NewSession(SessionOptions{PromptBlock: 32, Threads: threads})
		require.NoError(t, err)
		for at := 0; at < len(prompt); at += 32 {
			end := min(at+32, len(prompt))
			require.NoError(t, s.forwardBlock(prompt[at:end], at, end == len(prompt)))
		}
		assert.Equal(t, ref.logits, s.logits, "%d threads", threads)
	}
}
