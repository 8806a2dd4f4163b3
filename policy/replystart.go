package policy

import (
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// A reply given its beginning (a final assistant message with prefix: true,
// Mistral's chat completions field, and the Prompt API's prefix) continues
// that text: the prompt ends with it, evaluated as given, and a grammar the
// reply is held to reads it first, so that the grammar holds the whole
// reply — the beginning and what the model writes after it.

// Continue makes p's reply start with text: its tokens (as plain text:
// special-token text is not parsed) follow the prompt, and the reply's
// readers read it before the generated text (ReplyPrefix), which returns
// it as the start of the reply's content.
func (p *ChatPrompt) Continue(m *engine.Model, text string) error {
	ids, err := m.Tokenizer().Encode(text, tokenizer.EncodeOptions{})
	if err != nil {
		return err
	}
	p.Tokens = append(p.Tokens, ids...)
	p.ReplyPrefix += text
	return nil
}

// After is c for a text whose first bytes, text, are already written: each
// match starts past them. The error (grammar.ErrRejected) says that c
// allows no text that starts with text.
func After(c engine.Constraint, text string) (engine.Constraint, error) {
	if err := c.Start(nil).Accept([]byte(text)); err != nil {
		return nil, err
	}
	return afterText{c: c, text: []byte(text)}, nil
}

// afterText is After's constraint.
type afterText struct {
	c    engine.Constraint
	text []byte
}

var _ engine.Constraint = afterText{}

// Start begins a match of the text after a.text.
func (a afterText) Start(ends []int) engine.ConstraintMatch {
	m := a.c.Start(ends)
	if err := m.Accept(a.text); err != nil {
		// After accepted the text; a matcher's limit may still refuse it
		// here: the generation fails with the error at its first token.
		return failedMatch{err}
	}
	return m
}

// failedMatch is a match that could not start: every call fails with err.
type failedMatch struct{ err error }

func (f failedMatch) Mask([]float32, int) (bool, error) { return false, f.err }
func (f failedMatch) Accept([]byte) error               { return f.err }
func (f failedMatch) Accepting() bool                   { return false }
