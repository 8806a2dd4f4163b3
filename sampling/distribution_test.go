package sampling

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDrawFrequencies draws n = 200000 tokens from known distributions and
// checks every token's frequency against its probability (computed here with
// math.Exp, independently of the sampler) within 5 standard deviations of a
// binomial proportion, 5*sqrt(p(1-p)/n). For an ideal generator a token lands
// outside that band with probability 5.7e-7, so a configuration of 6 tokens
// fails falsely with probability below 3.5e-6 (union bound), and the 3
// configurations below below 1.1e-5. The seed is fixed, so the outcome is the
// same on every run and platform; the bound says how unlikely an unlucky seed is.
func TestDrawFrequencies(t *testing.T) {
	const n = 200000
	probs := []float64{0.05, 0.1, 0.15, 0.2, 0.22, 0.28}
	logits := make([]float32, len(probs))
	for i, q := range probs {
		logits[i] = float32(math.Log(q))
	}
	tests := []struct {
		name string
		p    Params
	}{
		{"temperature 1", Params{Temperature: 1, Seed: 11}},
		{"temperature 0.7", Params{Temperature: 0.7, Seed: 12}},
		{"top_k 4 at temperature 1.5", Params{Temperature: 1.5, TopK: 4, Seed: 13}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Expected: softmax(logits/T) over the TopK most likely tokens.
			keep := len(logits)
			if tt.p.TopK > 0 {
				keep = tt.p.TopK
			}
			order := naiveOrder(logits)[:keep]
			want := make([]float64, len(logits))
			var z float64
			for _, id := range order {
				want[id] = math.Exp(float64(logits[id]) / float64(tt.p.Temperature))
				z += want[id]
			}
			for i := range want {
				want[i] /= z
			}

			s := mustNew(t, tt.p, len(logits))
			counts := make([]int, len(logits))
			for range n {
				counts[s.Sample(logits)]++
			}
			for id, q := range want {
				got := float64(counts[id]) / n
				bound := 5 * math.Sqrt(q*(1-q)/n)
				assert.InDelta(t, q, got, bound, "token %d: frequency %v, probability %v", id, got, q)
			}
		})
	}
}
