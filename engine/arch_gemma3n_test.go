package engine

import (
	"math"

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

// TestSparseGate: the sparse gate keeps what exceeds each row's mean by k
// sample standard deviations, relu(g − mean − k·std), computed here in
// float64 from the formula.
func TestSparseGate(t *testing.T) {
	for _, tt := range []struct {
		name string
		rows [][]float32
		k    float32
	}{
		{"one row", [][]float32{{0.5, -1, 2, 0.25, 3, -0.5, 1, 0}}, 1.6448533},
		{"two rows, k 0.5", [][]float32{{1, 2, 3, 4}, {-4, 0.5, 0.25, 8}}, 0.5},
		{"k 0 leaves the gate", [][]float32{{1, -2, 3}}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var gate []float32
			for _, r := range tt.rows {
				gate = append(gate, r...)
			}
			sparseGate(tt.k, gate, len(tt.rows))
			for i, r := range tt.rows {
				var mean, ss float64
				for _, v := range r {
					mean += float64(v)
				}
				mean /= float64(len(r))
				for _, v := range r {
					ss += (float64(v) - mean) * (float64(v) - mean)
				}
				cutoff := mean + float64(tt.k)*math.Sqrt(ss/float64(len(r)-1))
				for j, v := range r {
					want := math.Max(float64(v)-cutoff, 0)
					if tt.k == 0 {
						want = float64(v)
					}
					assert.InDelta(t, want, gate[i*len(r)+j], 1e-6, "row %d, %d", i, j)
				}
			}
		})
	}
}

// TestAltUpStreamsAtTheEmbedding: the streams a token starts with are its
// scaled embedding x and x projected by each of altup_proj's matrices,
// scaled to x's magnitude, computed here in float64.
func TestAltUpStreamsAtTheEmbedding(t *testing.T) {
	m := loadGemma3n(t, tensor.F32)
	s := newSession(t, m)
	c, w := m.config, m.weights
	a := &s.state.activations
	x := make([]float32, c.Dim)
	w.TokenEmbedding.Row(x, 77)
	c.scaleEmbedding(x)
	s.altUpBegin(a, x, 1)
	norm := func(v []float64) float64 {
		var ss float64
		for _, e := range v {
			ss += e * e
		}
		return math.Sqrt(ss)
	}
	x64 := make([]float64, c.Dim)
	for i, v := range x {
		x64[i] = float64(v)
	}
	assert.Equal(t, x, stream(a.streams, 0, 1, c.Dim))
	row := make([]float32, c.Dim)
	for j := 1; j < c.AltUp; j++ {
		p := make([]float64, c.Dim)
		for e := range p {
			w.AltUpProj.Row(row, (j-1)*c.Dim+e)
			for k, v := range row {
				p[e] += float64(v) * x64[k]
			}
		}
		scale := norm(x64) / norm(p)
		for e, got := range stream(a.streams, j, 1, c.Dim) {
			assert.InDelta(t, p[e]*scale, got, 1e-5, "stream %d, %d", j, e)
		}
	}
}
