package openai

import (
	"fmt"
	"strings"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
)

// Response is the Responses API's response object: the output items (a
// reasoning item when the reply reasoned, a message with the text, a
// function_call per call), its status ("completed", "incomplete" when the
// token limit cut it: incomplete_details.reason "max_output_tokens";
// "in_progress" while it streams) and its usage, with what the request
// set echoed as OpenAI does.
type Response struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	CreatedAt         int64          `json:"created_at"`
	Status            string         `json:"status"`
	Model             string         `json:"model"`
	Output            []any          `json:"output"`
	OutputText        string         `json:"output_text"`
	Error             any            `json:"error"`
	IncompleteDetails any            `json:"incomplete_details"`
	Usage             *ResponseUsage `json:"usage"`
	ResponseEcho
	PreviousResponseID any  `json:"previous_response_id"`
	Store              bool `json:"store"`
	ParallelToolCalls  bool `json:"parallel_tool_calls"`
}

// ResponseEcho is what a response repeats of its request.
type ResponseEcho struct {
	Instructions    *string  `json:"instructions"`
	MaxOutputTokens *int     `json:"max_output_tokens"`
	Temperature     *float64 `json:"temperature"`
	TopP            *float64 `json:"top_p"`
	Tools           any      `json:"tools"`
	ToolChoice      any      `json:"tool_choice"`
	Text            any      `json:"text"`
}

// Echo is what a response to r repeats of it.
func (r *ResponsesRequest) Echo() ResponseEcho {
	e := ResponseEcho{Instructions: r.Instructions, MaxOutputTokens: r.MaxOutputTokens, Temperature: r.Temperature, TopP: r.TopP,
		Tools: []any{}, ToolChoice: "auto", Text: map[string]any{"format": map[string]string{"type": "text"}}}
	if !IsNull(r.Tools) {
		e.Tools = r.Tools
	}
	if !IsNull(r.ToolChoice) {
		e.ToolChoice = r.ToolChoice
	}
	if r.Text != nil && !IsNull(r.Text.Format) {
		e.Text = map[string]any{"format": r.Text.Format}
	}
	return e
}

// ResponseUsage is a response's usage in the Responses API's shape.
type ResponseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// responseUsage is res's usage; the prompt tokens the session had cached
// (not evaluated again) are cached_tokens.
func responseUsage(res engine.Result) *ResponseUsage {
	u := UsageOf(res)
	r := &ResponseUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	r.InputTokensDetails.CachedTokens = max(0, u.PromptTokens-res.Timings.PrefillTokens)
	return r
}

// Output items and their parts.
type (
	// MessageItem is the reply's text.
	MessageItem struct {
		Type    string           `json:"type"` // "message"
		ID      string           `json:"id"`
		Status  string           `json:"status"`
		Role    string           `json:"role"`
		Content []OutputTextPart `json:"content"`
	}
	// OutputTextPart is a message's text.
	OutputTextPart struct {
		Type        string        `json:"type"` // "output_text"
		Text        string        `json:"text"`
		Annotations []any         `json:"annotations"`
		Logprobs    []ChatLogprob `json:"logprobs"` // empty unless the request asks for them
	}
	// FunctionCallItem is a call the reply makes.
	FunctionCallItem struct {
		Type      string `json:"type"` // "function_call"
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Status    string `json:"status"`
	}
	// ReasoningItem is the reasoning the reply started with.
	ReasoningItem struct {
		Type    string          `json:"type"` // "reasoning"
		ID      string          `json:"id"`
		Summary []any           `json:"summary"`
		Content []ReasoningPart `json:"content"`
		Status  string          `json:"status"`
	}
	// ReasoningPart is a reasoning item's text.
	ReasoningPart struct {
		Type string `json:"type"` // "reasoning_text"
		Text string `json:"text"`
	}
)

func textPart(text string) OutputTextPart {
	return OutputTextPart{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []ChatLogprob{}}
}

// itemID is the id of a response's output item i: the response's with
// the item's kind for prefix ("msg", "fc", "rs").
func itemID(responseID, kind string, i int) string {
	return fmt.Sprintf("%s_%s_%d", kind, strings.TrimPrefix(responseID, "resp_"), i)
}

// NewResponse is the response to a request (echo) whose generation, res,
// ended: its reply (after the job's replyPrefix) read into output items,
// the message's text with lp's log-probabilities (nil: none asked).
func NewResponse(id string, created int64, model string, echo ResponseEcho, parallel bool, calls *Calls, replyPrefix string, res engine.Result, lp *Logprobs) Response {
	r := Response{ID: id, Object: "response", CreatedAt: created, Model: model, Output: []any{}, ResponseEcho: echo, ParallelToolCalls: parallel}
	reply, _ := ParseReply(replyPrefix+res.Text, calls, res.FinishReason) // the format is the prompt's: known
	if reply.Reasoning != "" {
		r.Output = append(r.Output, ReasoningItem{Type: "reasoning", ID: itemID(id, "rs", len(r.Output)), Summary: []any{},
			Content: []ReasoningPart{{Type: "reasoning_text", Text: reply.Reasoning}}, Status: "completed"})
	}
	if reply.Content != "" || len(reply.ToolCalls) == 0 {
		part := textPart(reply.Content)
		if lp != nil {
			part.Logprobs = lp.Chat().Content
		}
		r.Output = append(r.Output, MessageItem{Type: "message", ID: itemID(id, "msg", len(r.Output)), Status: messageStatus(res),
			Role: "assistant", Content: []OutputTextPart{part}})
	}
	for _, c := range reply.ToolCalls {
		r.Output = append(r.Output, callItem(id, len(r.Output), c, c.Arguments, "completed"))
	}
	r.finish(res, reply.Content)
	return r
}

func callItem(id string, i int, c chat.ToolCall, args, status string) FunctionCallItem {
	return FunctionCallItem{Type: "function_call", ID: itemID(id, "fc", i), CallID: c.ID, Name: c.Name, Arguments: args, Status: status}
}

// messageStatus is the status of the message item of a reply that res
// ended: "incomplete" when max_output_tokens cut it, as the response's.
func messageStatus(res engine.Result) string {
	if FinishReason(res.FinishReason) == "length" {
		return "incomplete"
	}
	return "completed"
}

// finish sets r's status, usage and output_text for res, whose reply's
// text is text.
func (r *Response) finish(res engine.Result, text string) {
	r.Status, r.IncompleteDetails = "completed", nil
	if FinishReason(res.FinishReason) == "length" {
		r.Status, r.IncompleteDetails = "incomplete", map[string]string{"reason": "max_output_tokens"}
	}
	r.Usage, r.OutputText = responseUsage(res), text
}
