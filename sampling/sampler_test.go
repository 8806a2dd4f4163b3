package sampling

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustNew(t testing.TB, p Params, vocab int) *Sampler {
	t.Helper()
	s, err := New(p, vocab)
	require.NoError(t, err)
	return s
}

func TestGreedy(t *testing.T) {
	tests := []struct {
		name   string
		p      Params
		logits []float32
		want   int
	}{
		{"argmax", Params{}, []float32{0.1, 2, -3, 1.9}, 1},
		{"ties to lowest id", Params{}, []float32{1, 4, 2, 4, 4}, 1},
		{"-0 ties +0", Params{}, []float32{-1, negZ, 0}, 1},
		{"NaN ignored", Params{}, []float32{nan32, 1, nan32, 0}, 1},
		{"+Inf wins, lowest id", Params{}, []float32{5, inf32, 1, inf32}, 1},
		{"top-k/top-p/min-p ignored", Params{TopK: 2, TopP: 0.1, MinP: 0.9, Seed: 3}, []float32{0, 3, 1, 3}, 1},
		{"top-k 1", Params{TopK: 1}, []float32{0, 1, 5, 2}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, tt.p, len(tt.logits))
			assert.Equal(t, tt.want, s.Sample(tt.logits))
			// Reference: the first token of the naive order.
			assert.Equal(t, naiveOrder(naiveLogits(tt.logits, tt.p, nil))[0], s.Sample(tt.logits))
		})
	}
}

// runcLogits is llama2.c run.c's logit vector for stories260K after "Once upon
// a time", with run.c's own top 10 (see testdata/runc_logits_after_prompt.json).
type runcLogits struct {
	Top10  [][2]float64 `json:"top10"`
	Logits []float32    `json:"logits"`
}

func loadRunC(t *testing.T) runcLogits {
	t.Helper()
	b, err := os.ReadFile("testdata/runc_logits_after_prompt.json")
	require.NoError(t, err)
	var r runcLogits
	require.NoError(t, json.Unmarshal(b, &r))
	require.Len(t, r.Logits, 512)
	return r
}

func TestGreedyAndTraceOnRunCLogits(t *testing.T) {
	r := loadRunC(t)
	s := mustNew(t, Params{}, len(r.Logits))
	var tr Trace
	assert.Equal(t, 432, s.SampleTrace(r.Logits, &tr), "run.c's greedy choice")
	require.Equal(t, TraceLen, tr.N)
	for j, want := range r.Top10 {
		assert.Equal(t, int(want[0]), tr.Top[j].ID, "rank %d", j)
		assert.Equal(t, float32(want[1]), tr.Top[j].Logit, "rank %d", j)
	}
	assert.True(t, tr.Greedy)
	assert.Equal(t, 432, tr.Chosen)
	assert.Equal(t, 1.0, tr.Top[0].ProbTemp)
	assert.Equal(t, 1.0, tr.Top[0].ProbFinal)
	assert.Equal(t, 0.0, tr.Top[1].ProbFinal)

	// Prob is a plain softmax over all 512 logits.
	var z float64
	for _, l := range r.Logits {
		z += math.Exp(float64(l) - float64(r.Logits[432]))
	}
	for j := range tr.N {
		e := tr.Top[j]
		assert.InDelta(t, math.Exp(float64(e.Logit)-float64(r.Logits[432]))/z, e.Prob, 1e-14)
	}
}

func TestTemperatureNearZeroPicksArgmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for seed := range uint64(200) {
		logits := make([]float32, 100)
		for i := range logits {
			logits[i] = float32(rng.NormFloat64() * 3)
		}
		order := naiveOrder(logits)
		// A gap of 0.01 at temperature 1e-4 leaves the runner-up e**-100 of the mass.
		logits[order[0]] = logits[order[1]] + 0.01
		s := mustNew(t, Params{Temperature: 1e-4, Seed: seed}, len(logits))
		require.Equal(t, order[0], s.Sample(logits), "seed %d", seed)
	}
}

