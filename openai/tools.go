package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/wasmlm/wasmlm/chat"
)

// Tool calling on /v1/chat/completions, in OpenAI's shapes: tools,
// tool_choice and parallel_tool_calls in the request; assistant messages
// with tool_calls and "tool" messages in the conversation; tool_calls in
// the reply. The chat package renders the tools in the model's tool format
// and reads the calls back out of the reply; a forced call (tool_choice
// "required" or a function) is sampled under the grammar of the format's
// call syntax (policy.Grammars.ToolGrammar).

// Tool calling on /v1/chat/completions, in OpenAI's shapes: tools,
// tool_choice and parallel_tool_calls in the request; assistant messages
// with tool_calls and "tool" messages in the conversation; tool_calls in
// the reply. The chat package renders the tools in the model's tool format
// and reads the calls back out of the reply; a forced call (tool_choice
// "required" or a function) is sampled under the grammar of the format's
// call syntax (policy.Grammars.ToolGrammar).

// MaxTools is OpenAI's limit on a request's tools.
const MaxTools = 128

// toolRequest is what a chat request asks about tools.
type toolRequest struct {
	tools    []chat.Tool
	choice   chat.ToolChoice
	parallel bool
}

// calling reports whether the reply may hold calls, to be parsed out.
func (t toolRequest) calling() bool {
	return len(t.tools) > 0 && t.choice.Mode != chat.ToolNone
}

// toolOptions reads tools, tool_choice and parallel_tool_calls. tool_choice
// defaults to "auto" with tools; without tools, neither tool_choice nor
// parallel_tool_calls may be given (as OpenAI answers).
func (r *ChatRequest) toolOptions() (toolRequest, *Error) {
	t := toolRequest{parallel: true}
	if raw := bytes.TrimSpace(r.Tools); !IsNull(raw) {
		tools, e := readTools(raw)
		if e != nil {
			return t, e
		}
		t.tools = tools
	}
	if raw := bytes.TrimSpace(r.ParallelToolCalls); !IsNull(raw) {
		if len(t.tools) == 0 {
			return t, BadRequest("parallel_tool_calls", "invalid_value", "parallel_tool_calls is only allowed when tools are given")
		}
		if err := json.Unmarshal(raw, &t.parallel); err != nil {
			return t, BadRequest("parallel_tool_calls", "invalid_type", "parallel_tool_calls must be a boolean, got %s", jsonValue(literalKind(raw)))
		}
	}
	raw := bytes.TrimSpace(r.ToolChoice)
	if IsNull(raw) {
		if len(t.tools) == 0 {
			t.choice.Mode = chat.ToolNone
		}
		return t, nil
	}
	if len(t.tools) == 0 {
		return t, BadRequest("tool_choice", "invalid_value", "tool_choice is only allowed when tools are given")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return t, BadRequest("tool_choice", "invalid_json", "tool_choice is not a valid string")
		}
		switch s {
		case "auto":
			t.choice.Mode = chat.ToolAuto
		case "none":
			t.choice.Mode = chat.ToolNone
		case "required":
			t.choice.Mode = chat.ToolRequired
		default:
			return t, BadRequest("tool_choice", "invalid_value",
				"tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}, got %q", s)
		}
		return t, nil
	}
	obj, e := jsonObjectOf(raw, "tool_choice")
	if e != nil {
		return t, BadRequest("tool_choice", "invalid_type",
			"tool_choice must be a string or an object {\"type\": \"function\", \"function\": {\"name\": ...}}, got %s", jsonValue(literalKind(raw)))
	}
	if e := onlyKeys(obj, "tool_choice", "type", "function"); e != nil {
		return t, e
	}
	if e := functionType(obj, "tool_choice"); e != nil {
		return t, e
	}
	fn, e := jsonObjectOf(obj["function"], "tool_choice.function")
	if e != nil {
		return t, e
	}
	if e := onlyKeys(fn, "tool_choice.function", "name"); e != nil {
		return t, e
	}
	name, e := stringField(fn, "tool_choice.function", "name", true)
	if e != nil {
		return t, e
	}
	for _, tool := range t.tools {
		if tool.Name == name {
			t.choice = chat.ToolChoice{Mode: chat.ToolFunction, Function: name}
			return t, nil
		}
	}
	return t, BadRequest("tool_choice.function.name", "invalid_value", "tool_choice names the function %q, which is not among the tools", name)
}

