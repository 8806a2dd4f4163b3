package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// gemmaSpec is a small random gemma model of arch with a sliding window of
// window positions: gemma2 of 3 layers (0 and 2 slide), gemma3 of 7 (all
// but 5 slide) with heads twice as wide as dim/heads.
func gemmaSpec(arch string, typ tensor.Type, window int) modelgen.Spec {
	sp := modelgen.Spec{Arch: arch, Shape: modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 3, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 128},
		Family: modelgen.Family{SlidingWindow: window}, Type: typ, Seed: 6, Std: 0.1, OutputStd: 0.5}
	if arch == "gemma3" {
		sp.Layers, sp.HeadDim = 7, 32
	}
	return sp
}

func loadGemma(t testing.TB, arch string, typ tensor.Type, window int) *Model {
	t.Helper()
	m, err := Load(testmodel.GGUF(t, gemmaSpec(arch, typ, window)), LoadOptions{})
	require.NoError(t, err)
	return m
}

// TestSlidingWindowLayers: which layers slide (llama.cpp's
// set_swa_pattern), how many positions each layer's cache holds, and what
// KVCacheBytes counts.
func TestSlidingWindowLayers(t *testing.T) {
	tests := []struct {
		name        string
		c           Config
		sliding     []bool
		f32, f16    []int // the slots of each layer at a context of 100
		window      int   // Info's sliding_window
		ropeTables  int
		f32Bytes    int64 // KVCacheBytes(100, KVF32)
		contextOnly bool  // a context of 10 holds 10 positions everywhere
	}{
		{"llama", Config{Layers: 3, Dim: 8, Heads: 2, KVHeads: 1},
			[]bool{false, false, false}, []int{100, 100, 100}, []int{100, 100, 100}, 0, 1, 2 * 300 * 4 * 4, true},
		{"gemma2, window 16", withLayerKeys(Config{Layers: 3, Dim: 8, Heads: 2, KVHeads: 1, RopeTheta: 10000, RopeScale: 1},
			layerKeys{window: 16, windowPeriod: 2, windowTheta: 10000, windowScale: 1}),
			[]bool{true, false, true}, []int{16, 100, 16}, []int{19, 100, 19}, 16, 1, 2 * 132 * 4 * 4, true},
		{"gemma3, window 16", withLayerKeys(Config{Layers: 7, Dim: 8, Heads: 2, KVHeads: 1, RopeTheta: 1e6, RopeScale: 1},
			layerKeys{window: 16, windowPeriod: 6, windowTheta: 10000, windowScale: 1}),
			[]bool{true, true, true, true, true, false, true}, []int{16, 16, 16, 16, 16, 100, 16}, []int{19, 19, 19, 19, 19, 100, 19},
			16, 2, 2 * 196 * 4 * 4, true},
		{"every layer slides (pattern 0)", withLayerKeys(Config{Layers: 2, Dim: 8, Heads: 2, KVHeads: 1}, layerKeys{window: 4}),
			[]bool{true, true}, []int{4, 4}, []int{7, 7}, 4, 1, 2 * 8 * 4 * 4, false},
		{"pattern 1: none slides", withLayerKeys(Config{Layers: 2, Dim: 8, Heads: 2, KVHeads: 1}, layerKeys{window: 4, windowPeriod: 1}),
			[]bool{false, false}, []int{100, 100}, []int{100, 100}, 0, 1, 2 * 200 * 4 * 4, true},
		{"a window of 0: none slides", withLayerKeys(Config{Layers: 2, Dim: 8, Heads: 2, KVHeads: 1}, layerKeys{windowPeriod: 2}),
			[]bool{false, false}, []int{100, 100}, []int{100, 100}, 0, 1, 2 * 200 * 4 * 4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for l := range tt.c.Layers {
				assert.Equal(t, tt.sliding[l], tt.c.Sliding(l), "layer %d slides", l)
				assert.Equal(t, tt.f32[l], tt.c.kvSlots(l, 100, KVF32), "layer %d's F32 slots", l)
				assert.Equal(t, tt.f16[l], tt.c.kvSlots(l, 100, KVF16), "layer %d's F16 slots", l)
				if tt.contextOnly {
					assert.Equal(t, 10, tt.c.kvSlots(l, 10, KVF16), "at most the context")
				}
			}
			assert.Equal(t, tt.window, tt.c.slidingWindow())
			assert.Equal(t, tt.ropeTables, tt.c.ropeTables())
			assert.Equal(t, tt.f32Bytes, tt.c.KVCacheBytes(100, KVF32))
			kv := newKVCache(tt.c, KVF32, tt.c.KVDim(), 100)
			assert.Len(t, kv.k, int(tt.f32Bytes/8))
		})
	}
}

