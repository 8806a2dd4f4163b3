//go:build !js

package e2e

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Structured output and tool calling through the unmodified
// openai npm client and curl, against `wasmlm serve` and the edge worker.

// structuredCall is a tool call as openai_structured_client.mjs prints it.
type structuredCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// structuredReply is a chat reply as the script prints it.
type structuredReply struct {
	Content      *string          `json:"content"`
	FinishReason string           `json:"finish_reason"`
	Calls        []structuredCall `json:"calls"`
}

// structuredResult is what openai_structured_client.mjs prints.
type structuredResult struct {
	Named          structuredReply `json:"named"`
	RequiredStream struct {
		structuredReply
		DoneEvents []struct {
			Name      string `json:"name"`
			Index     int    `json:"index"`
			Arguments string `json:"arguments"`
		} `json:"done_events"`
		Chunks int `json:"chunks"`
	} `json:"required_stream"`
	Required structuredReply `json:"required"`
	RunTools struct {
		Called   []string `json:"called"`
		Messages []struct {
			Role       string  `json:"role"`
			ToolCallID *string `json:"tool_call_id"`
			Content    *string `json:"content"`
		} `json:"messages"`
	} `json:"run_tools"`
	RoundTrip struct {
		structuredReply
		PromptTokens int `json:"prompt_tokens"`
	} `json:"round_trip"`
	JSONObject struct {
		Content      string `json:"content"`
		FinishReason string `json:"finish_reason"`
	} `json:"json_object"`
	JSONSchema struct {
		Content      string          `json:"content"`
		Parsed       json.RawMessage `json:"parsed"`
		FinishReason string          `json:"finish_reason"`
	} `json:"json_schema"`
	JSONSchemaStream struct {
		Content      string `json:"content"`
		FinishReason string `json:"finish_reason"`
	} `json:"json_schema_stream"`
	CompletionJSON struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"completion_json"`
	Error *clientError `json:"error"`
}

// runStructuredClient runs openai_structured_client.mjs against baseURL
// (ending in /v1) and returns its raw output and what it says.
func runStructuredClient(t *testing.T, baseURL string) ([]byte, structuredResult) {
	t.Helper()
	var r structuredResult
	out := runOpenAIScript(t, &r, "openai_structured_client.mjs", baseURL)
	return out, r
}

// checkStructured checks what the openai client got: tool calls for a
// named function and for "required" (streamed and reassembled by the
// client's ChatCompletionStream, the same calls as not streamed), runTools
// calling the function, the round trip of the calls and the tool's result
// answered in text, JSON from json_object and json_schema (parsed by the
// client's parse helper), and a bad request raised as BadRequestError.
func checkStructured(t *testing.T, r structuredResult) {
	t.Helper()
	isCall := func(c structuredCall, names ...string) {
		t.Helper()
		assert.Regexp(t, `^call_[0-9A-Za-z]{24}$`, c.ID)
		assert.Equal(t, "function", c.Type)
		assert.Contains(t, names, c.Name)
		assert.JSONEq(t, `{}`, c.Arguments)
	}
	assert.Nil(t, r.Named.Content)
	assert.Equal(t, "tool_calls", r.Named.FinishReason)
	if assert.Len(t, r.Named.Calls, 1, "parallel_tool_calls false") {
		isCall(r.Named.Calls[0], "get_date")
	}

	assert.Nil(t, r.Required.Content)
	assert.Equal(t, "tool_calls", r.Required.FinishReason)
	require.NotEmpty(t, r.Required.Calls)
	for _, c := range r.Required.Calls {
		isCall(c, "get_time", "get_date")
	}
	assert.Equal(t, r.Required, r.RequiredStream.structuredReply, "streamed, reassembled by the client: the same reply (same seed, same ids)")
	assert.Len(t, r.RequiredStream.DoneEvents, len(r.Required.Calls), "a tool_calls.function.arguments.done event per call")
	assert.Equal(t, 2+2*len(r.Required.Calls), r.RequiredStream.Chunks, "the role, two chunks a call, the finish")

	assert.Equal(t, []string{"{}"}, r.RunTools.Called, "runTools called the function once, with the model's arguments")
	if assert.Len(t, r.RunTools.Messages, 3) {
		assert.Equal(t, "assistant", r.RunTools.Messages[1].Role)
		assert.Equal(t, "tool", r.RunTools.Messages[2].Role)
		assert.Regexp(t, `^call_`, deref(r.RunTools.Messages[2].ToolCallID))
		assert.Equal(t, "noon", deref(r.RunTools.Messages[2].Content))
	}

	assert.Empty(t, r.RoundTrip.Calls, `tool_choice "none": text`)
	require.NotNil(t, r.RoundTrip.Content)
	assert.NotEmpty(t, *r.RoundTrip.Content)
	assert.Equal(t, "length", r.RoundTrip.FinishReason)

	var obj map[string]any
	assert.NoError(t, json.Unmarshal([]byte(r.JSONObject.Content), &obj), "json_object: %q", r.JSONObject.Content)
	assert.Equal(t, "stop", r.JSONObject.FinishReason)
	assert.NoError(t, json.Unmarshal([]byte(r.CompletionJSON.Text), &obj), "/v1/completions json_object: %q", r.CompletionJSON.Text)
	for name, content := range map[string]string{"json_schema": r.JSONSchema.Content, "json_schema streamed": r.JSONSchemaStream.Content} {
		var person struct {
			Name *string `json:"name"`
			Age  *int    `json:"age"`
		}
		dec := json.NewDecoder(strings.NewReader(content))
		dec.DisallowUnknownFields()
		if assert.NoError(t, dec.Decode(&person), "%s: %q", name, content) && assert.NotNil(t, person.Name, name) && assert.NotNil(t, person.Age, name) {
			assert.LessOrEqual(t, len([]rune(*person.Name)), 16, name)
			assert.True(t, *person.Age >= 0 && *person.Age <= 120, "%s: age %d", name, *person.Age)
		}
	}
	assert.JSONEq(t, r.JSONSchema.Content, string(r.JSONSchema.Parsed), "the client's parse helper read the content")
	assert.Equal(t, "stop", r.JSONSchema.FinishReason)
	assert.Equal(t, "stop", r.JSONSchemaStream.FinishReason)

	if assert.NotNil(t, r.Error) {
		assert.Equal(t, "BadRequestError", r.Error.Name)
		assert.Equal(t, http.StatusBadRequest, r.Error.Status)
		assert.Equal(t, "response_format.json_schema.name", deref(r.Error.Param))
	}
}

// readmeCurl is the curl example of a forced tool call that
// docs/structured-output.md and httpapi/README.md show.
var readmeCurl = []string{"-s", "/v1/chat/completions", "-H", "Content-Type: application/json", "-d", `{
  "messages": [{"role": "user", "content": "What time is it?"}],
  "tools": [{"type": "function", "function": {"name": "get_time", "description": "The time now."}}],
  "tool_choice": "required", "parallel_tool_calls": false, "seed": 1
}`}

// checkCurl runs that curl example against base and checks its
// reply: one call of get_time.
func checkCurl(t *testing.T, base string) {
	t.Helper()
	curl := needTool(t, "curl", "Debian package curl")
	args := append([]string(nil), readmeCurl...)
	args[1] = base + args[1]
	out, err := exec.Command(curl, args...).Output()
	require.NoError(t, err)
	var resp struct {
		Choices []struct {
			Message struct {
				Content   *string          `json:"content"`
				ToolCalls []map[string]any `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(out, &resp), "%s", out)
	require.Len(t, resp.Choices, 1, "%s", out)
	c := resp.Choices[0]
	assert.Equal(t, "tool_calls", c.FinishReason)
	assert.Nil(t, c.Message.Content)
	if assert.Len(t, c.Message.ToolCalls, 1) {
		assert.Equal(t, map[string]any{"name": "get_time", "arguments": "{}"}, c.Message.ToolCalls[0]["function"])
	}
}

// TestHTTPServeStructured: `wasmlm serve` gives the unmodified openai
// client tool calls (streamed and not) and JSON replies, and curl the
// documented example.
func TestHTTPServeStructured(t *testing.T) {
	p := startServe(t)
	_, r := runStructuredClient(t, p.url+"/v1")
	checkStructured(t, r)
	checkCurl(t, p.url)
}

// TestWorkerStructured: the edge worker gives the same, byte for byte, as
// the same handler natively (every request has a seed, so ids and texts
// are the same).
func TestWorkerStructured(t *testing.T) {
	edge := edgeWorker(t).url
	out, r := runStructuredClient(t, edge+"/v1")
	checkStructured(t, r)
	native, _ := runStructuredClient(t, nativeServer(t).URL+"/v1")
	assert.JSONEq(t, string(native), string(out), "the edge worker's replies are the native handler's")
	checkCurl(t, edge)
}
