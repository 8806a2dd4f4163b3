package sampling

import "math"

// TraceLen is the number of most likely tokens a Trace describes.
const TraceLen = 10

// TraceEntry describes one of the most likely tokens at one sampling step and
// the probability each stage of the chain gives it.
type TraceEntry struct {
	// ID is the token id.
	ID int
	// Logit is the token's logit after logit bias and penalties, before
	// temperature: the value that orders the candidates.
	Logit float32
	// Prob is the plain softmax of the logits (temperature 1) over the whole
	// vocabulary: what the model says after bias and penalties. Like the
	// chain, it counts a token as 0 when its weight is below e**-42 of the
	// largest.
	Prob float64
	// ProbTemp is the softmax of logit/Temperature over the whole vocabulary,
	// before any cut; with Temperature 0 (greedy) it is 1 for the chosen token
	// and 0 for the others, the limit as the temperature goes to 0.
	ProbTemp float64
	// ProbFinal is the probability the draw used: after top-k, top-p and
	// min-p, renormalised over the candidates kept; 0 if the token was cut.
	ProbFinal float64
}

// Trace describes one sampling step for display (the demo page's "why this
// token" view). Its arrays are fixed-size, so filling it allocates nothing.
// When every logit is -Inf there is no distribution: Prob is 0 everywhere,
// and so is ProbTemp unless greedy; the chosen id 0 has ProbFinal 1.
type Trace struct {
	// Top holds the N most likely tokens after bias and penalties, in
	// candidate order (highest logit first, then lowest id).
	Top [TraceLen]TraceEntry
	// N is the number of valid entries in Top: min(TraceLen, vocabulary size).
	N int
	// Kept is the number of candidates left for the draw after top-k, top-p
	// and min-p (1 when greedy).
	Kept int
	// Chosen is the id Sample returned.
	Chosen int
	// ChosenRank is the index of Chosen among the kept candidates in candidate
	// order (0 = most likely); Chosen is in Top when ChosenRank < N.
	ChosenRank int
	// Greedy is true when Temperature is 0: no random number was drawn.
	Greedy bool
	// U is the uniform number in [0, 1) the draw used (0 when Greedy).
	U float64
}

// traceLogits fills tr.Top, tr.N, and each entry's Logit, Prob and ProbTemp
// from s.work (logits after bias and penalties, by id), resetting the rest.
func (s *Sampler) traceLogits(tr *Trace) {
	*tr = Trace{}
	top := selectTopK(s.work, min(TraceLen, s.vocab), s.traceTop[:])
	tr.N = len(top)
	for j, c := range top {
		tr.Top[j] = TraceEntry{ID: int(c.id), Logit: c.logit}
	}
	x0 := float64(top[0].logit)
	if math.IsInf(x0, -1) { // every token is banned: no distribution
		return
	}
	z1 := 0.0
	for _, l := range s.work {
		z1 += weight(float64(l), x0)
	}
	for j := range top {
		tr.Top[j].Prob = weight(float64(top[j].logit), x0) / z1
	}
	t := s.params.Temperature
	switch t {
	case 0: // greedy: set when the token is known
	case 1:
		for j := range top {
			tr.Top[j].ProbTemp = tr.Top[j].Prob
		}
	default:
		// The same arithmetic as softmax, over the whole vocabulary.
		xt := x0 / float64(t)
		zt := 0.0
		for _, l := range s.work {
			zt += weight(float64(l)/float64(t), xt)
		}
		for j := range top {
			tr.Top[j].ProbTemp = weight(float64(top[j].logit)/float64(t), xt) / zt
		}
	}
}

// setGreedy records the argmax choice.
func (tr *Trace) setGreedy(id int) {
	tr.Greedy = true
	tr.Kept = 1
	tr.Chosen = id
	for j := range tr.Top[:tr.N] {
		if tr.Top[j].ID == id {
			tr.Top[j].ProbTemp = 1
			tr.Top[j].ProbFinal = 1
		}
	}
}

// setBanned records the choice made when every logit is -Inf.
func (tr *Trace) setBanned(id int, u float64) {
	tr.U = u
	tr.Kept = 1
	tr.Chosen = id
	for j := range tr.Top[:tr.N] {
		if tr.Top[j].ID == id {
			tr.Top[j].ProbFinal = 1
		}
	}
}

// setDraw records a draw of kept[i] with uniform u, kept summing to total.
func (tr *Trace) setDraw(kept []candidate, i int, u, total float64) {
	tr.U = u
	tr.Kept = len(kept)
	tr.Chosen = int(kept[i].id)
	tr.ChosenRank = i
	// kept is in candidate order and Top holds the first TraceLen tokens of
	// that order, so a kept Top entry is among the first TraceLen kept ones.
	head := kept[:min(len(kept), TraceLen)]
	for j := range tr.Top[:tr.N] {
		for _, c := range head {
			if int(c.id) == tr.Top[j].ID {
				tr.Top[j].ProbFinal = c.p / total
				break
			}
		}
	}
}
