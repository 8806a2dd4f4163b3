package sampling

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// FuzzSample feeds arbitrary logits (little-endian float32s, so NaN, ±Inf,
// subnormals and ±MaxFloat32 all occur), arbitrary parameters and an
// arbitrary history. Invalid parameters must be refused with ErrInvalidParams;
// the same parameters folded into their valid ranges must then sample without
// panicking, return an id in range, never return a banned token while another
// is allowed, agree with argmax when greedy, and give the same id through
// SampleTrace with a consistent trace.
func FuzzSample(f *testing.F) {
	f.Fuzz(func(t *testing.T, logitBytes, history []byte, temperature, topP, minP, repeat, presence, frequency float32,
		topK, lastN, biasID int, biasVal float32, seed uint64) {
		vocab := min(len(logitBytes)/4, 4096)
		if vocab == 0 {
			return
		}
		logits := make([]float32, vocab)
		for i := range logits {
			logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(logitBytes[4*i:]))
		}
		p := Params{
			Temperature: temperature, TopK: topK, TopP: topP, MinP: minP, RepeatPenalty: repeat,
			PresencePenalty: presence, FrequencyPenalty: frequency, PenaltyLastN: lastN,
			LogitBias: map[int]float32{biasID: biasVal}, Seed: seed,
		}
		if err := p.Validate(vocab); err != nil {
			if _, newErr := New(p, vocab); !errors.Is(err, ErrInvalidParams) || !errors.Is(newErr, ErrInvalidParams) {
				t.Fatalf("invalid params not refused with ErrInvalidParams: %v / %v", err, newErr)
			}
		}
		p = foldValid(p, vocab)
		if err := p.Validate(vocab); err != nil {
			t.Fatalf("folded params still invalid: %v", err)
		}

		s, err := New(p, vocab)
		if err != nil {
			t.Fatal(err)
		}
		traced, err := New(p, vocab)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range history {
			s.Accept(int(b) - 8) // a few ids out of range on both sides
			traced.Accept(int(b) - 8)
		}
		for step := range 3 {
			id := s.Sample(logits)
			if id < 0 || id >= vocab {
				t.Fatalf("step %d: id %d out of [0, %d)", step, id, vocab)
			}
			work := s.work
			best := argmaxNaive(work)
			if !math.IsInf(float64(work[best]), -1) && math.IsInf(float64(work[id]), -1) {
				t.Fatalf("step %d: chose banned token %d", step, id)
			}
			if p.Temperature == 0 && id != best {
				t.Fatalf("step %d: greedy chose %d, argmax is %d", step, id, best)
			}
			var tr Trace
			if got := traced.SampleTrace(logits, &tr); got != id || tr.Chosen != id {
				t.Fatalf("step %d: SampleTrace chose %d (trace %d), Sample %d", step, got, tr.Chosen, id)
			}
			checkTrace(t, &tr, vocab)
			s.Accept(id)
			traced.Accept(id)
		}
		// A wrong length must not panic either.
		if id := s.Sample(logits[:vocab/2]); id < 0 || id >= vocab {
			t.Fatalf("short logits: id %d", id)
		}
	})
}

// foldValid maps every field of p into its valid range, keeping as much of
// the fuzzer's choice as it can.
func foldValid(p Params, vocab int) Params {
	unit := func(x float32) float32 {
		if x != x || math.IsInf(float64(x), 0) {
			return 0
		}
		x = float32(math.Abs(float64(x)))
		if x > 1 {
			x = float32(math.Mod(float64(x), 1))
		}
		return x
	}
	p.Temperature = unit(p.Temperature) * 4
	p.TopP = unit(p.TopP)
	p.MinP = unit(p.MinP)
	p.RepeatPenalty = unit(p.RepeatPenalty) * 3
	p.PresencePenalty = unit(p.PresencePenalty)*4 - 2
	p.FrequencyPenalty = unit(p.FrequencyPenalty)*4 - 2
	p.TopK = max(p.TopK, 0)
	p.PenaltyLastN = max(p.PenaltyLastN, -1)
	bias := map[int]float32{}
	for id, v := range p.LogitBias {
		id = ((id % vocab) + vocab) % vocab
		if v != v || math.IsInf(float64(v), 1) {
			v = float32(math.Inf(-1))
		}
		bias[id] = v
	}
	p.LogitBias = bias
	return p
}

// argmaxNaive is the first index of the largest value.
func argmaxNaive(x []float32) int {
	best := 0
	for i := range x {
		if x[i] > x[best] {
			best = i
		}
	}
	return best
}

// checkTrace checks the invariants every trace has.
func checkTrace(t *testing.T, tr *Trace, vocab int) {
	t.Helper()
	if tr.N != min(TraceLen, vocab) || tr.Kept < 1 || tr.Kept > vocab || tr.U < 0 || tr.U >= 1 {
		t.Fatalf("trace header %+v", tr)
	}
	var final float64
	for j, e := range tr.Top[:tr.N] {
		for _, q := range []float64{e.Prob, e.ProbTemp, e.ProbFinal} {
			if !(q >= 0 && q <= 1) {
				t.Fatalf("trace entry %d: probability %v", j, q)
			}
		}
		if j > 0 && before(candidate{id: int32(e.ID), logit: e.Logit}, candidate{id: int32(tr.Top[j-1].ID), logit: tr.Top[j-1].Logit}) {
			t.Fatalf("trace entries %d and %d out of order", j-1, j)
		}
		final += e.ProbFinal
	}
	if final > 1+1e-9 {
		t.Fatalf("final probabilities sum to %v", final)
	}
}
