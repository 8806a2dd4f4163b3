package policy

import (
	"fmt"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// ChatTemplate is the template chat completions use with m: the family
// recognised from the file's tokenizer.chat_template, or "plain" (message
// contents joined by newlines) when the model carries no template. A
// template that is present but not recognised is an error, never a silent
// fallback.
func ChatTemplate(m *engine.Model) (chat.Template, error) {
	return TemplateOf(m.ChatTemplate())
}

// TemplateOf is the template a model whose file's tokenizer.chat_template
// is src uses (see ChatTemplate): for a file read without loading its
// weights (engine.Header).
func TemplateOf(src string) (chat.Template, error) {
	if src == "" {
		return chat.Named("plain")
	}
	return chat.Detect(src)
}

// ChatPrompt is a chat's engine.Prompt and how its template writes tool
// calls: hosts parse the reply's calls with ToolFormat
// (chat.ParseToolCalls, chat.ToolCallStream) and force them with
// Grammars.ToolGrammar.
type ChatPrompt struct {
	engine.Prompt
	ToolFormat chat.ToolFormat
	// ReplyPrefix is the text the prompt ends with inside the reply
	// (chat.Template.ReplyPrefix: Qwen3.5's open think block), which the
	// reply's reader reads before the reply.
	ReplyPrefix string
}

// NewChatPrompt formats msgs with m's chat template rendered with opts
// (such as chat.Options.DisableThinking, which only a template with a
// thinking switch heeds), ending with the opening of the assistant's turn,
// and tokenizes the result with special-token text parsed. Its stop
// conditions are the template's end-of-turn markers: those that are single
// tokens as ids, the others as text. A template this package does not
// recognise is an error wrapping engine.ErrUnsupported.
func NewChatPrompt(m *engine.Model, msgs []chat.Message, opts chat.Options) (ChatPrompt, error) {
	tmpl, err := ChatTemplate(m)
	if err != nil {
		return ChatPrompt{}, fmt.Errorf("%w: %w", engine.ErrUnsupported, err)
	}
	text, err := tmpl.ApplyWith(msgs, true, opts)
	if err != nil {
		return ChatPrompt{}, err
	}
	tok := m.Tokenizer()
	ids, err := tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
	if err != nil {
		return ChatPrompt{}, err
	}
	// Templates that write BOS themselves would get a second one from the vocabulary.
	if bos := tok.Special().BOS; len(ids) > 1 && bos >= 0 && ids[0] == bos && ids[1] == bos {
		ids = ids[1:]
	}
	p := ChatPrompt{Prompt: engine.Prompt{Tokens: ids}, ToolFormat: tmpl.ToolFormat(), ReplyPrefix: tmpl.ReplyPrefix(opts)}
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
