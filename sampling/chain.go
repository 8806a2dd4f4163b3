package sampling

import (
	"math"

	"github.com/wasmlm/wasmlm/internal/fmath"
)

// The steps of the chain, in the order Sample runs them. Each is a small
// function over slices so that it can be tested alone against a naive
// reference; the package comment specifies the arithmetic of each exactly.

// negInf returns float32 -Inf (a function, as Go has no infinite constants
// and the package keeps no variables).
func negInf() float32 { return float32(math.Inf(-1)) }

// loadLogits copies logits into work (indexed by id), mapping NaN to -Inf and
// treating ids beyond len(logits) as -Inf, so that nothing downstream ever
// sees a NaN and a short vector cannot make Sample index out of range.
func loadLogits(work, logits []float32) {
	n := copy(work, logits)
	for i, l := range work[:n] {
		if l != l {
			work[i] = negInf()
		}
	}
	for i := n; i < len(work); i++ {
		work[i] = negInf()
	}
}

// applyLogitBias adds bias[j] to work[ids[j]]. A -Inf bias bans the token
// even if its logit is +Inf: the NaN that +Inf + -Inf makes becomes -Inf.
func applyLogitBias(work []float32, ids []int32, bias []float32) {
	for j, id := range ids {
		l := work[id] + bias[j]
		if l != l {
			l = negInf()
		}
		work[id] = l
	}
}

// applyPenalties changes the logit of every token in present (the distinct ids
// of the penalty window, counts[id] times each) the way llama.cpp does: first
// the repeat penalty (divide a positive logit, multiply any other, so the token
// always becomes less likely for repeat > 1), then subtract
// count*frequency + presence. Every product is rounded to float32 before it is
// added, so no platform fuses a multiply-add.
func applyPenalties(work []float32, present, counts []int32, repeat, presence, frequency float32) {
	useRepeat := repeat != 0 && repeat != 1
	for _, id := range present {
		l := work[id]
		if useRepeat {
			if l > 0 {
				l /= repeat
			} else {
				l *= repeat
			}
		}
		work[id] = l - (float32(float32(counts[id])*frequency) + presence)
	}
}

// argmax returns the id of the largest logit, the lowest id among equals (and
// 0 when every logit is -Inf). work is never empty and never holds NaN.
func argmax(work []float32) int {
	best, bestL := 0, work[0]
	for i, l := range work {
		if l > bestL {
			best, bestL = i, l
		}
	}
	return best
}

// negligible is the weight cut-off, in units of x: a candidate with
// x_i - x_0 < -42 has w_i < e**-42 < 2**-60 and leaves the set. Such a weight
// is below half an ulp of every running sum it would join (Z >= w_0 = 1, and
// the draw's running sum >= p_0 = 1/Z), so dropping it changes no sum and no
// drawn id; it only spares an exp for each of the many hopeless tokens of a
// peaked or cold distribution.
const negligible = -42

// softmax computes each candidate's probability at temperature t, c being in
// candidate order so c[0] holds the largest logit:
//
//	x_i = float64(logit_i) / float64(t)
//	w_i = exp(x_i - x_0), 0 if x_i - x_0 < negligible,
//	      or, when x_0 is +Inf, 1 if x_i is +Inf else 0
//	p_i = w_i / Z, Z = w_0 + w_1 + ... (float64, in order)
//
// and returns c cut before the first candidate of weight 0: x falls along c,
// so every later one has weight 0 too. -Inf (banned) logits always go.
// Dividing in float64 means no finite logit overflows however small t is.
// It returns nil when x_0 is -Inf: every token is banned and there is no
// distribution.
func softmax(c []candidate, t float32) []candidate {
	x0 := float64(c[0].logit) / float64(t)
	if math.IsInf(x0, -1) {
		return nil
	}
	z := 0.0
	for i := range c {
		w := weight(float64(c[i].logit)/float64(t), x0)
		if w == 0 {
			c = c[:i]
			break
		}
		c[i].p = w
		z += w
	}
	for i := range c {
		c[i].p /= z
	}
	return c
}

// weight is the unnormalised softmax weight of x when the largest value is
// x0 (> -Inf): 0 below the negligible cut-off, never 0 above it. Tokens at
// +Inf share the whole probability equally, which is the limit of the finite
// case and avoids Inf - Inf = NaN.
func weight(x, x0 float64) float64 {
	if math.IsInf(x0, 1) {
		if math.IsInf(x, 1) {
			return 1
		}
		return 0
	}
	d := x - x0
	if d < negligible {
		return 0
	}
	return fmath.Exp64(d)
}

// topP returns how many leading candidates (in candidate order) nucleus
// sampling keeps: the fewest whose running float64 sum of p reaches
// float64(p), at least 1, all of them if rounding stops the sum short.
func topP(c []candidate, p float32) int {
	sum := 0.0
	for i := range c {
		sum += c[i].p
		if sum >= float64(p) {
			return i + 1
		}
	}
	return len(c)
}

// minP keeps, in order, the candidates with p >= float64(minP) * c[0].p and
// returns them (compacted in place). c[0] has the largest probability, so it
// always stays.
func minP(c []candidate, minP float32) []candidate {
	threshold := float64(minP) * c[0].p
	kept := c[:0]
	for _, x := range c {
		if x.p >= threshold {
			kept = append(kept, x)
		}
	}
	return kept
}

// totalP is the float64 sum of p over c, in order; the draw accumulates in the
// same order, so its running sum ends exactly at this total.
func totalP(c []candidate) float64 {
	sum := 0.0
	for _, x := range c {
		sum += x.p
	}
	return sum
}

// draw returns the index of the first candidate at which the running float64
// sum of p exceeds u*total, u in [0, 1). Renormalising is folded in here:
// comparing against u*total is comparing the renormalised sum against u.
// Since u*total < total, the walk always stops; the final return only guards
// against a total that is not the sum of c.
func draw(c []candidate, u, total float64) int {
	target := u * total
	sum := 0.0
	for i := range c {
		sum += c[i].p
		if sum > target {
			return i
		}
	}
	return 0
}
