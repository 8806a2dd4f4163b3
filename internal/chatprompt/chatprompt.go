// Package chatprompt builds a chat prompt with chat-template options, for the
// hosts (httpapi, jsbridge): engine.Model.ChatPrompt formats with the
// template's defaults.
package chatprompt

import (
	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
)

// Build is m.ChatPrompt(msgs) with the template rendered with opts. Only a
// template with a thinking switch (chat.Template.Thinking) renders
// differently; for it, the text is formatted with opts and tokenized as
// ChatPrompt tokenizes (special-token text parsed, BOS as the vocabulary
// adds it, a doubled BOS dropped), and ChatPrompt's stop conditions are
// kept. That tokenizes twice; engine.Model.ChatPrompt taking chat.Options
// would not.
func Build(m *engine.Model, msgs []chat.Message, opts chat.Options) (engine.Prompt, error) {
	p, err := m.ChatPrompt(msgs)
	if err != nil || opts == (chat.Options{}) {
		return p, err
	}
	tmpl, err := m.ChatTemplate()
	if err != nil || !tmpl.Thinking() {
		return p, err
	}
	text, err := tmpl.ApplyWith(msgs, true, opts)
	if err != nil {
		return engine.Prompt{}, err
	}
	t, err := m.TextPrompt(text, true)
	if err != nil {
		return engine.Prompt{}, err
	}
	ids := t.Tokens
	if bos := m.Tokenizer().Special().BOS; len(ids) > 1 && bos >= 0 && ids[0] == bos && ids[1] == bos {
		ids = ids[1:]
	}
	p.Tokens = ids
	return p, nil
}
