package sampling

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	inf32 = float32(math.Inf(1))
	nan32 = float32(math.NaN())
	negZ  = float32(math.Copysign(0, -1))
)

func TestLoadLogits(t *testing.T) {
	work := make([]float32, 5)
	loadLogits(work, []float32{1, nan32, -inf32})
	assert.Equal(t, []float32{1, -inf32, -inf32, -inf32, -inf32}, work, "NaN and missing ids become -Inf")
	loadLogits(work, []float32{1, 2, 3, 4, 5, 6, 7})
	assert.Equal(t, []float32{1, 2, 3, 4, 5}, work, "extra logits are ignored")
}

func TestApplyLogitBias(t *testing.T) {
	work := []float32{1, inf32, 3, -inf32, 5}
	applyLogitBias(work, []int32{0, 1, 2, 3}, []float32{0.5, -inf32, -inf32, 7})
	assert.Equal(t, []float32{1.5, -inf32, -inf32, -inf32, 5}, work, "+Inf with a -Inf bias is banned, not NaN")
}

func TestApplyPenaltiesMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for trial := range 300 {
		vocab := 1 + rng.IntN(20)
		logits := randomLogits(rng, vocab)
		history := make([]int, rng.IntN(40))
		for i := range history {
			history[i] = rng.IntN(vocab)
		}
		p := Params{
			RepeatPenalty:    []float32{0, 1, 0.5, 1.3, 2, 1e-30}[rng.IntN(6)],
			PresencePenalty:  float32(rng.Float64()*4 - 2),
			FrequencyPenalty: float32(rng.Float64()*4 - 2),
			PenaltyLastN:     []int{-1, 0, 1, 3, 10, 100}[rng.IntN(6)],
		}
		want := naiveLogits(logits, p, history)

		w := newWindow(effectiveLastN(p.PenaltyLastN), vocab)
		for _, id := range history {
			w.accept(int32(id))
		}
		got := make([]float32, vocab)
		loadLogits(got, logits)
		applyPenalties(got, w.present, w.counts, p.RepeatPenalty, p.PresencePenalty, p.FrequencyPenalty)
		require.Equal(t, bitsOf(want), bitsOf(got), "trial %d params %+v history %v", trial, p, history)

		// Tokens outside the window keep their exact logit.
		inWindow := map[int]bool{}
		for _, id := range naiveWindow(history, p.PenaltyLastN) {
			inWindow[id] = true
		}
		for id := range vocab {
			if !inWindow[id] {
				require.Equal(t, bitsOf(want[id:id+1]), bitsOf(got[id:id+1]), "token %d is not in the window", id)
			}
		}
	}
}

// effectiveLastN maps PenaltyLastN to the window limit as New does.
func effectiveLastN(n int) int {
	if n == 0 {
		return DefaultPenaltyLastN
	}
	return n
}

func TestArgmax(t *testing.T) {
	tests := []struct {
		logits []float32
		want   int
	}{
		{[]float32{1, 3, 2}, 1},
		{[]float32{3, 1, 3, 3}, 0},
		{[]float32{1, 2, 5, 5}, 2},
		{[]float32{-inf32, -inf32, -inf32}, 0},
		{[]float32{-inf32, -1e30, -inf32}, 1},
		{[]float32{negZ, 0, negZ}, 0},
		{[]float32{-1, negZ, 0}, 1},
		{[]float32{1, inf32, inf32}, 1},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, argmax(tt.logits), "%v", tt.logits)
	}
}

func TestOrderingMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for trial := range 200 {
		vocab := 1 + rng.IntN(2500)
		if trial%3 == 0 {
			vocab = 1 + rng.IntN(12)
		}
		logits := randomLogits(rng, vocab)
		want := naiveOrder(logits)

		keys := make([]uint64, vocab)
		tmp := make([]uint64, vocab)
		out := make([]candidate, vocab)
		assert.Equal(t, want, idsOf(sortAll(logits, keys, tmp, out)), "sortAll trial %d", trial)

		for _, k := range []int{1, min(2, vocab), 1 + rng.IntN(vocab), vocab} {
			got := selectTopK(logits, k, make([]candidate, k))
			require.Equal(t, want[:k], idsOf(got), "selectTopK k=%d trial %d logits %v", k, trial, logits)
			for i, c := range got {
				require.Equal(t, math.Float32bits(logits[c.id]), math.Float32bits(c.logit), "candidate %d carries its logit", i)
			}
		}
	}
}

