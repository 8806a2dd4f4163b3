package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// Prompt is what a generation conditions on: token ids and, for a chat, the
// template's end-of-turn markers, which end the reply as an
// end-of-generation token does. Every host builds one with TextPrompt or
// ChatPrompt and generates with Session.GeneratePrompt.
type Prompt struct {
	Tokens     []int    // the prompt's ids, with BOS if the vocabulary adds it
	StopTokens []int    // end-of-turn markers that are single tokens
	Stop       []string // end-of-turn markers that are text
	// ToolFormat is how the chat template writes tool calls (ChatPromptWith;
	// zero for a text prompt): hosts parse the reply's calls with it
	// (chat.ParseToolCalls, chat.ToolCallStream) and force them with
	// Model.ToolGrammar.
	ToolFormat chat.ToolFormat
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

// ChatTemplate is the template chat completions use with this model: the
// family recognised from the file's tokenizer.chat_template, or "plain"
// (message contents joined by newlines) when the model carries no template.
// A template that is present but not recognised is an error, never a silent
// fallback.
func (m *Model) ChatTemplate() (chat.Template, error) {
	if m.chatTemplate == "" {
		return chat.Named("plain")
	}
	return chat.Detect(m.chatTemplate)
}

// ChatPrompt formats messages with the model's chat template, ending with the
// opening of the assistant's turn, and tokenizes the result with special-token
// text parsed. Its stop conditions are the template's end-of-turn markers:
// those that are single tokens as ids, the others as text.
func (m *Model) ChatPrompt(msgs []chat.Message) (Prompt, error) {
	return m.ChatPromptWith(msgs, chat.Options{})
}

// ChatPromptWith is ChatPrompt with the template rendered with opts (such as
// chat.Options.DisableThinking, which only a template with a thinking switch
// heeds).
func (m *Model) ChatPromptWith(msgs []chat.Message, opts chat.Options) (Prompt, error) {
	tmpl, err := m.ChatTemplate()
	if err != nil {
		return Prompt{}, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	text, err := tmpl.ApplyWith(msgs, true, opts)
	if err != nil {
		return Prompt{}, err
	}
	tok := m.tokenizer
	ids, err := tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
	if err != nil {
		return Prompt{}, err
	}
	// Templates that write BOS themselves would get a second one from the vocabulary.
	if bos := tok.Special().BOS; len(ids) > 1 && bos >= 0 && ids[0] == bos && ids[1] == bos {
		ids = ids[1:]
	}
	p := Prompt{Tokens: ids, ToolFormat: tmpl.ToolFormat()}
	for _, s := range tmpl.Stop() {
		one, err := tok.Encode(s, tokenizer.EncodeOptions{ParseSpecial: true})
		if err == nil && len(one) == 1 && tok.TokenText(one[0]) == s {
			p.StopTokens = append(p.StopTokens, one[0])
		} else {
			p.Stop = append(p.Stop, s)
		}
	}
	return p, nil
}

// Generate tokenizes prompt (TextPrompt, with opts.ParseSpecial) and
// generates its completion (see GeneratePrompt).
func (s *Session) Generate(ctx context.Context, prompt string, opts GenerateOptions, onToken TokenFunc) (Result, error) {
	p, err := s.model.TextPrompt(prompt, opts.ParseSpecial)
	if err != nil {
		return Result{}, err
	}
	return s.GeneratePrompt(ctx, p, opts, onToken)
}

// GenerateChat continues a conversation: it formats msgs with the model's
// chat template (ChatPrompt) and generates the assistant's reply.
func (s *Session) GenerateChat(ctx context.Context, msgs []chat.Message, opts GenerateOptions, onToken TokenFunc) (Result, error) {
	p, err := s.model.ChatPrompt(msgs)
	if err != nil {
		return Result{}, err
	}
	return s.GeneratePrompt(ctx, p, opts, onToken)
}

// GeneratePrompt generates from p: its stop conditions are added to opts'
// (see GenerateTokens). Stop strings of the caller's and a Grammar exclude
// each other (an *OptionError naming "stop"): a stop string would cut a
// text the grammar is to keep whole. (A template's end-of-turn text is
// still stops it.)
func (s *Session) GeneratePrompt(ctx context.Context, p Prompt, opts GenerateOptions, onToken TokenFunc) (Result, error) {
	if opts.Grammar != nil && len(opts.Stop) > 0 {
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
