package openai

import (
	"time"

	"github.com/wasmlm/wasmlm/engine"
)

// Completion is a completion answered whole: object "text_completion"
// (Choices a []TextChoice) or "chat.completion" (a []ChatChoice).
type Completion struct {
	ID      string  `json:"id"`
	Object  string  `json:"object"`
	Created int64   `json:"created"`
	Model   string  `json:"model"`
	Choices any     `json:"choices"`
	Usage   Usage   `json:"usage"`
	Timings Timings `json:"timings"`
}

// TextChoice is a text completion's choice (whole, or a chunk's).
type TextChoice struct {
	Text         string        `json:"text"`
	Index        int           `json:"index"`
	Logprobs     *TextLogprobs `json:"logprobs"` // null unless the request asks for logprobs
	FinishReason *string       `json:"finish_reason"`
}

// ChatChoice is a chat completion's choice.
type ChatChoice struct {
	Index        int           `json:"index"`
	Message      Message       `json:"message"`
	Logprobs     *ChatLogprobs `json:"logprobs"` // null unless the request asks for logprobs
	FinishReason *string       `json:"finish_reason"`
}

// Message is a chat reply. ReasoningContent is the reasoning
// ("<think>...</think>") the reply started with, as llama.cpp's server
// returns it: absent when there is none. Content is null when the reply
// is tool calls only; ToolCalls is absent when there are none.
type Message struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is a call in a reply message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

// ToolFunction is the function a ToolCall calls, its arguments JSON text.
type ToolFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Usage counts a completion's tokens. The prompt's are those the request
// sent, a part of which a context shift may have dropped.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// ContextShifts is how many times the context shifted (a prompt cut
	// to fit counts one), and ContextShiftedTokens how many tokens the
	// shifts dropped; both left out when none did (context_shift).
	ContextShifts        int `json:"context_shifts,omitempty"`
	ContextShiftedTokens int `json:"context_shifted_tokens,omitempty"`
}

// UsageOf is res's usage.
func UsageOf(res engine.Result) Usage {
	p, c := len(res.PromptTokens), len(res.Tokens)
	return Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c,
		ContextShifts: res.Shifts, ContextShiftedTokens: res.ShiftedTokens}
}

// Timings is llama.cpp-style extra information: where the time went.
type Timings struct {
	QueueMS                float64 `json:"queue_ms"`
	TimeToFirstTokenMS     float64 `json:"time_to_first_token_ms"`
	PrefillMS              float64 `json:"prefill_ms"`
	PrefillTokens          int     `json:"prefill_tokens"`
	PrefillTokensPerSecond float64 `json:"prefill_tokens_per_second"`
	DecodeMS               float64 `json:"decode_ms"`
	DecodeTokens           int     `json:"decode_tokens"`
	DecodeTokensPerSecond  float64 `json:"decode_tokens_per_second"`
}

// TimingsOf is a generation's timings after queued in the queue.
func TimingsOf(t engine.Timings, queued time.Duration) Timings {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return Timings{
		QueueMS: ms(queued), TimeToFirstTokenMS: ms(t.TimeToFirstToken),
		PrefillMS: ms(t.Prefill), PrefillTokens: t.PrefillTokens, PrefillTokensPerSecond: t.PrefillTokensPerSecond(),
		DecodeMS: ms(t.Decode), DecodeTokens: t.DecodeTokens, DecodeTokensPerSecond: t.DecodeTokensPerSecond(),
	}
}

// FinishReason is OpenAI's finish_reason for the engine's: a full context
// is a length limit too; a generation its caller aborted says so (an HTTP
// client that left gets no answer at all).
func FinishReason(r engine.FinishReason) string {
	switch r {
	case engine.FinishStop:
		return "stop"
	case engine.FinishAbort:
		return "abort"
	}
	return "length"
}

// callsFinish is the finish_reason of a reply that makes calls calls and
// whose generation finished with finish: "tool_calls" when it stopped on
// its own; a reply cut off ("length") or aborted keeps its reason, so that
// a call the token limit cut is never reported as a complete one.
func callsFinish(finish string, calls int) string {
	if calls > 0 && finish == "stop" {
		return "tool_calls"
	}
	return finish
}

// ChatMessage is the reply message to text, a finished generation after
// the job's ReplyPrefix (given in front of it), and its finish_reason
// (that of end, the generation's): the reasoning apart, the calls parsed
// out when calls is not nil ("tool_calls" then; a call the cut of a reply
// left unfinished dropped, see ParseReply), content null when there are
// only calls.
func ChatMessage(text string, end engine.FinishReason, calls *Calls) (Message, string) {
	r, _ := ParseReply(text, calls, end) // the format is the prompt's: known
	return r.Message(FinishReason(end))
}

// Message is the reply message r and its finish_reason (finish, the
// generation's, "tool_calls" when it stopped on its own and makes calls:
// callsFinish), its content null when it has only calls.
func (r Reply) Message(finish string) (Message, string) {
	msg := Message{Role: "assistant", ReasoningContent: r.Reasoning}
	for _, c := range r.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Type: "function", Function: ToolFunction{Name: c.Name, Arguments: c.Arguments}})
	}
	finish = callsFinish(finish, len(msg.ToolCalls))
	if r.Content != "" || len(msg.ToolCalls) == 0 {
		msg.Content = &r.Content
	}
	return msg, finish
}

// NewCompletion is the whole answer to a completion: text, res's
// (chat: a reply message read apart, after replyPrefix, the job's
// ReplyPrefix), with usage and timings.
func NewCompletion(id string, created int64, model string, chat bool, calls *Calls, replyPrefix string, res engine.Result, queued time.Duration) Completion {
	c := Completion{ID: id, Created: created, Model: model, Usage: UsageOf(res), Timings: TimingsOf(res.Timings, queued)}
	finish := FinishReason(res.FinishReason)
	if chat {
		// The reply's reasoning and calls apart, as llama.cpp's server
		// returns them.
		var msg Message
		msg, finish = ChatMessage(replyPrefix+res.Text, res.FinishReason, calls)
		c.Object = "chat.completion"
		c.Choices = []ChatChoice{{Message: msg, FinishReason: &finish}}
	} else {
		c.Object = "text_completion"
		c.Choices = []TextChoice{{Text: res.Text, FinishReason: &finish}}
	}
	return c
}

// SetLogprobs sets c's choice's logprobs to l's (nil: null).
func (c *Completion) SetLogprobs(l *Logprobs) {
	switch ch := c.Choices.(type) {
	case []ChatChoice:
		ch[0].Logprobs = l.Chat()
	case []TextChoice:
		ch[0].Logprobs = l.Text()
	}
}
