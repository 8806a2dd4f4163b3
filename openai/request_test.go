package openai

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/policy"
)

// newAPI is the API of the default model with sessions of its default
// context, as httpapi's handler makes it.
func newAPI(t *testing.T) *API {
	t.Helper()
	m, err := engine.LoadGGUF(models.Default())
	require.NoError(t, err)
	n, err := m.SessionContextLength(0)
	require.NoError(t, err)
	return &API{Model: m, Grammars: policy.NewGrammars(m), Context: n, MaxTokens: n}
}

// jobError is the error of the request body to path ("/v1/completions" or
// "/v1/chat/completions") as it becomes a job; nil when it is one.
func jobError(a *API, path, body string) *Error {
	if path == "/v1/completions" {
		req := CompletionRequest{SamplingRequest: a.NewSamplingRequest()}
		if e := Decode([]byte(body), &req); e != nil {
			return e
		}
		_, e := a.CompletionJob(&req)
		return e
	}
	req := ChatRequest{SamplingRequest: a.NewSamplingRequest()}
	if e := Decode([]byte(body), &req); e != nil {
		return e
	}
	_, e := a.ChatJob(&req)
	return e
}

// weatherTool is a tool with parameters, for requests that are refused
// before any generation (its description takes most of stories260K's
// context in the generic tool format).
const weatherTool = `{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
	"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`