func TestDescendingKeyOrder(t *testing.T) {
	vals := []float32{-inf32, -math.MaxFloat32, -1, -math.SmallestNonzeroFloat32, negZ, 0,
		math.SmallestNonzeroFloat32, 1, math.MaxFloat32, inf32}
	for i, a := range vals {
		for j, b := range vals {
			ka, kb := descendingKey(a), descendingKey(b)
			switch {
			case a > b:
				assert.Less(t, ka, kb, "%v before %v", a, b)
			case a == b:
				assert.Equal(t, ka, kb, "%v equals %v (%d, %d)", a, b, i, j)
			default:
				assert.Greater(t, ka, kb, "%v after %v", a, b)
			}
		}
	}
}

func TestSoftmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for range 300 {
		n := 1 + rng.IntN(50)
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(rng.NormFloat64() * 5)
		}
		temp := float32(0.05 + rng.Float64()*3)
		c := sortAll(logits, make([]uint64, n), make([]uint64, n), make([]candidate, n))
		got := softmax(slices.Clone(c), temp)
		require.NotEmpty(t, got)
		// Reference: softmax with math.Exp in float64 over every candidate.
		var z float64
		ref := make([]float64, n)
		for i, x := range c {
			ref[i] = math.Exp(float64(x.logit)/float64(temp) - float64(c[0].logit)/float64(temp))
			z += ref[i]
		}
		var sum float64
		for i := range c {
			if i >= len(got) {
				// Dropped: negligible next to the maximum.
				assert.Less(t, ref[i], 0x1p-60)
				continue
			}
			assert.Equal(t, c[i].id, got[i].id)
			assert.InDelta(t, ref[i]/z, got[i].p, 1e-14)
			assert.Greater(t, got[i].p, 0.0)
			sum += got[i].p
		}
		assert.InDelta(t, 1, sum, 1e-14)
	}

	c := []candidate{{0, inf32, 0}, {1, inf32, 0}, {2, 1e30, 0}, {3, -inf32, 0}}
	assert.Equal(t, []float64{0.5, 0.5}, probsOf(softmax(c, 0.5)), "+Inf tokens share equally")

	c = []candidate{{0, 3e38, 0}, {1, 3e38 - 3e31, 0}, {2, -3e38, 0}}
	assert.Equal(t, []float64{1}, probsOf(softmax(c, 1e-30)), "a tiny temperature does not overflow")

	c = []candidate{{0, 1, 0}, {1, -40.9999, 0}, {2, -41.0001, 0}, {3, -inf32, 0}}
	assert.Len(t, softmax(c, 1), 2, "cut-off at x_0-42 = -41: -40.9999 stays, -41.0001 goes, -Inf (banned) goes")

	c = []candidate{{0, -inf32, 0}, {1, -inf32, 0}}
	assert.Nil(t, softmax(c, 1), "all -Inf has no distribution")
}

func TestTopP(t *testing.T) {
	// Probabilities are binary fractions, so every running sum is exact and
	// "cumulative == p" is a real boundary case.
	probs := []float64{0.5, 0.25, 0.125, 0.0625, 0.0625}
	tests := []struct {
		p    float32
		want int
	}{
		{1e-6, 1},
		{0.5, 1},       // cumulative 0.5 reaches p exactly: keep 1
		{0.5000001, 2}, // just above
		{0.75, 2},
		{0.875, 3},
		{0.9, 4},
		{0.9375, 4},
		{0.99, 5},
	}
	for _, tt := range tests {
		c := make([]candidate, len(probs))
		for i, q := range probs {
			c[i] = candidate{id: int32(i), p: q}
		}
		assert.Equal(t, tt.want, topP(c, tt.p), "top_p %v", tt.p)
		assert.Equal(t, naiveTopPCount(probs, tt.p), topP(c, tt.p), "naive, top_p %v", tt.p)
	}
}

