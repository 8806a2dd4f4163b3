package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ResponsesRequest is POST /v1/responses, OpenAI's Responses API, which
// this package reads as a chat completion request (ChatRequest): the
// input's items as messages, instructions as a first system message,
// max_output_tokens as max_tokens, its function tools and text.format as
// the chat's tools and response_format. It is stateless: a response is not
// kept, so previous_response_id and store: true are refused, and a
// conversation goes on by sending it again in input (with the calls and
// their outputs as function_call and function_call_output items).
type ResponsesRequest struct {
	Model             string          `json:"model"`
	Input             json.RawMessage `json:"input"`
	Instructions      *string         `json:"instructions"`
	MaxOutputTokens   *int            `json:"max_output_tokens"`
	Temperature       *float64        `json:"temperature"`
	TopP              *float64        `json:"top_p"`
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Text              *struct {
		Format json.RawMessage `json:"format"`
	} `json:"text"`
	Stream             bool            `json:"stream"`
	PreviousResponseID json.RawMessage `json:"previous_response_id"`
	Store              *bool           `json:"store"`
	// Include with "message.output_text.logprobs", or TopLogprobs (0 to
	// 20), asks for the text's log-probabilities (chat's logprobs and
	// top_logprobs); other include values are ignored.
	Include     []string `json:"include"`
	TopLogprobs *int     `json:"top_logprobs"`
	// llama.cpp's sampling extensions, as the chat endpoint takes them.
	Seed *int64 `json:"seed"`
	TopK *int   `json:"top_k"`
}

// Chat is the chat completion request r stands for, as its JSON body,
// or the error naming the field of r at fault.
func (r *ResponsesRequest) Chat() ([]byte, *Error) {
	if !IsNull(bytes.TrimSpace(r.PreviousResponseID)) {
		return nil, BadRequest("previous_response_id", "invalid_value",
			"previous_response_id: this server keeps no responses; send the whole conversation in input (earlier output items included)")
	}
	if r.Store != nil && *r.Store {
		return nil, BadRequest("store", "invalid_value", "store: this server keeps no responses; leave store out or set it to false")
	}
	msgs, e := r.messages()
	if e != nil {
		return nil, e
	}
	body := map[string]any{"messages": msgs, "stream": r.Stream}
	set := func(key string, v any, given bool) {
		if given {
			body[key] = v
		}
	}
	set("max_tokens", r.MaxOutputTokens, r.MaxOutputTokens != nil)
	set("temperature", r.Temperature, r.Temperature != nil)
	set("top_p", r.TopP, r.TopP != nil)
	set("seed", r.Seed, r.Seed != nil)
	set("top_k", r.TopK, r.TopK != nil)
	set("parallel_tool_calls", r.ParallelToolCalls, r.ParallelToolCalls != nil)
	set("logprobs", true, r.TopLogprobs != nil || slices.Contains(r.Include, "message.output_text.logprobs"))
	set("top_logprobs", r.TopLogprobs, r.TopLogprobs != nil)
	if !IsNull(bytes.TrimSpace(r.Tools)) {
		tools, e := chatTools(r.Tools)
		if e != nil {
			return nil, e
		}
		body["tools"] = tools
	}
	if raw := bytes.TrimSpace(r.ToolChoice); !IsNull(raw) {
		choice, e := chatToolChoice(raw)
		if e != nil {
			return nil, e
		}
		body["tool_choice"] = choice
	}
	if r.Text != nil && !IsNull(bytes.TrimSpace(r.Text.Format)) {
		format, e := chatFormat(r.Text.Format)
		if e != nil {
			return nil, e
		}
		body["response_format"] = format
	}
	out, err := json.Marshal(body)
	if err != nil {
		return nil, ServerError(err)
	}
	return out, nil
}

// ResponsesParam is the field of a /v1/responses request that the chat
// request's field param (an error's) stands for.
func ResponsesParam(param string) string {
	for _, m := range [][2]string{
		{"max_completion_tokens", "max_output_tokens"}, {"max_tokens", "max_output_tokens"},
		{"response_format.json_schema", "text.format"}, {"response_format", "text.format"},
		{"messages", "input"},
	} {
		if param == m[0] || strings.HasPrefix(param, m[0]+".") || strings.HasPrefix(param, m[0]+"[") {
			return m[1] + strings.TrimPrefix(param, m[0])
		}
	}
	return param
}

// chatMsg is a chat message as the chat request's JSON has it.
type chatMsg struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

