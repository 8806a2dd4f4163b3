package gpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wasmlm/wasmlm/engine/gpu"
)

// attention64 is the attention of n tokens at positions pos.. with queries
// q over keys and values (rows of kvDim for positions 0..), in float64
// from the formulas: scores q·k over the positions each token attends to,
// soft-capped, scaled, softmax, Σ weight·v. With f16 the queries, keys,
// values and weights are rounded to F16 first, as the engine's attention
// over an F16 cache rounds them.
func attention64(q, keys, values []float32, n, pos int, s gpu.AttentionSpec, f16 bool) []float64 {
	round := func(x float64) float64 {
		if f16 {
			return roundF16(x)
		}
		return x
	}
	kvDim, group := s.KVHeads*s.HeadDim, s.Heads/s.KVHeads
	out := make([]float64, len(q))
	for i := range n {
		last := pos + i
		if s.NonCausal {
			last = pos + n - 1
		}
		first := 0
		if s.Window > 0 {
			first = max(0, last-s.Window+1)
		}
		for h := range s.Heads {
			qh := q[(i*s.Heads+h)*s.HeadDim:]
			at := h / group * s.HeadDim
			scores := make([]float64, last+1-first)
			m := math.Inf(-1)
			for j := range scores {
				var dot float64
				for d := range s.HeadDim {
					dot += round(float64(qh[d])) * round(float64(keys[(first+j)*kvDim+at+d]))
				}
				if s.SoftCap > 0 {
					dot = float64(s.SoftCap) * math.Tanh(dot/float64(s.SoftCap))
				}
				scores[j] = dot * float64(s.Scale)
				m = max(m, scores[j])
			}
			var sum float64
			for j := range scores {
				scores[j] = math.Exp(scores[j] - m)
				sum += scores[j]
			}
			o := out[(i*s.Heads+h)*s.HeadDim:]
			for j, e := range scores {
				w := round(e / sum)
				for d := range s.HeadDim {
					o[d] += w * round(float64(values[(first+j)*kvDim+at+d]))
				}
			}
		}
	}
	return out
}

func TestAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		name            string
		context, n, pos int
		spec            gpu.AttentionSpec
		ring            bool // the layer keeps a ring of its window and a block
	}{
		{"decode", 16, 1, 9, gpu.AttentionSpec{Heads: 4, KVHeads: 4, HeadDim: 16}, false},
		{"decode grouped", 16, 1, 12, gpu.AttentionSpec{Heads: 6, KVHeads: 2, HeadDim: 32}, false},
		{"block grouped", 16, 5, 3, gpu.AttentionSpec{Heads: 6, KVHeads: 2, HeadDim: 32}, false},
		{"block from 0", 8, 4, 0, gpu.AttentionSpec{Heads: 2, KVHeads: 1, HeadDim: 64}, false},
		{"window", 16, 3, 8, gpu.AttentionSpec{Heads: 4, KVHeads: 2, HeadDim: 16, Window: 4}, false},
		{"window in a ring", 40, 3, 29, gpu.AttentionSpec{Heads: 4, KVHeads: 2, HeadDim: 16, Window: 5}, true},
		{"window in a ring, wrapping within the block", 40, 4, 15, gpu.AttentionSpec{Heads: 2, KVHeads: 1, HeadDim: 16, Window: 6}, true},
		{"soft-capped", 16, 2, 5, gpu.AttentionSpec{Heads: 2, KVHeads: 1, HeadDim: 16, SoftCap: 5, Scale: 1}, false},
		{"heads of 96", 12, 2, 4, gpu.AttentionSpec{Heads: 2, KVHeads: 1, HeadDim: 96}, false},
		{"heads of 256", 12, 1, 7, gpu.AttentionSpec{Heads: 2, KVHeads: 2, HeadDim: 256}, false},
		{"heads of 512", 8, 2, 3, gpu.AttentionSpec{Heads: 1, KVHeads: 1, HeadDim: 512}, false},
		{"decode over chunks of a workgroup", 600, 1, 590, gpu.AttentionSpec{Heads: 4, KVHeads: 2, HeadDim: 32}, false},
		{"block whose tokens span one chunk or two", 300, 4, 254, gpu.AttentionSpec{Heads: 2, KVHeads: 1, HeadDim: 64}, false},
		{"enough heads for one chunk past a workgroup", 400, 64, 300, gpu.AttentionSpec{Heads: 4, KVHeads: 2, HeadDim: 16}, false},
		{"chunks longer than a workgroup", 700, 4, 690, gpu.AttentionSpec{Heads: 32, KVHeads: 4, HeadDim: 16}, false},
		{"longer than a workgroup", 700, 2, 690, gpu.AttentionSpec{Heads: 2, KVHeads: 1, HeadDim: 16}, false},
		{"window longer than a workgroup", 700, 1, 650, gpu.AttentionSpec{Heads: 2, KVHeads: 1, HeadDim: 16, Window: 300}, false},
		{"window longer than a workgroup in a ring", 700, 2, 650, gpu.AttentionSpec{Heads: 2, KVHeads: 1, HeadDim: 16, Window: 300}, true},
		{"non-causal", 8, 5, 0, gpu.AttentionSpec{Heads: 3, KVHeads: 3, HeadDim: 16, NonCausal: true}, false},
	} {
		for _, f16 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s f16 %v", c.name, f16), func(t *testing.T) {
				s := c.spec
				if s.Scale == 0 {
					s.Scale = float32(1 / math.Sqrt(float64(s.HeadDim)))
				}
				s.MaxTokens = c.n
				e := newEnv(t)
				kvDim, qDim := s.KVHeads*s.HeadDim, s.Heads*s.HeadDim
				slots := []int{c.context, c.context}
				if c.ring {
					slots[1] = s.Window + c.n - 1
				}
				cache, err := gpu.NewRingKVCache(e.host, c.context, kvDim, f16, slots)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(cache.Destroy)
				total := c.pos + c.n
				keys, values := random(r, total*kvDim, 1), random(r, total*kvDim, 2)
				q := random(r, c.n*qDim, 1)
				out := e.zeros(c.n * qDim)
				attn, err := gpu.NewAttention(e.lib, e.pass, cache, 1, e.upload(q), out, s)
				if err != nil {
					t.Fatal(err)
				}
				// the earlier positions, as many at a time as the layer
				// holds, then the block's, each in a submission of its own
				for at := 0; at < c.pos; at += slots[1] {
					storeKV(e, cache, keys, values, kvDim, at, min(slots[1], c.pos-at))
				}
				storeKV(e, cache, keys, values, kvDim, c.pos, c.n)
				if err := attn.Record(c.n, c.pos); err != nil {
					t.Fatal(err)
				}
				e.run()
				tol := 2e-6
				if f16 {
					tol = 1e-3 // a weight rounded to the other F16 neighbour
				}
				within(t, c.name, e.read(out, c.n*qDim), attention64(q, keys, values, c.n, c.pos, s, f16), tol)
				if err := attn.Record(c.n+1, c.pos); err == nil {
					t.Error("more tokens than maxTokens were recorded")
				}
			})
		}
	}
}

// storeKV stores positions at..at+n-1 of keys and values (rows of kvDim)
// in the cache's layer 1, in a submission of its own.
func storeKV(e *env, cache *gpu.KVCache, keys, values []float32, kvDim, at, n int) {
	e.t.Helper()
	rows := func(x []float32) gpu.Binding { return e.upload(x[at*kvDim : (at+n)*kvDim]) }
	store, err := gpu.NewKVStore(e.lib, e.pass, cache, 1, rows(keys), rows(values))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := store.Record(n, at); err != nil {
		e.t.Fatal(err)
	}
	e.run()
}

// TestAttentionRefusesASmallRing refuses a layer whose ring would lose
// positions a block's first token attends to while the block is stored.
func TestAttentionRefusesASmallRing(t *testing.T) {
	e := newEnv(t)
	cache, err := gpu.NewRingKVCache(e.host, 32, 16, false, []int{32, 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cache.Destroy)
	q, out := e.zeros(4*16), e.zeros(4*16)
	for _, c := range []struct {
		layer, window, maxTokens int
		ok                       bool
	}{
		{1, 5, 4, true},  // 5 + 4 - 1 = 8 slots
		{1, 6, 4, false}, // 9
		{1, 0, 1, false}, // no window: every position
		{0, 0, 4, true},  // the whole context
	} {
		_, err := gpu.NewAttention(e.lib, e.pass, cache, c.layer, q, out, gpu.AttentionSpec{Heads: 1, KVHeads: 1, HeadDim: 16, Window: c.window, Scale: 1, MaxTokens: c.maxTokens})
		if (err == nil) != c.ok {
			t.Errorf("layer %d, window %d, maxTokens %d: error %v, want ok %v", c.layer, c.window, c.maxTokens, err, c.ok)
		}
	}
}