// naiveTopPCount is the smallest m whose first m probabilities sum to >= p.
func naiveTopPCount(probs []float64, p float32) int {
	for m := 1; m <= len(probs); m++ {
		var s float64
		for _, q := range probs[:m] {
			s += q
		}
		if s >= float64(p) {
			return m
		}
	}
	return len(probs)
}

func TestMinP(t *testing.T) {
	probs := []float64{0.4, 0.2, 0.2, 0.1, 0.05, 0.05}
	tests := []struct {
		minP float32
		want []int32
	}{
		{0.125, []int32{0, 1, 2, 3, 4, 5}}, // threshold 0.05 exactly: the 0.05s stay
		{0.25, []int32{0, 1, 2, 3}},        // threshold 0.1 exactly
		{0.5, []int32{0, 1, 2}},            // threshold 0.2: ties at the threshold stay
		{0.51, []int32{0}},
		{1, []int32{0}},
	}
	for _, tt := range tests {
		c := make([]candidate, len(probs))
		for i, q := range probs {
			c[i] = candidate{id: int32(i), p: q}
		}
		got := minP(c, tt.minP)
		var want []int32
		for i, q := range probs {
			if q >= float64(tt.minP)*probs[0] {
				want = append(want, int32(i))
			}
		}
		assert.Equal(t, want, idsOf32(got), "naive, min_p %v", tt.minP)
		assert.Equal(t, tt.want, idsOf32(got), "min_p %v", tt.minP)
	}
	c := []candidate{{0, 0, 0.25}, {1, 0, 0.25}, {2, 0, 0.25}, {3, 0, 0.25}}
	assert.Len(t, minP(c, 1), 4, "min_p 1 keeps every token tied with the maximum")
}

func TestDraw(t *testing.T) {
	c := []candidate{{id: 7, p: 0.5}, {id: 8, p: 0}, {id: 9, p: 0.25}, {id: 10, p: 0.25}}
	tests := []struct {
		u    float64
		want int
	}{
		{0, 0},
		{0.4999999, 0},
		{0.5, 2}, // the running sum 0.5 does not exceed 0.5; the zero-probability candidate is skipped
		{0.7499999, 2},
		{0.75, 3},
		{1 - 0x1p-53, 3},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, draw(c, tt.u, totalP(c)), "u=%v", tt.u)
	}
	// Kept probabilities that do not sum to 1 are renormalised: 0.25+0.125.
	c = []candidate{{id: 0, p: 0.25}, {id: 1, p: 0.125}}
	assert.Equal(t, 0, draw(c, 0.66, totalP(c)))
	assert.Equal(t, 1, draw(c, 0.67, totalP(c)))
}

// randomLogits returns logits with many ties and every special value the
// chain must order: ±Inf, ±0, NaN already mapped to -Inf as loadLogits would.
func randomLogits(rng *rand.Rand, n int) []float32 {
	pool := []float32{-inf32, inf32, 0, negZ, 1, -1, 2.5, 1e30, -1e30}
	out := make([]float32, n)
	for i := range out {
		switch rng.IntN(4) {
		case 0:
			out[i] = pool[rng.IntN(len(pool))]
		case 1:
			out[i] = float32(rng.IntN(5))
		default:
			out[i] = float32(rng.NormFloat64() * 4)
		}
	}
	return out
}

func idsOf(c []candidate) []int {
	ids := make([]int, len(c))
	for i, x := range c {
		ids[i] = int(x.id)
	}
	return ids
}

func idsOf32(c []candidate) []int32 {
	ids := make([]int32, len(c))
	for i, x := range c {
		ids[i] = x.id
	}
	return ids
}

func probsOf(c []candidate) []float64 {
	ps := make([]float64, len(c))
	for i, x := range c {
		ps[i] = x.p
	}
	return ps
}

func bitsOf(x []float32) []uint32 {
	b := make([]uint32, len(x))
	for i, v := range x {
		b[i] = math.Float32bits(v)
	}
	return b
}