// TestChainMatchesNaive runs random small vocabularies (so the trace covers
// every token) with random parameters and history, and checks every stage
// the trace exposes against the naive chain: the kept set, the final
// probabilities, the full-vocabulary softmax at temperature 1 and T, and the
// drawn id for the trace's u.
func TestChainMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := range 3000 {
		vocab := 1 + rng.IntN(TraceLen)
		logits := make([]float32, vocab)
		for i := range logits {
			switch rng.IntN(6) {
			case 0:
				logits[i] = float32(rng.IntN(3)) // ties
			case 1:
				logits[i] = -inf32
			default:
				logits[i] = float32(rng.NormFloat64() * 2)
			}
		}
		if trial%50 == 0 {
			logits[rng.IntN(vocab)] = inf32
		}
		p := Params{
			Temperature:      []float32{0.3, 0.7, 1, 1.5, 4}[rng.IntN(5)],
			TopK:             rng.IntN(vocab + 2),
			TopP:             []float32{0, 0, 0.3, 0.5, 0.9, 1}[rng.IntN(6)],
			MinP:             []float32{0, 0, 0.05, 0.2, 0.5, 1}[rng.IntN(6)],
			RepeatPenalty:    []float32{0, 1.3}[rng.IntN(2)],
			PresencePenalty:  []float32{0, 0.5}[rng.IntN(2)],
			FrequencyPenalty: []float32{0, -0.7}[rng.IntN(2)],
			PenaltyLastN:     []int{-1, 0, 2}[rng.IntN(3)],
			Seed:             rng.Uint64(),
		}
		if rng.IntN(3) == 0 {
			p.LogitBias = map[int]float32{rng.IntN(vocab): float32(rng.NormFloat64()), rng.IntN(vocab): -inf32}
		}
		history := make([]int, rng.IntN(6))
		for i := range history {
			history[i] = rng.IntN(vocab)
		}

		s := mustNew(t, p, vocab)
		for _, id := range history {
			s.Accept(id)
		}
		var tr Trace
		got := s.SampleTrace(logits, &tr)

		adjusted := naiveLogits(logits, p, history)
		order := naiveOrder(adjusted)
		msg := []any{"trial %d params %+v logits %v history %v", trial, p, logits, history}
		require.Equal(t, vocab, tr.N, msg...)
		for j := range vocab {
			require.Equal(t, order[j], tr.Top[j].ID, msg...)
			require.Equal(t, math.Float32bits(adjusted[order[j]]), math.Float32bits(tr.Top[j].Logit), msg...)
		}
		if math.IsInf(float64(adjusted[order[0]]), -1) {
			require.Equal(t, 0, got, msg...) // every token banned
			continue
		}
		want := naiveChain(adjusted, p)
		require.Equal(t, len(want.kept), tr.Kept, msg...)
		final := map[int]float64{}
		for i, id := range want.kept {
			final[id] = want.final[i]
		}
		for j := range vocab {
			require.InDelta(t, final[tr.Top[j].ID], tr.Top[j].ProbFinal, 1e-15, msg...)
		}
		require.Equal(t, naiveDraw(want, tr.U), got, msg...)
		require.Equal(t, got, tr.Chosen, msg...)
		require.Equal(t, got, want.kept[tr.ChosenRank], msg...)

		for j, probs := range [][]float64{naiveSoftmaxAll(adjusted, 1), naiveSoftmaxAll(adjusted, p.Temperature)} {
			for i := range vocab {
				e := tr.Top[i]
				v := [2]float64{e.Prob, e.ProbTemp}[j]
				require.InDelta(t, probs[e.ID], v, 1e-14, msg...)
			}
		}
	}
}

// naiveSoftmaxAll is softmax(l/t) over a whole vector with math.Exp; tokens
// at +Inf share the mass when there are any.
func naiveSoftmaxAll(logits []float32, t float32) []float64 {
	out := make([]float64, len(logits))
	maxX := math.Inf(-1)
	for _, l := range logits {
		maxX = math.Max(maxX, float64(l)/float64(t))
	}
	var z float64
	for i, l := range logits {
		x := float64(l) / float64(t)
		switch {
		case math.IsInf(maxX, 1):
			if math.IsInf(x, 1) {
				out[i] = 1
			}
		default:
			out[i] = math.Exp(x - maxX)
		}
		z += out[i]
	}
	for i := range out {
		out[i] /= z
	}
	return out
}

// keptIDs runs one traced sample and returns the ids the draw could pick.
func keptIDs(t *testing.T, p Params, logits []float32) []int {
	t.Helper()
	s := mustNew(t, p, len(logits))
	var tr Trace
	s.SampleTrace(logits, &tr)
	var ids []int
	for _, e := range tr.Top[:tr.N] {
		if e.ProbFinal > 0 {
			ids = append(ids, e.ID)
		}
	}
	require.Len(t, ids, tr.Kept)
	return ids
}

