package openai

import (
	"github.com/wasmlm/wasmlm/engine"
)

// ResponseEvent is one event of a streamed response: its type (also the
// Server-Sent Event's name) and its fields, sequence_number among them.
type ResponseEvent map[string]any

// Type is the event's type.
func (e ResponseEvent) Type() string { s, _ := e["type"].(string); return s }

// ResponseStream makes the events of one streamed response in the
// Responses API's order: response.created and response.in_progress
// (Start); for the reply's reasoning a reasoning item (its
// response.reasoning_text.delta events); for its text a message item
// (response.output_item.added, response.content_part.added,
// response.output_text.delta per token, then response.output_text.done,
// response.content_part.done, response.output_item.done); for each call a
// function_call item (added, response.function_call_arguments.delta and
// .done, done); then response.completed (or response.incomplete when the
// token limit cut the reply), carrying the whole response (Finish).
type ResponseStream struct {
	resp      Response
	reply     *ReplyStream
	seq       int
	reasoning *ReasoningItem // the open reasoning item, if any
	message   *MessageItem   // the open message item, if any
	text      string         // the message's text so far
	logprobs  *Logprobs      // nil unless the request asks for them
}

// SetLogprobs has the text's deltas carry the log-probabilities l collects:
// each delta those of the tokens no delta carried yet (Add each token to l
// before its text reaches Token), the text's done event and part all.
func (s *ResponseStream) SetLogprobs(l *Logprobs) { s.logprobs = l }

// newLogprobs is the log-probabilities of the tokens no delta carried yet.
func (s *ResponseStream) newLogprobs() []ChatLogprob {
	from, to := s.logprobs.pending()
	return append([]ChatLogprob{}, s.logprobs.entriesOf(from, to)...)
}

// NewResponseStream is the stream of the response id, created at created
// by model, to a request (echo) whose reply is read for calls (nil: text)
// after replyPrefix (the job's ReplyPrefix).
func NewResponseStream(id string, created int64, model string, echo ResponseEcho, parallel bool, calls *Calls, replyPrefix string) *ResponseStream {
	return &ResponseStream{
		resp:  Response{ID: id, Object: "response", CreatedAt: created, Status: "in_progress", Model: model, Output: []any{}, ResponseEcho: echo, ParallelToolCalls: parallel},
		reply: NewReplyStream(calls, replyPrefix),
	}
}

// event is the next event of type typ with fields kv (key, value, ...).
func (s *ResponseStream) event(out []ResponseEvent, typ string, kv ...any) []ResponseEvent {
	e := ResponseEvent{"type": typ, "sequence_number": s.seq}
	s.seq++
	for i := 0; i+1 < len(kv); i += 2 {
		e[kv[i].(string)] = kv[i+1]
	}
	return append(out, e)
}

// snapshot is the response as it stands, with a copy of its output.
func (s *ResponseStream) snapshot() Response {
	r := s.resp
	r.Output = append([]any{}, s.resp.Output...)
	return r
}

// Start is the events before the first token.
func (s *ResponseStream) Start() []ResponseEvent {
	out := s.event(nil, "response.created", "response", s.snapshot())
	return s.event(out, "response.in_progress", "response", s.snapshot())
}

// Token is the events of a token's text: the reasoning and the text it
// makes final (none for a tag's first bytes or text that may be a call).
func (s *ResponseStream) Token(text string) []ResponseEvent {
	reasoning, content := s.reply.Write(text)
	return s.pieces(nil, reasoning, content)
}

// pieces appends the events of a piece of reasoning and of text.
func (s *ResponseStream) pieces(out []ResponseEvent, reasoning, content string) []ResponseEvent {
	if reasoning != "" {
		if s.reasoning == nil {
			s.reasoning = &ReasoningItem{Type: "reasoning", ID: itemID(s.resp.ID, "rs", len(s.resp.Output)), Summary: []any{}, Content: []ReasoningPart{}, Status: "in_progress"}
			s.resp.Output = append(s.resp.Output, *s.reasoning)
			out = s.event(out, "response.output_item.added", "output_index", len(s.resp.Output)-1, "item", *s.reasoning)
			s.reasoning.Content = []ReasoningPart{{Type: "reasoning_text"}}
			out = s.event(out, "response.content_part.added", "item_id", s.reasoning.ID, "output_index", len(s.resp.Output)-1,
				"content_index", 0, "part", ReasoningPart{Type: "reasoning_text"})
		}
		s.reasoning.Content[0].Text += reasoning
		out = s.event(out, "response.reasoning_text.delta", "item_id", s.reasoning.ID, "output_index", len(s.resp.Output)-1,
			"content_index", 0, "delta", reasoning)
	}
	if content != "" {
		out = s.closeReasoning(out)
		out = s.openMessage(out)
		s.text += content
		out = s.event(out, "response.output_text.delta", "item_id", s.message.ID, "output_index", len(s.resp.Output)-1,
			"content_index", 0, "delta", content, "logprobs", s.newLogprobs())
	}
	return out
}

