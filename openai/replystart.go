package openai

import (
	"fmt"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/policy"
)

// beginning is the beginning a chat request gives its reply: the content of a
// final assistant message with prefix: true (Mistral's field), whose path
// errors name.
type beginning struct {
	text, param string
}

// replyStart takes a final assistant message with prefix: true off msgs,
// as the beginning of the reply (nil when there is none); prefix on any
// other message is refused.
func replyStart(req *ChatRequest, msgs []chat.Message) ([]chat.Message, *beginning, *Error) {
	for i, m := range req.Messages {
		if !m.Prefix {
			continue
		}
		param := fmt.Sprintf("messages[%d]", i)
		switch {
		case i != len(req.Messages)-1 || m.Role != "assistant":
			return nil, nil, BadRequest(param+".prefix", "invalid_value",
				"%s.prefix: only the final message, an assistant's, can be the beginning of the reply", param)
		case len(msgs[i].ToolCalls) > 0:
			return nil, nil, BadRequest(param+".prefix", "invalid_value",
				"%s.prefix: the beginning of the reply is text, not tool calls", param)
		case i == 0:
			return nil, nil, BadRequest("messages", "invalid_value",
				"messages: a reply's beginning (prefix: true) follows at least one message")
		}
		return msgs[:i], &beginning{text: msgs[i].Content, param: param}, nil
	}
	return msgs, nil, nil
}

// continueReply makes the job's reply continue s: the prompt p ends with
// its text, and the reply's grammar, if any, reads it first, so that it
// holds the whole reply (a text it cannot start is refused). A reply that
// may be a tool call takes no beginning.
func (a *API) continueReply(j *Job, p *policy.ChatPrompt, t toolRequest, s *beginning) *Error {
	if t.calling() {
		return BadRequest(s.param+".prefix", "invalid_value",
			"%s.prefix applies with tool_choice \"none\" only: with tools and tool_choice %s, the reply may be a tool call", s.param, t.choice.String())
	}
	if err := p.Continue(a.Model, s.text); err != nil {
		return ErrorOf(err, s.param+".content")
	}
	if j.Options.Constraint == nil {
		return nil
	}
	c, err := policy.After(j.Options.Constraint, s.text)
	if err != nil {
		return BadRequest(s.param+".content", "invalid_value",
			"%s.content: the %s allows no reply that starts with it (%v)", s.param, j.GrammarParam, err)
	}
	j.Options.Constraint = c
	return nil
}
