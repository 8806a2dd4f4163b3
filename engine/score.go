package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Score evaluates tokens at positions pos, pos+1, … as a prompt is
// evaluated (in blocks of the session's PromptBlock), and calls fn after
// each token i with the next-token logits that follow it: what a
// perplexity or a prompt's log-probabilities need, for the price of one
// prompt evaluation. The logits are valid during the call only. As
// Forward, it leaves the tokens' keys and values in the cache and forgets
// the cached conversation; an error from fn stops it and is returned. It
// fails with ErrBusy while a generation runs.
func (s *Session) Score(tokens []int, pos int, fn func(i int, logits []float32) error) error {
	if !s.mu.TryLock() {
		return ErrBusy
	}
	defer s.mu.Unlock()
	if !s.model.Generates() {
		return errEncoder(s.model)
	}
	if s.model.part != nil {
		return errScoreSplit
	}
	if pos < 0 || pos+len(tokens) > s.context {
		return optionError("position", "must be in 0..%d for every token, got %d..%d", s.context-1, pos, pos+len(tokens)-1)
	}
	for i, t := range tokens {
		if t < 0 || t >= s.model.config.VocabSize {
			return optionError("token", "must be in 0..%d, got %d (tokens[%d])", s.model.config.VocabSize-1, t, i)
		}
	}
	s.tokens = s.tokens[:0]
	defer func() { s.score = nil }()
	for at := 0; at < len(tokens); {
		n := min(s.promptBlock, len(tokens)-at)
		first := at
		s.score = func(i int, logits []float32) error { return fn(first+i, logits) }
		if err := s.forwardBlock(tokens[at:at+n], pos+at, false); err != nil {
			return err
		}
		at += n
	}
	return nil
}

// scoreRows computes the next-token logits of each of the n rows of x
// (the block's final states) on the CPU, as forwardBlock computes the
// last one's, and hands each to s.score.
func (s *Session) scoreRows(tokens []int, x []float32, pos int) error {
	c, w, st := &s.model.config, s.model.weights, s.state
	for i := range tokens {
		last := row(x, i, c.Dim)
		rmsNorm(last, last, w.OutputNorm, c.NormEps)
		s.products(last, 1, tensor.Product{Out: st.logits, M: w.Output})
		if err := s.finishLogits(st.logits, tokens[i], pos+i); err != nil {
			return err
		}
		if err := s.score(i, st.logits); err != nil {
			return err
		}
	}
	return nil
}

// finishLogits scales and caps logits as the model says (forwardBlock's
// last steps) and checks them: an error wrapping ErrFormat that names
// token at pos where one is not finite.
func (s *Session) finishLogits(logits []float32, token, pos int) error {
	c := &s.model.config
	c.scaleLogits(logits)
	c.capLogits(logits)
	var g finiteGuard
	if g.check(logits, guardLogits, 0); g.what != "" {
		return g.err(s.model, token, pos)
	}
	return nil
}

// errScoreSplit: a split model's parts gather the logits of a block's last
// token only.
var errScoreSplit = fmt.Errorf("%w: a split model does not score", ErrUnsupported)
