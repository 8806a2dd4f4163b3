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

// gemma4Spec is a small gemma4 model with every part of Gemma-4-E2B's
// shape (llamacpp_parity_gemma4_test.go's "gemma4"): sliding and full
// layers of different head widths and key/value heads, shared caches,
// double-wide feed-forwards, per-layer embeddings, output scales.
func gemma4Spec(typ tensor.Type) modelgen.Spec {
	sliding := make([]bool, 9)
	for l := range sliding {
		sliding[l] = l%3 != 2
	}
	return modelgen.Spec{Arch: "gemma4", Type: typ, Seed: 3, Std: 0.1, MuteSpecial: true,
		Shape:  modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 9, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 384, ContextLength: 128},
		Family: modelgen.Family{SlidingWindow: 8, FinalSoftCap: 30},
		Gemma4: &modelgen.Gemma4{Sliding: sliding, SlidingHeadDim: 16, FullKVHeads: 1, SharedKVLayers: 3, DoubleWide: true, PerLayerDim: 32, OutputScale: true}}
}

// TestGemma4Layers: each layer's recipe is what the file says of it, and
// the layers that share a cache keep none.
func TestGemma4Layers(t *testing.T) {
	m, err := Load(testmodel.GGUF(t, gemma4Spec(tensor.F32)), LoadOptions{})
	require.NoError(t, err)
	c := m.config
	assert.Equal(t, 32, c.HeadDim())
	assert.Equal(t, 32, c.PerLayerDim)
	for l := range c.Layers {
		s := c.Layer(l)
		sliding := l%3 != 2
		assert.Equal(t, sliding, s.Attention.Window == 8, "layer %d slides", l)
		assert.Equal(t, map[bool]int{true: 16, false: 32}[sliding], c.layerHeadDim(l), "layer %d's heads", l)
		assert.Equal(t, map[bool]int{true: 2, false: 1}[sliding], c.layerKVHeads(l), "layer %d's key/value heads", l)
		assert.Equal(t, map[bool]int{true: 256, false: 128}[l >= 6], c.layerHidden(l), "layer %d's feed-forward", l)
		assert.Equal(t, l >= 6, s.Attention.SharedKV, "layer %d shares a cache", l)
		if s.Attention.SharedKV {
			assert.Equal(t, map[bool]int{true: 4, false: 5}[sliding], s.Attention.KVLayer, "the cache layer %d shares", l)
		}
		assert.True(t, s.PerLayerInput && s.Attention.ValueNorm)
		assert.Equal(t, sliding, s.Attention.NoRopeFactors)
		assert.Equal(t, float32(1), c.layerScoreScale(l), "layer %d scales no scores", l)
	}
	s := newSessionKV(t, m, KVF16)
	for l := 6; l < 9; l++ {
		assert.Equal(t, s.kv.layers[c.Layer(l).Attention.KVLayer], s.kv.layers[l], "layer %d's cache is the one it shares", l)
	}
	// The sliding layer whose cache others read holds a prompt block more
	// than its window; the others their window and a group of 4 (F16).
	assert.Equal(t, 8+DefaultPromptBlock-1, s.kv.layers[4].slots)
	assert.Equal(t, 8+kvBlockTokens-1, s.kv.layers[3].slots)
	var own int64
	for l := range 6 {
		own += int64(s.kv.layers[l].slots * s.kv.layers[l].kvDim)
	}
	assert.Equal(t, 2*own*2, c.KVCacheBytes(s.context, KVF16), "the shared layers take no memory")
	assert.Equal(t, 2*own*2, int64(4*len(s.kv.k16)))
}

// TestGemma4BlocksAreTokens: a prompt evaluated in blocks (whose sliding
// layers' rings are read by the shared layers only once the block is
// stored) leaves the logits and cache its tokens one by one leave, with
// one thread and two, over an F32 and an F16 cache.
func TestGemma4BlocksAreTokens(t *testing.T) {
	m := loadGemma4(t, tensor.Q8_0)
	prompt := make([]int, 70)
	for i := range prompt {
		prompt[i] = 3 + i*37%380
	}
	for _, kv := range []KVType{KVF32, KVF16} {
		ref, err := m.NewSession(SessionOptions{KVType: kv, PromptBlock: 1, Threads: 1})
		require.NoError(t, err)
		for pos, tok := range prompt {
			require.NoError(t, ref.forward(tok, pos, pos == len(prompt)-1))
		}
		for _, threads := range []int{1, 2} {
			s, err := m.NewSession(SessionOptions{KVType: kv, PromptBlock: 32, Threads: threads})
			require.NoError(t, err)
			for at := 0; at < len(prompt); at += 32 {
				end := min(at+32, len(prompt))
				require.NoError(t, s.forwardBlock(prompt[at:end], at, end == len(prompt)))
			}
			assert.Equal(t, ref.logits, s.logits, "%v, %d threads", kv, threads)
		}
	}
}

// TestGemma4PerLayerInputs: the per-layer vectors of a token are
// (RMSNorm(P·x/√dim) + E[token]·√perLayerDim)/√2, computed here in
// float64 from the formula.
func TestGemma4PerLayerInputs(t *testing.T) {
	m, err := Load(testmodel.GGUF(t, gemma4Spec(tensor.F32)), LoadOptions{})
	require.NoError(t, err)
	s := newSession(t, m)
	c, w := m.config, m.weights
	a := &s.state.activations
	token := 77
	x := make([]float32, c.Dim)
	w.TokenEmbedding.Row(x, token)
	c.scaleEmbedding(x)
	s.perLayerInputs(a, []int{token}, x)
	all := c.PerLayerDim * c.Layers
	e := make([]float32, all)
	w.PerLayerTokenEmbedding.Row(e, token)
	p := make([]float32, c.Dim)
	for l := range c.Layers {
		proj := make([]float64, c.PerLayerDim)
		var ss float64
		for j := range proj {
			w.PerLayerModelProj.Row(p, l*c.PerLayerDim+j)
			for i := range p {
				proj[j] += float64(p[i]) * float64(x[i])
			}
			proj[j] /= math.Sqrt(float64(c.Dim))
			ss += proj[j] * proj[j]
		}
		rms := math.Sqrt(ss/float64(c.PerLayerDim) + float64(c.NormEps))
		for j := range proj {
			want := (proj[j]/rms*float64(w.PerLayerProjNorm[j]) + float64(e[l*c.PerLayerDim+j])*math.Sqrt(float64(c.PerLayerDim))) / math.Sqrt2
			assert.InDelta(t, want, a.inputs[l*c.PerLayerDim+j], 1e-4*(1+math.Abs(want)), "layer %d, value %d", l, j)
		}
	}
}

// loadGemma4 loads gemma4Spec's model in type typ.
func loadGemma4(t testing.TB, typ tensor.Type) *Model {
	m, err := Load(testmodel.GGUF(t, gemma4Spec(typ)), LoadOptions{})
	require.NoError(t, err)
	return m
}