// TestStructuredRequestErrors: every bad shape of response_format,
// grammar, tools, tool_choice, parallel_tool_calls and the messages' tool
// fields is a bad request naming the field, found when the request
// becomes a job, before any generation.
func TestStructuredRequestErrors(t *testing.T) {
	a := newAPI(t)
	msgs := `"messages": [{"role": "user", "content": "hi"}]`
	tools := `"tools": [` + weatherTool + `]`
	schema := `{"type": "object"}`
	for _, tc := range []struct {
		path   string // "" is chat
		fields string
		param  string
		code   string
		msg    string // part of the message
	}{
		// response_format
		{"", `"response_format": "json_object"`, "response_format", "invalid_type", "must be an object, got a string"},
		{"", `"response_format": []`, "response_format", "invalid_type", "got an array"},
		{"", `"response_format": {}`, "response_format.type", "missing_required_parameter", "is required"},
		{"", `"response_format": {"type": 1}`, "response_format.type", "invalid_type", "must be a string, got a number"},
		{"", `"response_format": {"type": "json"}`, "response_format.type", "invalid_value", `got "json"`},
		{"", `"response_format": {"type": "json_object", "extra": 1}`, "response_format.extra", "unknown_parameter", "unknown parameter"},
		{"", `"response_format": {"type": "json_schema"}`, "response_format.json_schema", "missing_required_parameter", "required for type json_schema"},
		{"", `"response_format": {"type": "json_object", "json_schema": {"name": "a", "schema": ` + schema + `}}`, "response_format.json_schema", "invalid_value", "goes with type json_schema"},
		{"", `"response_format": {"type": "json_schema", "json_schema": "x"}`, "response_format.json_schema", "invalid_type", "must be an object"},
		{"", `"response_format": {"type": "json_schema", "json_schema": {"schema": ` + schema + `}}`, "response_format.json_schema.name", "missing_required_parameter", "is required"},
		{"", `"response_format": {"type": "json_schema", "json_schema": {"name": "", "schema": ` + schema + `}}`, "response_format.json_schema.name", "invalid_value", "must not be empty"},
		{"", `"response_format": {"type": "json_schema", "json_schema": {"name": "a b", "schema": ` + schema + `}}`, "response_format.json_schema.name", "invalid_value", "letters, digits"},
		{"", `"response_format": {"type": "json_schema", "json_schema": {"name": "` + strings.Repeat("n", 65) + `", "schema": ` + schema + `}}`, "response_format.json_schema.name", "invalid_value", "1 to 64"},
		{"", `"response_format": {"type": "json_schema", "json_schema": {"name": 7, "schema": ` + schema + `}}`, "response_format.json_schema.name", "invalid_type", "must be a string"},
		{"", `"response_format": {"type": "json_schema", "json_schema": {"name": "a"}}`, "response_format.json_schema.schema", "missing_required_parameter", "is required"},
		{"", `"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": null}}`, "response_format.json_schema.schema", "missing_required_parameter", "is required"},
		{"", `"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": "{}"}}`, "response_format.json_schema.schema", "invalid_type", "must be an object, got a string"},
		{"", `"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": ` + schema + `, "strict": "yes"}}`, "response_format.json_schema.strict", "invalid_type", "must be a boolean"},
		{"", `"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": ` + schema + `, "description": 1}}`, "response_format.json_schema.description", "invalid_type", "must be a string"},
		{"", `"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": ` + schema + `, "format": 1}}`, "response_format.json_schema.format", "unknown_parameter", "unknown parameter"},
		{"", `"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object", "patternProperties": {"^x": {}}}}}`, "response_format.json_schema.schema.patternProperties", "invalid_value", "patternProperties"},
		{"", `"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "frog"}}}`, "response_format.json_schema.schema.type", "invalid_value", `"type" must be one of`},
		{"", `"response_format": {"type": "json_object", "schema": []}`, "response_format.schema", "invalid_type", "must be an object"},
		{"", `"response_format": {"type": "text", "schema": ` + schema + `}`, "response_format.schema", "invalid_value", "goes with type json_object"},
		{"/v1/completions", `"response_format": {"type": "json_schema", "json_schema": {"name": "a"}}`, "response_format.json_schema.schema", "missing_required_parameter", "is required"},
		// grammar
		{"", `"grammar": 1`, "grammar", "invalid_type", "must be a string (GBNF), got a number"},
		{"", `"grammar": {"root": "x"}`, "grammar", "invalid_type", "got an object"},
		{"", `"grammar": "root ::= ("`, "grammar", "invalid_value", "grammar"},
		{"", `"grammar": "start ::= \"a\""`, "grammar", "invalid_value", "root"},
		{"/v1/completions", `"grammar": "root ::= [a"`, "grammar", "invalid_value", "grammar"},
		{"", `"grammar": "root ::= \"a\"", "response_format": {"type": "json_object"}`, "grammar", "invalid_value", "cannot be combined"},
		// tools
		{"", `"tools": {}`, "tools", "invalid_type", "must be an array, got an object"},
		{"", `"tools": []`, "tools", "invalid_value", "must not be empty"},
		{"", `"tools": [` + strings.Repeat(`{"type": "function", "function": {"name": "f"}}, `, MaxTools) + `{"type": "function", "function": {"name": "g"}}]`, "tools", "invalid_value", "at most 128"},
		{"", `"tools": ["f"]`, "tools[0]", "invalid_type", "must be an object, got a string"},
		{"", `"tools": [{"function": {"name": "f"}}]`, "tools[0].type", "missing_required_parameter", "is required"},
		{"", `"tools": [{"type": "custom", "function": {"name": "f"}}]`, "tools[0].type", "invalid_value", `must be "function"`},
		{"", `"tools": [{"type": "function"}]`, "tools[0].function", "missing_required_parameter", "tools[0].function is required"},
		{"", `"tools": [{"type": "function", "function": {"name": "f"}, "x": 1}]`, "tools[0].x", "unknown_parameter", "unknown parameter"},
		{"", `"tools": [{"type": "function", "function": {}}]`, "tools[0].function.name", "missing_required_parameter", "is required"},
		{"", `"tools": [{"type": "function", "function": {"name": "a.b"}}]`, "tools[0].function.name", "invalid_value", "letters, digits"},
		{"", `"tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}]`, "tools[1].function.name", "invalid_value", "unique"},
		{"", `"tools": [{"type": "function", "function": {"name": "f", "description": ["x"]}}]`, "tools[0].function.description", "invalid_type", "must be a string"},
		{"", `"tools": [{"type": "function", "function": {"name": "f", "parameters": "{}"}}]`, "tools[0].function.parameters", "invalid_type", "must be an object"},
		{"", `"tools": [{"type": "function", "function": {"name": "f", "strict": 1}}]`, "tools[0].function.strict", "invalid_type", "must be a boolean"},
		{"", `"tools": [{"type": "function", "function": {"name": "f", "examples": []}}]`, "tools[0].function.examples", "unknown_parameter", "unknown parameter"},
		// tool_choice and parallel_tool_calls
		{"", `"tool_choice": "auto"`, "tool_choice", "invalid_value", "only allowed when tools are given"},
		{"", `"parallel_tool_calls": false`, "parallel_tool_calls", "invalid_value", "only allowed when tools are given"},
		{"", tools + `, "parallel_tool_calls": "no"`, "parallel_tool_calls", "invalid_type", "must be a boolean, got a string"},
		{"", tools + `, "tool_choice": "any"`, "tool_choice", "invalid_value", `got "any"`},
		{"", tools + `, "tool_choice": 1`, "tool_choice", "invalid_type", "must be a string or an object"},
		{"", tools + `, "tool_choice": {"type": "function"}`, "tool_choice.function", "missing_required_parameter", "tool_choice.function is required"},
		{"", tools + `, "tool_choice": {"type": "allowed_tools", "function": {"name": "get_weather"}}`, "tool_choice.type", "invalid_value", `must be "function"`},
		{"", tools + `, "tool_choice": {"type": "function", "function": {}}`, "tool_choice.function.name", "missing_required_parameter", "is required"},
		{"", tools + `, "tool_choice": {"type": "function", "function": {"name": "get_time"}}`, "tool_choice.function.name", "invalid_value", "not among the tools"},
		{"", `"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "frog"}}}}}], "tool_choice": "required"`, "tools[0].function.parameters.properties.a.type", "invalid_value", `"type" must be one of`},
		{"", `"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "not": {}}}}]`, "tools[0].function.parameters.not", "invalid_value", `parameters.not cannot be used: "not" is not supported`},
		{"", `"response_format": {"type": "json_object"}, "stop": [","]`, "stop", "invalid_value", "stop cannot be combined with a grammar"},
		{"", `"grammar": "root ::= \"a\"", "stop": "a"`, "stop", "invalid_value", "stop cannot be combined with a grammar"},
		{"", `"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}], "tool_choice": "none"`, "tools[0].function.parameters", "invalid_value", `must describe an object`},
		// tools with a constrained text
		{"", tools + `, "response_format": {"type": "json_object"}`, "response_format", "invalid_value", `applies with tool_choice "none" only`},
		{"", tools + `, "tool_choice": "required", "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": ` + schema + `}}`, "response_format", "invalid_value", `tool_choice "required"`},
		{"", tools + `, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "grammar": "root ::= \"a\""`, "grammar", "invalid_value", `function "get_weather"`},
	} {
		path := tc.path
		body := "{" + msgs + ", " + tc.fields + "}"
		if path == "" {
			path = "/v1/chat/completions"
		} else {
			body = `{"prompt": "hi", ` + tc.fields + "}"
		}
		e := jobError(a, path, body)
		require.NotNil(t, e, tc.fields)
		assert.Equal(t, TypeInvalidRequest, e.Type, tc.fields)
		assert.Equal(t, tc.param, e.Param, "param of "+tc.fields)
		assert.Equal(t, tc.code, e.Code, "code of "+tc.fields)
		assert.Contains(t, e.Message, tc.msg, tc.fields)
	}
}

