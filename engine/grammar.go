package engine

import (
	"fmt"
	"strings"
	"sync"

	"github.com/wasmlm/wasmlm/grammar"
)

// grammarCacheSize is how many compiled grammars a model keeps, most recent
// first: a grammar's tables and token masks grow as it is used, so a
// schema sent again (by a form, an agent's tool set) is masked from memory.
const grammarCacheSize = 4

// grammarState is what a model builds for grammars on first use: its
// vocabulary as a masking trie, and the recently compiled grammars.
type grammarState struct {
	once  sync.Once
	vocab *grammar.Vocab

	mu     sync.Mutex
	recent []compiledGrammar
}

type compiledGrammar struct {
	src string
	g   *grammar.Grammar
}

// grammarVocab is the model's vocabulary arranged for grammar masks, built
// on first use (a few tens of milliseconds for 150k tokens).
func (m *Model) grammarVocab() *grammar.Vocab {
	m.grammars.once.Do(func() {
		n := m.tokenizer.VocabSize()
		pieces := make([][]byte, n)
		for id := range n {
			pieces[id] = m.tokenizer.AppendPiece(nil, -1, id)
		}
		m.grammars.vocab = grammar.NewVocab(pieces)
	})
	return m.grammars.vocab
}

// Grammar compiles GBNF source (grammar.Parse) for GenerateOptions.Grammar,
// reusing the grammar compiled for the same source recently, with the
// tables and token masks it has built. The error wraps grammar.ErrSyntax
// (and ErrInvalidOption: a bad grammar is a bad request).
func (m *Model) Grammar(src string) (*grammar.Grammar, error) {
	gs := m.grammars
	gs.mu.Lock()
	for i, c := range gs.recent {
		if c.src == src {
			copy(gs.recent[1:i+1], gs.recent[:i])
			gs.recent[0] = c
			gs.mu.Unlock()
			return c.g, nil
		}
	}
	gs.mu.Unlock()
	g, err := grammar.Parse(src)
	if err != nil {
		why := strings.TrimPrefix(strings.TrimPrefix(err.Error(), grammar.ErrSyntax.Error()+": "), grammar.ErrTooComplex.Error()+": ")
		return nil, &OptionError{Field: "grammar", Problem: "is not a grammar this engine takes: " + why, Err: err}
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if len(gs.recent) < grammarCacheSize {
		gs.recent = append(gs.recent, compiledGrammar{})
	}
	copy(gs.recent[1:], gs.recent)
	gs.recent[0] = compiledGrammar{src, g}
	return g, nil
}

// constraint is a generation's grammar match, nil without a grammar.
type constraint struct {
	c     *grammar.Constraint
	piece []byte
}

// newConstraint starts opts.Grammar's match; the end-of-generation ids and
// the options' stop tokens are allowed where the text is a whole match.
func (s *Session) newConstraint(opts GenerateOptions) *constraint {
	if opts.Grammar == nil {
		return nil
	}
	sp := s.model.tokenizer.Special()
	ends := append([]int{sp.EOS, sp.EOT}, opts.StopTokens...)
	return &constraint{c: grammar.NewConstraint(opts.Grammar, s.model.grammarVocab(), ends)}
}

// mask bans the tokens the grammar does not allow next, budget being the
// tokens the generation may still write (grammar.Constraint.Mask steers a
// text near its limit to a whole match). done is true when
// the text is a whole match that no token can extend and the vocabulary
// has no end-of-generation token to sample: the generation is over.
func (c *constraint) mask(logits []float32, budget int) (done bool, err error) {
	if c == nil {
		return false, nil
	}
	complete, err := c.c.Mask(logits, budget)
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
	if err := c.c.Accept(c.piece); err != nil {
		return fmt.Errorf("%w: %w", ErrGrammar, err)
	}
	return nil
}

// whole reports whether the text so far is a whole match of the grammar
// (false without one).
func (c *constraint) whole() bool {
	return c != nil && c.c.Accepting()
}