// inputItem is an item of input: a message (type "message" or none), a
// function call the model made, or a call's output.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// messages are the chat messages of instructions and input: a string is
// one user message; a list's messages keep their roles, a function_call
// joins the assistant message before it (or starts one), a
// function_call_output is a tool message; reasoning items are dropped, as
// a template drops earlier turns' reasoning.
func (r *ResponsesRequest) messages() ([]chatMsg, *Error) {
	var out []chatMsg
	if r.Instructions != nil && *r.Instructions != "" {
		out = append(out, chatMsg{Role: "system", Content: r.Instructions})
	}
	raw := bytes.TrimSpace(r.Input)
	switch {
	case IsNull(raw):
		return nil, BadRequest("input", "missing_required_parameter", "input is required: a string or a list of input items")
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, BadRequest("input", "invalid_json", "input is not a valid string")
		}
		return append(out, chatMsg{Role: "user", Content: &s}), nil
	}
	var items []inputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, BadRequest("input", "invalid_type", "input must be a string or a list of input items")
	}
	for i, it := range items {
		param := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "", "message":
			text, e := itemText(it.Content, param+".content")
			if e != nil {
				return nil, e
			}
			if it.Role == "" {
				return nil, BadRequest(param+".role", "missing_required_parameter", "%s.role is required", param)
			}
			out = append(out, chatMsg{Role: it.Role, Content: &text})
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, BadRequest(param, "missing_required_parameter", "%s: a function_call needs call_id and name", param)
			}
			call := chatToolCall{ID: it.CallID, Type: "function", Function: ToolFunction{Name: it.Name, Arguments: it.Arguments}}
			if n := len(out); n > 0 && out[n-1].Role == "assistant" && out[n-1].ToolCallID == "" {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, call)
			} else {
				out = append(out, chatMsg{Role: "assistant", ToolCalls: []chatToolCall{call}})
			}
		case "function_call_output":
			if it.CallID == "" {
				return nil, BadRequest(param+".call_id", "missing_required_parameter", "%s: a function_call_output needs call_id", param)
			}
			text, e := itemText(it.Output, param+".output")
			if e != nil {
				return nil, e
			}
			out = append(out, chatMsg{Role: "tool", ToolCallID: it.CallID, Content: &text})
		case "reasoning":
		default:
			return nil, BadRequest(param+".type", "invalid_value",
				"%s.type %q: this server takes message, function_call, function_call_output and reasoning items", param, it.Type)
		}
	}
	if len(out) == 0 {
		return nil, BadRequest("input", "invalid_value", "input has no messages")
	}
	return out, nil
}

// itemText is an item's content or output: a string, or a list of text
// parts (input_text, output_text, text), concatenated.
func itemText(raw json.RawMessage, param string) (string, *Error) {
	raw = bytes.TrimSpace(raw)
	if IsNull(raw) {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", BadRequest(param, "invalid_json", "%s is not a valid string", param)
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", BadRequest(param, "invalid_type", "%s must be a string or a list of content parts", param)
	}
	var b strings.Builder
	for j, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			b.WriteString(p.Text)
		default:
			return "", BadRequest(fmt.Sprintf("%s[%d].type", param, j), "invalid_value",
				"%s[%d] has type %q; only text parts are supported", param, j, p.Type)
		}
	}
	return b.String(), nil
}

// chatTools are the chat request's tools for the Responses API's
// ({type: "function", name, description, parameters, strict}).
func chatTools(raw json.RawMessage) ([]any, *Error) {
	var tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description *string         `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, BadRequest("tools", "invalid_type", "tools must be a list of function tools")
	}
	out := make([]any, len(tools))
	for i, t := range tools {
		if t.Type != "function" {
			return nil, BadRequest(fmt.Sprintf("tools[%d].type", i), "invalid_value",
				"tools[%d].type %q: this server calls functions only", i, t.Type)
		}
		fn := map[string]any{"name": t.Name}
		if t.Description != nil {
			fn["description"] = *t.Description
		}
		if !IsNull(bytes.TrimSpace(t.Parameters)) {
			fn["parameters"] = t.Parameters
		}
		out[i] = map[string]any{"type": "function", "function": fn}
	}
	return out, nil
}

// chatToolChoice is the chat request's tool_choice for the Responses
// API's: "auto", "none", "required" as they are, {type: "function", name}
// as {type: "function", function: {name}}.
func chatToolChoice(raw json.RawMessage) (any, *Error) {
	if raw[0] == '"' {
		return raw, nil
	}
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || c.Type != "function" || c.Name == "" {
		return nil, BadRequest("tool_choice", "invalid_value", `tool_choice must be "auto", "none", "required" or {"type": "function", "name": ...}`)
	}
	return map[string]any{"type": "function", "function": map[string]string{"name": c.Name}}, nil
}

// chatFormat is the chat request's response_format for text.format:
// {type: "json_schema", name, schema, strict, description} becomes
// {type: "json_schema", json_schema: {...}}; text and json_object are the
// same in both.
func chatFormat(raw json.RawMessage) (any, *Error) {
	var f struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, BadRequest("text.format", "invalid_type", "text.format must be an object")
	}
	if f.Type != "json_schema" {
		return raw, nil
	}
	var schema map[string]json.RawMessage
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, BadRequest("text.format", "invalid_type", "text.format must be an object")
	}
	delete(schema, "type")
	return map[string]any{"type": "json_schema", "json_schema": schema}, nil
}

// ResponsesJob validates a /v1/responses request and makes it the job of
// the chat completion request it stands for (ResponsesRequest.Chat);
// every error names the field of the Responses API's request.
func (a *API) ResponsesJob(req *ResponsesRequest) (*Job, *Error) {
	body, e := req.Chat()
	if e != nil {
		return nil, e
	}
	creq := ChatRequest{SamplingRequest: a.NewSamplingRequest()}
	if e := Decode(body, &creq); e != nil {
		return nil, responsesError(e)
	}
	j, e := a.ChatJob(&creq)
	if e != nil {
		return nil, responsesError(e)
	}
	j.PromptParam, j.GrammarParam = "input", ResponsesParam(j.GrammarParam)
	return j, nil
}

// responsesError is e with its param and message in the Responses API's
// names.
func responsesError(e *Error) *Error {
	if e.Param == "" {
		return e
	}
	out := *e
	out.Param = ResponsesParam(e.Param)
	if out.Param != e.Param {
		out.Message = strings.Replace(e.Message, promptIs(e.Param), promptIs(out.Param), 1)
		out.Message = strings.Replace(out.Message, e.Param, out.Param, 1)
	}
	return &out
}
