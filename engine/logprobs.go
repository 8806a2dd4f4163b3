package engine

import (
	"math"

	"github.com/wasmlm/wasmlm/internal/fmath"
)

// MaxTopLogprobs is the most alternatives a token's Logprobs may list
// (GenerateOptions.TopLogprobs): OpenAI's bound for top_logprobs.
const MaxTopLogprobs = 20

// TokenLogprob is a token and its log-probability.
type TokenLogprob struct {
	ID      int
	Logprob float64
}

// Logprobs is what the model thought of a generated token: its
// log-probability and the TopLogprobs most likely tokens with theirs, most
// likely first (lowest id first among equals). They are the log-softmax
// of the model's own logits, before the sampling chain (bias, penalties,
// temperature, top-k/p) and a grammar's mask shape them, computed in
// float64: what the model says, not what was drawn from.
type Logprobs struct {
	Logprob float64
	Top     []TokenLogprob
}

// logprobState computes Logprobs without allocating: observe reads the
// logits before anything changes them, pick reports the chosen token's.
type logprobState struct {
	n      int     // alternatives to list
	logSum float64 // log Σ exp(logit)
	top    [MaxTopLogprobs]TokenLogprob
	out    Logprobs
}

// observe takes the logits' log-sum-exp and their n largest, as
// log-probabilities.
func (l *logprobState) observe(logits []float32) {
	top := l.top[:0]
	peak := math.Inf(-1)
	for id, x := range logits {
		v := float64(x)
		peak = max(peak, v)
		if len(top) == l.n && (l.n == 0 || v <= top[len(top)-1].Logprob) {
			continue // ties keep the lower id, met first
		}
		if len(top) < l.n {
			top = append(top, TokenLogprob{})
		}
		i := len(top) - 1
		for ; i > 0 && top[i-1].Logprob < v; i-- {
			top[i] = top[i-1]
		}
		top[i] = TokenLogprob{ID: id, Logprob: v}
	}
	sum := 0.0
	if !math.IsInf(peak, -1) {
		for _, x := range logits {
			sum += fmath.Exp64(float64(x) - peak)
		}
	}
	l.logSum = peak + fmath.Log64(sum)
	for i := range top {
		top[i].Logprob -= l.logSum
	}
	l.out.Top = top
}

// pick is the Logprobs of id, whose logit is logit (unchanged by a mask:
// a grammar bans tokens, it does not move the logit of one it allows).
func (l *logprobState) pick(logit float32) *Logprobs {
	l.out.Logprob = float64(logit) - l.logSum
	return &l.out
}
