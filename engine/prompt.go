package engine

import (
	"context"
	"slices"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// Prompt is what a generation conditions on: token ids and, for a chat, the
// template's end-of-turn markers, which end the reply as an
// end-of-generation token does. Every host builds one with TextPrompt or
// policy.ChatPrompt and generates with Session.GeneratePrompt.
type Prompt struct {
	Tokens     []int    // the prompt's ids, with BOS if the vocabulary adds it
	StopTokens []int    // end-of-turn markers that are single tokens
	Stop       []string // end-of-turn markers that are text
}

// TextPrompt tokenizes text as a completion's prompt, adding BOS if the
// vocabulary does; with parseSpecial, special-token text (such as "<s>")
// becomes those tokens instead of being tokenized as characters.
func (m *Model) TextPrompt(text string, parseSpecial bool) (Prompt, error) {
	ids, err := m.tokenizer.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: parseSpecial})
	if err != nil {
		return Prompt{}, err
	}
	return Prompt{Tokens: ids}, nil
}

// MaxTokenBytes bounds the bytes of text one token of this model's
// vocabulary stands for: the longest token's text (a SentencePiece piece,
// with its U+2581 for a space; a byte-level BPE token in its byte
// alphabet; "<0xE2>" for a byte-fallback token; a special token's text).
// A text of n bytes is thus at least n / MaxTokenBytes tokens long, which
// lets a host refuse a text far longer than its context without
// tokenizing it (tokenizing a megabyte takes tens of megabytes).
func (m *Model) MaxTokenBytes() int { return m.maxTokenBytes }

// longestToken is the length of the longest token text of tok, at least 1.
func longestToken(tok tokenizer.Tokenizer) int {
	n := 1
	for id := range tok.VocabSize() {
		n = max(n, len(tok.TokenText(id)))
	}
	return n
}

// ChatTemplate is the file's tokenizer.chat_template (Jinja source), "" if
// it has none (policy.ChatTemplate recognises it).
func (m *Model) ChatTemplate() string { return m.chatTemplate }

// Generate tokenizes prompt (TextPrompt, with opts.ParseSpecial) and
// generates its completion (see GeneratePrompt).
func (s *Session) Generate(ctx context.Context, prompt string, opts GenerateOptions, onToken TokenFunc) (Result, error) {
	p, err := s.model.TextPrompt(prompt, opts.ParseSpecial)
	if err != nil {
		return Result{}, err
	}
	return s.GeneratePrompt(ctx, p, opts, onToken)
}

// GeneratePrompt generates from p: its stop conditions are added to opts'
// (see GenerateTokens). Stop strings of the caller's and a Constraint exclude
// each other (an *OptionError naming "stop"): a stop string would cut a
// text the grammar is to keep whole. (A template's end-of-turn text
// still stops it.)
func (s *Session) GeneratePrompt(ctx context.Context, p Prompt, opts GenerateOptions, onToken TokenFunc) (Result, error) {
	if opts.Constraint != nil && len(opts.Stop) > 0 {
		return Result{}, optionError("stop", "cannot be combined with a grammar (a JSON schema or object, a GBNF grammar, a forced tool call): a stop string could cut the text the grammar keeps whole")
	}
	if len(p.StopTokens) > 0 {
		opts.StopTokens = append(slices.Clip(opts.StopTokens), p.StopTokens...)
	}
	if len(p.Stop) > 0 {
		opts.Stop = append(slices.Clip(opts.Stop), p.Stop...)
	}
	return s.GenerateTokens(ctx, p.Tokens, opts, onToken)
}
