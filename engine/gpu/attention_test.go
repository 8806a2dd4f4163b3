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
	}{
		{"decode", 16, 1, 9, gpu.AttentionSpec{Heads: 4, KVHeads: 4, HeadDim: 16}},
		{"decode grouped", 16, 1, 12, gpu.AttentionSpec{Heads: 6, KVHeads: 2, HeadDim: 32}},
		{"block grouped", 16, 5, 3, gpu.AttentionSpec{Heads: 6, KVHeads: 2, HeadDim: 32}},
		{"block from 0", 8, 4, 0, gpu.AttentionSpec{Heads: 2, KVHeads: 1, HeadDim: 64}},
		{"window", 16, 3, 8, gpu.AttentionSpec{Heads: 4, KVHeads: 2, HeadDim: 16, Window: 4}},
		{"soft-capped", 16, 2, 5, gpu.AttentionSpec{Heads: 2, KVHeads: 1, HeadDim: 16, SoftCap: 5, Scale: 1}},
		{"heads of 96", 12, 2, 4, gpu.AttentionSpec{Heads: 2, KVHeads: 1, HeadDim: 96}},
		{"heads of 256", 12, 1, 7, gpu.AttentionSpec{Heads: 2, KVHeads: 2, HeadDim: 256}},
		{"heads of 512", 8, 2, 3, gpu.AttentionSpec{Heads: 1, KVHeads: 1, HeadDim: 512}},
		{"longer than a workgroup", 700, 2, 690, gpu.AttentionSpec{Heads: 2, KVHeads: 1, HeadDim: 16}},
		{"window longer than a workgroup", 700, 1, 650, gpu.AttentionSpec{Heads: 2, KVHeads: 1, HeadDim: 16, Window: 300}},
		{"non-causal", 8, 5, 0, gpu.AttentionSpec{Heads: 3, KVHeads: 3, HeadDim: 16, NonCausal: true}},
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
				cache, err := gpu.NewKVCache(e.host, 2, c.context, kvDim, f16)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(cache.Destroy)
				total := c.pos + c.n
				keys, values := random(r, total*kvDim, 1), random(r, total*kvDim, 2)
				q := random(r, c.n*qDim, 1)
				kb, vb := e.upload(keys), e.upload(values)
				store, err := gpu.NewKVStore(e.lib, e.pass, cache, 1, kb, vb)
				if err != nil {
					t.Fatal(err)
				}
				out := e.zeros(c.n * qDim)
				attn, err := gpu.NewAttention(e.lib, e.pass, cache, 1, e.upload(q), out, s)
				if err != nil {
					t.Fatal(err)
				}
				if err := store.Record(total, 0); err != nil {
					t.Fatal(err)
				}
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