func TestCutsHandBuilt(t *testing.T) {
	tests := []struct {
		name   string
		p      Params
		logits []float32
		want   []int
	}{
		// Four equal logits: p = 1/4 each, exactly, so the cumulative 0.5 equals top_p.
		{"top_p cumulative exactly p", Params{Temperature: 1, TopP: 0.5}, []float32{2, 2, 2, 2}, []int{0, 1}},
		{"top_p just above", Params{Temperature: 1, TopP: 0.5000001}, []float32{2, 2, 2, 2}, []int{0, 1, 2}},
		{"top_p keeps at least one", Params{Temperature: 1, TopP: 1e-9}, []float32{0, 5, 1}, []int{1}},
		{"top_k ties to lowest ids", Params{Temperature: 1, TopK: 2}, []float32{1, 3, 3, 2, 3}, []int{1, 2}},
		{"top_k 3", Params{Temperature: 1, TopK: 3}, []float32{1, 3, 3, 2, 3}, []int{1, 2, 4}},
		{"top_k above vocab", Params{Temperature: 1, TopK: 99}, []float32{1, 3, 2}, []int{1, 2, 0}},
		{"min_p 1 keeps ties", Params{Temperature: 1, MinP: 1}, []float32{0, 0, -inf32, 0, -1}, []int{0, 1, 3}},
		{"top_k then top_p", Params{Temperature: 1, TopK: 3, TopP: 0.5}, []float32{7, 7, 7, 7}, []int{0, 1}},
		{"banned token never kept", Params{Temperature: 1, LogitBias: map[int]float32{1: -inf32}}, []float32{1, 9, 1}, []int{0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ElementsMatch(t, tt.want, keptIDs(t, tt.p, tt.logits))
		})
	}
}

func TestPenaltyWindowThroughSampler(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for trial := range 200 {
		vocab := 1 + rng.IntN(30)
		p := Params{
			RepeatPenalty:    1.1 + float32(rng.Float64()),
			PresencePenalty:  float32(rng.Float64()*4 - 2),
			FrequencyPenalty: float32(rng.Float64()*4 - 2),
			PenaltyLastN:     []int{-1, 0, 1, 5, 17}[rng.IntN(5)],
		}
		s := mustNew(t, p, vocab)
		var history []int
		for step := range 150 {
			logits := make([]float32, vocab)
			for i := range logits {
				logits[i] = float32(rng.NormFloat64() * 3)
			}
			got := s.Sample(logits)
			want := naiveLogits(logits, p, history)
			require.Equal(t, bitsOf(want), bitsOf(s.work), "trial %d step %d", trial, step)
			require.Equal(t, naiveOrder(want)[0], got)
			id := rng.IntN(vocab)
			if rng.IntN(3) == 0 {
				id = got
			}
			s.Accept(id)
			history = append(history, id)
		}
		s.Reset()
		history = nil
		assert.Empty(t, s.window.present)
		assert.Equal(t, make([]int32, vocab), s.window.counts)
	}
}

func TestPenaltyWindowLongerThanPrealloc(t *testing.T) {
	const lastN = maxRingPrealloc + 1000
	s := mustNew(t, Params{PenaltyLastN: lastN, PresencePenalty: 1}, 7)
	var history []int
	for i := range lastN + 5000 {
		id := (i*i + i/3) % 7
		s.Accept(id)
		history = append(history, id)
	}
	want := make([]int32, 7)
	for _, id := range naiveWindow(history, lastN) {
		want[id]++
	}
	assert.Equal(t, want, s.window.counts)
}

func TestAcceptIgnoresOutOfRange(t *testing.T) {
	s := mustNew(t, Params{PresencePenalty: 1}, 4)
	s.Accept(-1)
	s.Accept(4)
	s.Accept(1 << 40)
	assert.Empty(t, s.window.present)
	assert.Equal(t, 3, s.Sample([]float32{0, 1, 2, 3}))
}

func TestLogitBiasAppliedFirst(t *testing.T) {
	// Bias first: (1 - 3) * 2 = -4. Penalty first would give 1/2 - 3 = -2.5.
	s := mustNew(t, Params{RepeatPenalty: 2, LogitBias: map[int]float32{0: -3}}, 2)
	s.Accept(0)
	s.Sample([]float32{1, -10})
	assert.Equal(t, float32(-4), s.work[0])

	// A bias changes the argmax.
	s = mustNew(t, Params{LogitBias: map[int]float32{2: 5}}, 3)
	assert.Equal(t, 2, s.Sample([]float32{3, 4, 0}))

	// The caller's map is copied: changing it later changes nothing.
	bias := map[int]float32{0: 10}
	s = mustNew(t, Params{LogitBias: bias}, 2)
	bias[0] = -10
	assert.Equal(t, 0, s.Sample([]float32{0, 1}))
}

