package policy

import (
	"errors"
	"strings"
	"sync"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/grammar"
)

// grammarCacheSize is how many compiled grammars a model's Grammars keeps,
// most recent first: a grammar's tables and token masks grow as it is
// used, so a schema sent again (by a form, an agent's tool set) is masked
// from memory.
const grammarCacheSize = 4

// Grammars compiles the grammars of one model's requests and binds them to
// its vocabulary, keeping the recently compiled ones. A host makes one per
// model it serves (NewGrammars); it is safe for concurrent use.
type Grammars struct {
	model *engine.Model

	once  sync.Once
	vocab *grammar.Vocab

	mu     sync.Mutex
	recent []*Grammar
}

// NewGrammars is the grammars of m's requests; nothing is built until the
// first grammar is.
func NewGrammars(m *engine.Model) *Grammars { return &Grammars{model: m} }

// Grammar is a compiled grammar bound to a model's vocabulary: the
// engine.Constraint of a generation held to it.
type Grammar struct {
	*grammar.Grammar
	src   string // the GBNF source, "" for a grammar bound with Bind
	vocab *grammar.Vocab
}

var _ engine.Constraint = (*Grammar)(nil)

// Start begins a generation's match (grammar.NewConstraint).
func (g *Grammar) Start(ends []int) engine.ConstraintMatch {
	return grammar.NewConstraint(g.Grammar, g.vocab, ends)
}

// vocabulary is the model's vocabulary arranged for grammar masks, built
// on first use (a few tens of milliseconds for 150k tokens).
func (gs *Grammars) vocabulary() *grammar.Vocab {
	gs.once.Do(func() {
		tok := gs.model.Tokenizer()
		n := tok.VocabSize()
		pieces := make([][]byte, n)
		for id := range n {
			pieces[id] = tok.AppendPiece(nil, -1, id)
		}
		gs.vocab = grammar.NewVocab(pieces)
	})
	return gs.vocab
}

// Bind binds a grammar parsed by the caller to the model's vocabulary,
// outside the cache.
func (gs *Grammars) Bind(g *grammar.Grammar) *Grammar {
	return &Grammar{Grammar: g, vocab: gs.vocabulary()}
}

// GrammarFailed is err, an error of a generation, as the request's fault
// when it is its grammar's (engine.ErrGrammar: past a matcher limit the
// checks before it could not foresee, a character no token writes): an
// *engine.OptionError naming field, the request field the grammar came in
// ("grammar", "response_format", "tools"). Other errors, and any error
// when field is "", are returned as they are.
func GrammarFailed(err error, field string) error {
	if field == "" || !errors.Is(err, engine.ErrGrammar) {
		return err
	}
	return &engine.OptionError{Field: field, Problem: "failed during the generation: " + err.Error(), Err: err}
}

// Compile compiles GBNF source (grammar.Parse), reusing the grammar
// compiled for the same source recently, with the tables and token masks
// it has built. The error is an *engine.OptionError naming "grammar",
// wrapping grammar.ErrSyntax: a bad grammar is a bad request.
func (gs *Grammars) Compile(src string) (*Grammar, error) {
	gs.mu.Lock()
	for i, c := range gs.recent {
		if c.src == src {
			copy(gs.recent[1:i+1], gs.recent[:i])
			gs.recent[0] = c
			gs.mu.Unlock()
			return c, nil
		}
	}
	gs.mu.Unlock()
	parsed, err := grammar.Parse(src)
	if err != nil {
		why := err.Error()
		for _, sentinel := range []error{grammar.ErrSyntax, grammar.ErrTooComplex, grammar.ErrEndless} {
			why = strings.TrimPrefix(why, sentinel.Error()+": ")
		}
		return nil, &engine.OptionError{Field: "grammar", Problem: "is not a grammar this engine takes: " + why, Err: err}
	}
	g := gs.Bind(parsed)
	g.src = src
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if len(gs.recent) < grammarCacheSize {
		gs.recent = append(gs.recent, nil)
	}
	copy(gs.recent[1:], gs.recent)
	gs.recent[0] = g
	return g, nil
}