// readTools reads tools: [{"type": "function", "function": {"name",
// "description", "parameters", "strict"}}], one at a time (at most
// MaxTools), names unique.
func readTools(raw []byte) ([]chat.Tool, *Error) {
	if raw[0] != '[' {
		return nil, BadRequest("tools", "invalid_type", "tools must be an array, got %s", jsonValue(literalKind(raw)))
	}
	// Read one at a time: a body of 100,000 tools never becomes a slice of them.
	var items []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, BadRequest("tools", "invalid_json", "tools is not a valid array")
	}
	for dec.More() {
		if len(items) == MaxTools {
			return nil, BadRequest("tools", "invalid_value", "tools: at most %d tools, got more", MaxTools)
		}
		var item json.RawMessage
		if err := dec.Decode(&item); err != nil {
			return nil, BadRequest("tools", "invalid_json", "tools is not a valid array")
		}
		items = append(items, item)
	}
	if len(items) == 0 {
		return nil, BadRequest("tools", "invalid_value", "tools must not be empty (omit it for no tools)")
	}
	tools := make([]chat.Tool, len(items))
	seen := make(map[string]int, len(items))
	for i, item := range items {
		p := fmt.Sprintf("tools[%d]", i)
		obj, e := jsonObjectOf(item, p)
		if e != nil {
			return nil, e
		}
		if e := onlyKeys(obj, p, "type", "function"); e != nil {
			return nil, e
		}
		if e := functionType(obj, p); e != nil {
			return nil, e
		}
		p += ".function"
		fn, e := jsonObjectOf(obj["function"], p)
		if e != nil {
			return nil, e
		}
		if e := onlyKeys(fn, p, "name", "description", "parameters", "strict"); e != nil {
			return nil, e
		}
		tool := &tools[i]
		if tool.Name, e = stringField(fn, p, "name", true); e != nil {
			return nil, e
		}
		if !validName(tool.Name) {
			return nil, BadRequest(p+".name", "invalid_value", "%s.name %q must be 1 to 64 letters, digits, '_' or '-'", p, tool.Name)
		}
		if j, dup := seen[tool.Name]; dup {
			return nil, BadRequest(p+".name", "invalid_value", "%s.name %q is the name of tools[%d] too: names must be unique", p, tool.Name, j)
		}
		seen[tool.Name] = i
		if tool.Description, e = stringField(fn, p, "description", false); e != nil {
			return nil, e
		}
		if _, e := boolField(fn, p, "strict"); e != nil {
			return nil, e
		}
		if params := bytes.TrimSpace(fn["parameters"]); !IsNull(params) {
			if e := schemaObject(params, p+".parameters"); e != nil {
				return nil, e
			}
			tool.Parameters = json.RawMessage(params)
		}
	}
	return tools, nil
}

// messageTools reads the tool fields of message m, param naming it
// ("messages[3]"), into msg: an assistant's tool_calls, a tool result's
// tool_call_id (required) and name.
func messageTools(m chatMessage, param string, msg *chat.Message) *Error {
	if raw := bytes.TrimSpace(m.ToolCalls); !IsNull(raw) {
		if m.Role != "assistant" {
			return BadRequest(param+".tool_calls", "invalid_value", "%s.tool_calls: only assistant messages make tool calls", param)
		}
		calls, e := readToolCalls(raw, param+".tool_calls")
		if e != nil {
			return e
		}
		msg.ToolCalls = calls
	}
	if m.Role != "tool" {
		// OpenAI's participant name on other roles: no template here reads it.
		if raw := bytes.TrimSpace(m.Name); !IsNull(raw) && raw[0] != '"' {
			return BadRequest(param+".name", "invalid_type", "%s.name must be a string, got %s", param, jsonValue(literalKind(raw)))
		}
		if !IsNull(m.ToolCallID) {
			return BadRequest(param+".tool_call_id", "invalid_value", "%s.tool_call_id: only tool messages answer a call", param)
		}
		return nil
	}
	obj := map[string]json.RawMessage{"tool_call_id": m.ToolCallID, "name": m.Name}
	var e *Error
	if msg.ToolCallID, e = stringField(obj, param, "tool_call_id", true); e != nil {
		return e
	}
	msg.Name, e = stringField(obj, param, "name", false)
	return e
}

// readToolCalls reads an assistant message's tool_calls: [{"id", "type":
// "function", "function": {"name", "arguments"}}], arguments a string (of
// JSON, as OpenAI returns them).
func readToolCalls(raw []byte, param string) ([]chat.ToolCall, *Error) {
	if raw[0] != '[' {
		return nil, BadRequest(param, "invalid_type", "%s must be an array, got %s", param, jsonValue(literalKind(raw)))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, BadRequest(param, "invalid_json", "%s is not a valid array", param)
	}
	calls := make([]chat.ToolCall, len(items))
	for i, item := range items {
		p := fmt.Sprintf("%s[%d]", param, i)
		obj, e := jsonObjectOf(item, p)
		if e != nil {
			return nil, e
		}
		if calls[i].ID, e = stringField(obj, p, "id", true); e != nil {
			return nil, e
		}
		if e := functionType(obj, p); e != nil {
			return nil, e
		}
		fn, e := jsonObjectOf(obj["function"], p+".function")
		if e != nil {
			return nil, e
		}
		if calls[i].Name, e = stringField(fn, p+".function", "name", true); e != nil {
			return nil, e
		}
		if calls[i].Arguments, e = stringField(fn, p+".function", "arguments", false); e != nil {
			return nil, e
		}
	}
	return calls, nil
}

// functionType checks that obj (the value of param: a tool, a tool call, a
// forced tool_choice) has "type": "function", the only type of tool there is.
func functionType(obj map[string]json.RawMessage, param string) *Error {
	typ, e := stringField(obj, param, "type", true)
	if e != nil {
		return e
	}
	if typ != "function" {
		return BadRequest(param+".type", "invalid_value", "%s.type must be \"function\", got %q", param, typ)
	}
	return nil
}