func TestBannedTokensNeverDrawn(t *testing.T) {
	logits := []float32{1, 9, 1, inf32, 0.5}
	ban := map[int]float32{1: -inf32, 3: -inf32}
	assert.Equal(t, 0, mustNew(t, Params{LogitBias: ban}, 5).Sample(logits), "greedy skips banned +Inf and max")
	s := mustNew(t, Params{Temperature: 2, LogitBias: ban, Seed: 9}, 5)
	seen := map[int]int{}
	for range 5000 {
		seen[s.Sample(logits)]++
	}
	assert.Zero(t, seen[1])
	assert.Zero(t, seen[3])
	assert.Len(t, seen, 3)
}

func TestAllBanned(t *testing.T) {
	logits := []float32{nan32, -inf32, nan32, -inf32}
	for _, p := range []Params{{}, {Temperature: 1}, {Temperature: 1, TopK: 2, TopP: 0.5, MinP: 0.5}} {
		s := mustNew(t, p, 4)
		var tr Trace
		assert.Equal(t, 0, s.SampleTrace(logits, &tr), "%+v", p)
		assert.Equal(t, 0, tr.Chosen)
		assert.Equal(t, 1, tr.Kept)
		assert.Equal(t, 1.0, tr.Top[0].ProbFinal)
		assert.Equal(t, 0.0, tr.Top[0].Prob)
	}
	s := mustNew(t, Params{Temperature: 1, LogitBias: map[int]float32{0: -inf32, 1: -inf32}}, 2)
	assert.Equal(t, 0, s.Sample([]float32{inf32, 3}))
}

func TestPlusInfLogitsShare(t *testing.T) {
	s := mustNew(t, Params{Temperature: 1, Seed: 1}, 4)
	seen := map[int]int{}
	for range 4000 {
		seen[s.Sample([]float32{1, inf32, 3, inf32})]++
	}
	assert.Len(t, seen, 2)
	assert.InDelta(t, 2000, seen[1], 5*math.Sqrt(4000*0.25)) // 5 sigma
}

func TestWrongLengthNeverPanics(t *testing.T) {
	for _, p := range []Params{{}, {Temperature: 1}, {Temperature: 1, TopK: 2}} {
		s := mustNew(t, p, 5)
		assert.Equal(t, 0, s.Sample(nil), "no logits: all -Inf")
		assert.Equal(t, 1, s.Sample([]float32{0, 100}), "missing ids are -Inf")
		assert.Equal(t, 2, s.Sample([]float32{0, 0, 100, 0, 0, 1e9}), "extra logits ignored")
	}
}

func TestDeterminism(t *testing.T) {
	logits := make([]float32, 300)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range logits {
		logits[i] = float32(rng.NormFloat64())
	}
	run := func(s *Sampler, n int) []int {
		ids := make([]int, n)
		for i := range ids {
			ids[i] = s.Sample(logits)
			s.Accept(ids[i])
		}
		return ids
	}
	p := Params{Temperature: 1.3, TopK: 100, TopP: 0.95, MinP: 0.01, RepeatPenalty: 1.1, Seed: 42}
	a, b := mustNew(t, p, len(logits)), mustNew(t, p, len(logits))
	first := run(a, 500)
	assert.Equal(t, first, run(b, 500), "same seed, same ids")
	a.Reset()
	assert.Equal(t, first, run(a, 500), "Reset reproduces")
	p.Seed = 43
	assert.NotEqual(t, first, run(mustNew(t, p, len(logits)), 500), "another seed, other ids")
	p.Seed = 0
	assert.NotEqual(t, first, run(mustNew(t, p, len(logits)), 500), "seed 0 is a seed like any other")

	// SampleTrace consumes the PRNG exactly like Sample.
	p.Seed = 42
	c := mustNew(t, p, len(logits))
	var tr Trace
	for i, want := range first {
		var got int
		if i%2 == 0 {
			got = c.SampleTrace(logits, &tr)
		} else {
			got = c.Sample(logits)
		}
		require.Equal(t, want, got, "step %d", i)
		c.Accept(got)
	}
}