// TestKVRing: a sliding layer's ring — which position a query attends
// from, where positions lie, where a run of them wraps round, and whether
// the cache still holds what evaluating from a position reads.
func TestKVRing(t *testing.T) {
	ring := kvLayer{slots: 10, window: 8} // an F16 ring: window 8 and 2 more
	whole := kvLayer{slots: 100}
	tests := []struct {
		ly            kvLayer
		pos           int
		first         int
		slot          int
		mid, midSlot  int // wrap(first, pos+1)
		cached, holds int // holds(pos, cached) for cached positions...
		want          bool
	}{
		{ring, 0, 0, 0, 1, 0, 0, 0, true},
		{ring, 7, 0, 7, 8, 0, 8, 7, true},
		{ring, 8, 1, 8, 9, 1, 9, 8, true},
		{ring, 12, 5, 2, 10, 5, 13, 12, true},  // 5..9 then 10..12 in slots 0..2
		{ring, 12, 5, 2, 10, 5, 14, 12, true},  // 13 overwrote 3, which 12 does not read
		{ring, 12, 5, 2, 10, 5, 16, 12, false}, // 15 overwrote 5, which it reads
		{ring, 29, 22, 9, 30, 2, 31, 29, true},
		{whole, 57, 0, 57, 58, 0, 80, 10, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d slots, position %d", tt.ly.slots, tt.pos), func(t *testing.T) {
			assert.Equal(t, tt.first, tt.ly.first(tt.pos))
			assert.Equal(t, tt.slot, tt.ly.slot(tt.pos))
			mid, slot := tt.ly.wrap(tt.first, tt.pos+1)
			assert.Equal(t, []int{tt.mid, tt.midSlot}, []int{mid, slot})
			kv := kvCache{layers: []kvLayer{whole, tt.ly}}
			assert.Equal(t, tt.want, kv.holds(tt.holds, tt.cached))
		})
	}
}

// withLayerKeys is c with the layers' recipes a file saying k would give.
func withLayerKeys(c Config, k layerKeys) Config {
	c.LayerSpecs = architectures["llama"].layerSpecs(c, k)
	return c
}

// TestSlidingWindowPromptCache: a prompt that extends what a session has
// cached evaluates only its new tokens, past the window as before it; one
// that goes back to a position whose window a ring has moved past (the
// session has cached positions beyond it) is evaluated from the start;
// either way the result is a fresh session's. A model whose window (512)
// is more than the context's 128 positions reuses every prefix.
func TestSlidingWindowPromptCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	prompt := make([]int, 30)
	for i := range prompt {
		prompt[i] = 3 + rng.IntN(290)
	}
	join := func(parts ...[]int) []int {
		var out []int
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, kv := range []KVType{KVF32, KVF16} {
		for _, window := range []int{8, 512} {
			m := loadGemma(t, "gemma3", tensor.F32, window)
			t.Run(fmt.Sprintf("%v window %d", kv, window), func(t *testing.T) {
				s := newSessionKV(t, m, kv)
				var reply []int
				steps := []struct {
					name      string
					prompt    func() []int
					max       int
					ring, all int // prompt tokens evaluated, window 8 and 512
				}{
					{"a prompt", func() []int { return prompt }, 10, 30, 30},
					{"the conversation goes on", func() []int { return join(prompt, reply, []int{5, 6, 7}) }, 1, 4, 4},
					{"the same prompt again, nothing cached past it", func() []int { return join(prompt, reply, []int{5, 6, 7}) }, 1, 1, 1},
					{"its last token edited", func() []int { return join(prompt, reply, []int{5, 6, 4}) }, 10, 1, 1},
					{"the same prompt again, 9 tokens cached past it", func() []int { return join(prompt, reply, []int{5, 6, 4}) }, 1, 43, 1},
					{"an edit 20 positions back", func() []int { return join(prompt[:20], []int{9, 9}) }, 1, 22, 2},
				}
				for i, st := range steps {
					p := st.prompt()
					got, err := s.GenerateTokens(context.Background(), p, GenerateOptions{MaxTokens: st.max}, nil)
					require.NoError(t, err)
					if i == 0 {
						reply = got.Tokens
					}
					fresh, err := newSessionKV(t, m, kv).GenerateTokens(context.Background(), p, GenerateOptions{MaxTokens: st.max}, nil)
					require.NoError(t, err)
					assert.Equal(t, fresh.Tokens, got.Tokens, st.name)
					want := st.all
					if window == 8 {
						want = st.ring
					}
					assert.Equal(t, want, got.Timings.PrefillTokens, st.name)
				}
			})
		}
	}
}

// TestGemmaFiles: what a gemma model's Info and Config say, from the file
// and as loaded: the sliding window, the tied output, the query and
// embedding scales.
func TestGemmaFiles(t *testing.T) {
	g2, g3 := loadGemma(t, "gemma2", tensor.F32, 16), loadGemma(t, "gemma3", tensor.F32, 16)
	for _, tt := range []struct {
		m         *Model
		window    int
		softCaps  [2]float32
		headDim   int
		theta     [2]float32 // global, sliding
		ropeTable bool
	}{
		{g2, 16, [2]float32{50, 30}, 16, [2]float32{10000, 10000}, false},
		{g3, 16, [2]float32{0, 0}, 32, [2]float32{1e6, 10000}, true},
	} {
		c, info := tt.m.Config(), tt.m.Info()
		assert.Equal(t, tt.window, info.SlidingWindow)
		assert.True(t, info.SharedOutput)
		sliding := c.Layer(0).Attention
		assert.Equal(t, tt.softCaps, [2]float32{sliding.SoftCap, c.FinalSoftCap})
		assert.Equal(t, float32(8), c.EmbeddingScale)
		assert.True(t, sliding.ScaleQueries)
		assert.InDelta(t, 1/float32(tt.headDim), sliding.Scale*sliding.Scale, 1e-7)
		assert.Equal(t, FFNGeGLU, c.Layer(0).FFN)
		slidingTheta, _ := c.rotation(sliding)
		assert.Equal(t, tt.theta, [2]float32{c.RopeTheta, slidingTheta})
		s := newSession(t, tt.m)
		assert.Equal(t, tt.ropeTable, s.layerRopes[0] != &s.rope)
	}
}
