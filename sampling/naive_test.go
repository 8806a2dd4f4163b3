package sampling

import (
	"math"
	"sort"

	"github.com/wasmlm/wasmlm/internal/fmath"
)

// Naive references: the chain written the obvious, slow way, straight from
// the package comment, sharing no code with the implementation except
// fmath.Exp64 (which the specification names).

// naiveOrder returns every id sorted by logit descending, then id ascending,
// with a stable comparison sort of the ids in ascending order.
func naiveOrder(logits []float32) []int {
	ids := make([]int, len(logits))
	for i := range ids {
		ids[i] = i
	}
	sort.SliceStable(ids, func(a, b int) bool { return logits[ids[a]] > logits[ids[b]] })
	return ids
}

// naiveWindow returns the tokens the penalties see: the last lastN of history
// (0 = 64, -1 = all).
func naiveWindow(history []int, lastN int) []int {
	if lastN == 0 {
		lastN = DefaultPenaltyLastN
	}
	if lastN < 0 || lastN >= len(history) {
		return history
	}
	return history[len(history)-lastN:]
}

// naiveLogits applies NaN → -Inf, the bias and the penalties to logits.
func naiveLogits(logits []float32, p Params, history []int) []float32 {
	out := make([]float32, len(logits))
	for i, l := range logits {
		if math.IsNaN(float64(l)) {
			l = float32(math.Inf(-1))
		}
		if b, ok := p.LogitBias[i]; ok {
			l += b
			if math.IsNaN(float64(l)) {
				l = float32(math.Inf(-1))
			}
		}
		out[i] = l
	}
	counts := map[int]int{}
	for _, id := range naiveWindow(history, p.PenaltyLastN) {
		counts[id]++
	}
	for id, c := range counts {
		l := out[id]
		if r := p.RepeatPenalty; r != 0 && r != 1 {
			if l > 0 {
				l = l / r
			} else {
				l = l * r
			}
		}
		f := float32(float32(c) * p.FrequencyPenalty)
		out[id] = l - (f + p.PresencePenalty)
	}
	return out
}

// naiveResult is the outcome of the non-greedy chain on adjusted logits.
type naiveResult struct {
	kept  []int     // ids kept for the draw, in candidate order
	final []float64 // their renormalised probabilities
	probs []float64 // their softmax probabilities before renormalising
}

// naiveChain runs top-k, temperature, softmax, top-p and min-p on logits that
// already carry bias and penalties, for Temperature > 0 and at least one
// finite logit.
func naiveChain(logits []float32, p Params) naiveResult {
	order := naiveOrder(logits)
	if p.TopK > 0 && p.TopK < len(order) {
		order = order[:p.TopK]
	}
	x0 := float64(logits[order[0]]) / float64(p.Temperature)
	var w []float64
	var kept []int
	for _, id := range order {
		xi := float64(logits[id]) / float64(p.Temperature)
		switch {
		case math.IsInf(x0, 1) && math.IsInf(xi, 1):
			w = append(w, 1)
		case math.IsInf(x0, 1), xi-x0 < -42: // weight 0 or negligible: dropped
			continue
		default:
			w = append(w, fmath.Exp64(xi-x0))
		}
		kept = append(kept, id)
	}
	order = kept
	var z float64
	for _, v := range w {
		z += v
	}
	probs := make([]float64, len(w))
	for i := range w {
		probs[i] = w[i] / z
	}
	m := len(order)
	if p.TopP > 0 && p.TopP < 1 {
		var s float64
		for i := range probs {
			s += probs[i]
			if s >= float64(p.TopP) {
				m = i + 1
				break
			}
		}
	}
	var r naiveResult
	for i := 0; i < m; i++ {
		if p.MinP > 0 && probs[i] < float64(p.MinP)*probs[0] {
			continue
		}
		r.kept = append(r.kept, order[i])
		r.probs = append(r.probs, probs[i])
	}
	var total float64
	for _, q := range r.probs {
		total += q
	}
	for _, q := range r.probs {
		r.final = append(r.final, q/total)
	}
	return r
}

// naiveDraw picks from r with uniform u by the documented walk.
func naiveDraw(r naiveResult, u float64) int {
	var total float64
	for _, q := range r.probs {
		total += q
	}
	var s float64
	for i, q := range r.probs {
		s += q
		if s > u*total {
			return r.kept[i]
		}
	}
	return r.kept[0]
}
