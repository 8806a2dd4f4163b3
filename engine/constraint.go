package engine

import "fmt"

// Constraint holds a generation's text to a language: a grammar, in
// practice, which the hosts compile from a response format, a GBNF
// grammar or a forced tool call (package policy). The engine asks only
// what sampling needs: which tokens may come next, and whether the text
// so far is whole. A Constraint may be used by many generations, one
// match each.
type Constraint interface {
	// Start begins one generation's match. ends are the ids that end a
	// generation (the vocabulary's end-of-generation tokens and
	// GenerateOptions.StopTokens): the match allows them only where the
	// text so far is a whole match.
	Start(ends []int) ConstraintMatch
}

// ConstraintMatch is one generation's progress through a Constraint.
type ConstraintMatch interface {
	// Mask bans (sets to -Inf) the logit of every token that cannot
	// continue the text, ahead of the sampling chain. budget is how many
	// tokens the generation may still write, so that a text near its limit
	// can be steered to a whole match. complete is true when the text is a
	// whole match that no token can extend: the generation is over.
	Mask(logits []float32, budget int) (complete bool, err error)
	// Accept moves the match past piece, the text a sampled token adds.
	Accept(piece []byte) error
	// Accepting reports whether the text so far is a whole match.
	Accepting() bool
}

// constraint is a generation's match, nil without a Constraint.
type constraint struct {
	match ConstraintMatch
	piece []byte
}

// newConstraint starts opts.Constraint's match; the end-of-generation ids and
// the options' stop tokens are allowed where the text is a whole match.
func (s *Session) newConstraint(opts GenerateOptions) *constraint {
	if opts.Constraint == nil {
		return nil
	}
	sp := s.model.tokenizer.Special()
	ends := append([]int{sp.EOS, sp.EOT}, opts.StopTokens...)
	return &constraint{match: opts.Constraint.Start(ends)}
}

// mask bans the tokens the constraint does not allow next, budget being
// the tokens the generation may still write. done is true when the text
// is a whole match that no token can extend and the vocabulary has no
// end-of-generation token to sample: the generation is over.
func (c *constraint) mask(logits []float32, budget int) (done bool, err error) {
	if c == nil {
		return false, nil
	}
	complete, err := c.match.Mask(logits, budget)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrGrammar, err)
	}
	return complete, nil
}

// accept moves the match past the token's text.
func (c *constraint) accept(m *Model, prev, id int) error {
	if c == nil {
		return nil
	}
	c.piece = m.tokenizer.AppendPiece(c.piece[:0], prev, id)
	if err := c.match.Accept(c.piece); err != nil {
		return fmt.Errorf("%w: %w", ErrGrammar, err)
	}
	return nil
}

// complete reports whether the text so far is a whole match of the
// constraint that no token can extend (false without one). It masks
// scratch, logits the generation no longer needs.
func (c *constraint) complete(scratch []float32) (bool, error) {
	if c == nil || !c.match.Accepting() {
		return false, nil
	}
	return c.mask(scratch, 0)
}