// closeReasoning ends the open reasoning item, if any.
func (s *ResponseStream) closeReasoning(out []ResponseEvent) []ResponseEvent {
	if s.reasoning == nil {
		return out
	}
	i, r := len(s.resp.Output)-1, s.reasoning
	out = s.event(out, "response.reasoning_text.done", "item_id", r.ID, "output_index", i, "content_index", 0, "text", r.Content[0].Text)
	out = s.event(out, "response.content_part.done", "item_id", r.ID, "output_index", i, "content_index", 0, "part", r.Content[0])
	r.Status = "completed"
	s.resp.Output[i] = *r
	s.reasoning = nil
	return s.event(out, "response.output_item.done", "output_index", i, "item", *r)
}

// openMessage opens the message item, unless it is open.
func (s *ResponseStream) openMessage(out []ResponseEvent) []ResponseEvent {
	if s.message != nil {
		return out
	}
	s.message = &MessageItem{Type: "message", ID: itemID(s.resp.ID, "msg", len(s.resp.Output)), Status: "in_progress", Role: "assistant", Content: []OutputTextPart{}}
	s.resp.Output = append(s.resp.Output, *s.message)
	i := len(s.resp.Output) - 1
	out = s.event(out, "response.output_item.added", "output_index", i, "item", *s.message)
	return s.event(out, "response.content_part.added", "item_id", s.message.ID, "output_index", i, "content_index", 0, "part", textPart(""))
}

// Finish is the events that end the stream of res: what the reply held
// back, the message closed, the calls, and response.completed (or
// response.incomplete) with the whole response.
func (s *ResponseStream) Finish(res engine.Result) []ResponseEvent {
	reasoning, content, rest, calls := s.reply.Finish(res.FinishReason)
	out := s.pieces(nil, reasoning, content+rest)
	out = s.closeReasoning(out)
	if s.message == nil && len(calls) == 0 {
		out = s.openMessage(out) // a reply with no text has an empty message
	}
	if m := s.message; m != nil {
		i := len(s.resp.Output) - 1
		for j, item := range s.resp.Output {
			if it, ok := item.(MessageItem); ok && it.ID == m.ID {
				i = j
			}
		}
		part := textPart(s.text)
		if s.logprobs != nil {
			part.Logprobs = s.logprobs.Chat().Content
		}
		out = s.event(out, "response.output_text.done", "item_id", m.ID, "output_index", i, "content_index", 0, "text", s.text, "logprobs", part.Logprobs)
		out = s.event(out, "response.content_part.done", "item_id", m.ID, "output_index", i, "content_index", 0, "part", part)
		m.Status, m.Content = messageStatus(res), []OutputTextPart{part}
		s.resp.Output[i] = *m
		out = s.event(out, "response.output_item.done", "output_index", i, "item", *m)
	}
	for _, c := range calls {
		i := len(s.resp.Output)
		item := callItem(s.resp.ID, i, c, "", "in_progress")
		s.resp.Output = append(s.resp.Output, item)
		out = s.event(out, "response.output_item.added", "output_index", i, "item", item)
		out = s.event(out, "response.function_call_arguments.delta", "item_id", item.ID, "output_index", i, "delta", c.Arguments)
		out = s.event(out, "response.function_call_arguments.done", "item_id", item.ID, "output_index", i, "name", c.Name, "arguments", c.Arguments)
		item.Arguments, item.Status = c.Arguments, "completed"
		s.resp.Output[i] = item
		out = s.event(out, "response.output_item.done", "output_index", i, "item", item)
	}
	s.resp.finish(res, s.text)
	end := "response.completed"
	if s.resp.Status == "incomplete" {
		end = "response.incomplete"
	}
	return s.event(out, end, "response", s.snapshot())
}