// TestToolMessageErrors: the tool fields of messages are checked, naming
// the message and the field.
func TestToolMessageErrors(t *testing.T) {
	a := newAPI(t)
	call := `{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}`
	for _, tc := range []struct {
		msg, param, code, text string
	}{
		{`{"role": "user", "content": "x", "tool_calls": [` + call + `]}`, "messages[1].tool_calls", "invalid_value", "only assistant messages"},
		{`{"role": "assistant", "tool_calls": {}}`, "messages[1].tool_calls", "invalid_type", "must be an array"},
		{`{"role": "assistant", "tool_calls": [1]}`, "messages[1].tool_calls[0]", "invalid_type", "must be an object"},
		{`{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}`, "messages[1].tool_calls[0].id", "missing_required_parameter", "is required"},
		{`{"role": "assistant", "tool_calls": [{"id": "c", "type": "fn", "function": {"name": "f"}}]}`, "messages[1].tool_calls[0].type", "invalid_value", `must be "function"`},
		{`{"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]}`, "messages[1].tool_calls[0].function", "missing_required_parameter", "messages[1].tool_calls[0].function is required"},
		{`{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"arguments": "{}"}}]}`, "messages[1].tool_calls[0].function.name", "missing_required_parameter", "is required"},
		{`{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}]}`, "messages[1].tool_calls[0].function.arguments", "invalid_type", "must be a string"},
		{`{"role": "tool", "content": "42"}`, "messages[1].tool_call_id", "missing_required_parameter", "is required"},
		{`{"role": "tool", "content": "42", "tool_call_id": 1}`, "messages[1].tool_call_id", "invalid_type", "must be a string"},
		{`{"role": "tool", "content": "42", "tool_call_id": "call_1", "name": 1}`, "messages[1].name", "invalid_type", "must be a string"},
		{`{"role": "user", "content": "42", "tool_call_id": "call_1"}`, "messages[1].tool_call_id", "invalid_value", "only tool messages"},
		{`{"role": "user", "content": "42", "name": ["x"]}`, "messages[1].name", "invalid_type", "must be a string"},
	} {
		e := jobError(a, "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}, `+tc.msg+`]}`)
		require.NotNil(t, e, tc.msg)
		assert.Equal(t, TypeInvalidRequest, e.Type, tc.msg)
		assert.Equal(t, tc.param, e.Param, "param of "+tc.msg)
		assert.Equal(t, tc.code, e.Code, "code of "+tc.msg)
		assert.Contains(t, e.Message, tc.text, tc.msg)
	}
}
