package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/tokenizer"
)

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
// text parsed. It also returns the template's end-of-turn markers: those that
// are single tokens as ids, the others as stop strings.
func (m *Model) ChatPrompt(msgs []chat.Message) (ids []int, stopTokens []int, stops []string, err error) {
	tmpl, err := m.ChatTemplate()
	if err != nil {
		return nil, nil, nil, err
	}
	text, err := tmpl.Apply(msgs, true)
	if err != nil {
		return nil, nil, nil, err
	}
	tok := m.Tokenizer
	ids, err = tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
	if err != nil {
		return nil, nil, nil, err
	}
	// Templates that write BOS themselves would get a second one from the vocabulary.
	if bos := tok.Special().BOS; len(ids) > 1 && bos >= 0 && ids[0] == bos && ids[1] == bos {
		ids = ids[1:]
	}
	for _, s := range tmpl.Stop() {
		one, err := tok.Encode(s, tokenizer.EncodeOptions{ParseSpecial: true})
		if err == nil && len(one) == 1 && tok.TokenText(one[0]) == s {
			stopTokens = append(stopTokens, one[0])
		} else {
			stops = append(stops, s)
		}
	}
	return ids, stopTokens, stops, nil
}

// GenerateChat continues a conversation: it formats msgs with the model's
// chat template (see ChatPrompt), adds the template's end-of-turn markers to
// opts' stop conditions, and generates the assistant's reply.
func (s *Session) GenerateChat(ctx context.Context, msgs []chat.Message, opts GenerateOptions, onToken TokenFunc) (Result, error) {
	ids, stopTokens, stops, err := s.model.ChatPrompt(msgs)
	if err != nil {
		return Result{}, fmt.Errorf("chat: %w", err)
	}
	opts.StopTokens = append(slices.Clip(opts.StopTokens), stopTokens...)
	opts.Stop = append(slices.Clip(opts.Stop), stops...)
	return s.GenerateTokens(ctx, ids, opts, onToken)
}
