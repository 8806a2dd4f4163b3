package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/openai"
)

// responseBody is what a test reads of a Response.
type responseBody struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Status            string `json:"status"`
	OutputText        string `json:"output_text"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Status    string `json:"status"`
		Role      string `json:"role"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Content   []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// TestResponses: /v1/responses answers as the chat completion it stands
// for (the same tokens), with instructions, a list of items, a forced
// function call and its output sent back, and refuses what a stateless
// server cannot do, naming the field.
func TestResponses(t *testing.T) {
	h := newHandler(t, Options{})
	post := func(body string) responseBody {
		t.Helper()
		w := do(h, "POST", "/v1/responses", body)
		require.Equal(t, 200, w.Code, w.Body.String())
		var r responseBody
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &r))
		return r
	}
	r := post(`{"model": "m", "input": "Once upon a time", "instructions": "Tell a story.", "max_output_tokens": 8, "temperature": 0}`)
	c := decodeCompletion(t, do(h, "POST", "/v1/chat/completions",
		`{"messages": [{"role": "system", "content": "Tell a story."}, {"role": "user", "content": "Once upon a time"}], "max_tokens": 8, "temperature": 0}`))
	assert.True(t, strings.HasPrefix(r.ID, "resp_"), r.ID)
	assert.Equal(t, "response", r.Object)
	require.Len(t, r.Output, 1)
	assert.Equal(t, "message", r.Output[0].Type)
	assert.Equal(t, c.text(t), r.Output[0].Content[0].Text)
	assert.Equal(t, c.text(t), r.OutputText)
	assert.Equal(t, c.Usage.PromptTokens, r.Usage.InputTokens)
	assert.Equal(t, c.Usage.CompletionTokens, r.Usage.OutputTokens)
	require.Equal(t, "length", c.Choices[0].FinishReason, "max_tokens cuts the story")
	assert.Equal(t, "incomplete", r.Status)
	assert.Equal(t, "max_output_tokens", r.IncompleteDetails.Reason)
	assert.Equal(t, "incomplete", r.Output[0].Status, "the message max_output_tokens cut, as OpenAI marks it")

	items := post(`{"input": [{"role": "developer", "content": "Tell a story."}, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Once upon a time"}]}], "max_output_tokens": 8, "temperature": 0}`)
	assert.Equal(t, r.OutputText, items.OutputText, "instructions and a developer message are one system message")

	tool := `"tools": [{"type": "function", "name": "f", "description": "The time now."}]`
	call := post(`{"input": "hi", ` + tool + `, "tool_choice": "required", "parallel_tool_calls": false, "temperature": 0}`)
	require.Len(t, call.Output, 1, "a forced call and no text")
	fc := call.Output[0]
	assert.Equal(t, "function_call", fc.Type)
	assert.Equal(t, "f", fc.Name)
	assert.NotEmpty(t, fc.CallID)
	assert.JSONEq(t, `{}`, fc.Arguments)
	back := post(`{"input": [{"role": "user", "content": "hi"}, ` + mustJSON(t, map[string]any{"type": "function_call", "call_id": fc.CallID, "name": "f", "arguments": fc.Arguments}) +
		`, {"type": "function_call_output", "call_id": "` + fc.CallID + `", "output": "ok"}], ` + tool + `, "tool_choice": "none", "max_output_tokens": 4, "temperature": 0}`)
	same := decodeCompletion(t, do(h, "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}, `+
		mustJSON(t, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": fc.CallID, "type": "function", "function": map[string]any{"name": "f", "arguments": fc.Arguments}}}})+
		`, {"role": "tool", "tool_call_id": "`+fc.CallID+`", "content": "ok"}], "tools": [{"type": "function", "function": {"name": "f", "description": "The time now."}}], "tool_choice": "none", "max_tokens": 4, "temperature": 0}`))
	assert.Equal(t, "message", back.Output[0].Type)
	assert.Equal(t, same.Usage.PromptTokens, back.Usage.InputTokens, "the call and its output are the chat's assistant and tool messages")
	assert.Equal(t, same.text(t), back.OutputText)

	schema := post(`{"input": "hi", "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}, "temperature": 0}`)
	var obj struct{ A *int }
	require.NoError(t, json.Unmarshal([]byte(schema.OutputText), &obj), schema.OutputText)
	assert.NotNil(t, obj.A)

	for _, tc := range []struct{ body, param string }{
		{`{"input": "x", "previous_response_id": "resp_1"}`, "previous_response_id"},
		{`{"input": "x", "store": true}`, "store"},
		{`{}`, "input"},
		{`{"input": [{"type": "image", "role": "user"}]}`, "input[0].type"},
		{`{"input": [{"role": "user", "content": [{"type": "input_image"}]}]}`, "input[0].content[0].type"},
		{`{"input": "x", "tools": [{"type": "web_search"}]}`, "tools[0].type"},
		{`{"input": "x", "max_output_tokens": 0}`, "max_output_tokens"},
		{`{"input": "x", "text": {"format": {"type": "json_schema", "schema": {"type": "object"}}}}`, "text.format.name"},
	} {
		w := do(h, "POST", "/v1/responses", tc.body)
		require.Equal(t, 400, w.Code, tc.body)
		e := apiErrorOf(t, w.Body.Bytes())
		require.NotNil(t, e.Param, tc.body)
		assert.Equal(t, tc.param, *e.Param, "%s: %s", tc.body, e.Message)
	}
}

// TestResponsesStream: a streamed response sends the Responses API's
// events in order, each named by its type and numbered, its deltas adding
// up to the text of the response.completed event's response, which is
// the response answered whole.
func TestResponsesStream(t *testing.T) {
	h := newHandler(t, Options{})
	body := `{"input": "Once upon a time", "max_output_tokens": 6, "temperature": 0`
	whole := do(h, "POST", "/v1/responses", body+`}`)
	var want responseBody
	require.NoError(t, json.Unmarshal(whole.Body.Bytes(), &want))

	require.Equal(t, "incomplete", want.Status, "max_output_tokens cuts the story")
	require.Equal(t, "incomplete", want.Output[0].Status, "and its message")

	var types []string
	var text, doneStatus string
	var last responseBody
	for i, ev := range parseSSE(t, do(h, "POST", "/v1/responses", body+`, "stream": true}`).Body.String()) {
		var e struct {
			Type  string `json:"type"`
			Seq   int    `json:"sequence_number"`
			Delta string `json:"delta"`
			Item  struct {
				Status string `json:"status"`
			} `json:"item"`
			Response responseBody `json:"response"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &e))
		assert.Equal(t, e.Type, ev.name)
		assert.Equal(t, i, e.Seq)
		if len(types) == 0 || types[len(types)-1] != e.Type {
			types = append(types, e.Type)
		}
		if e.Type == "response.output_text.delta" {
			text += e.Delta
		}
		if e.Type == "response.output_item.done" {
			doneStatus = e.Item.Status
		}
		last = e.Response
	}
	assert.Equal(t, "incomplete", doneStatus, "response.output_item.done's message")
	assert.Equal(t, "incomplete", last.Output[0].Status, "the final response's message")
	end := "response.completed"
	if want.Status == "incomplete" {
		end = "response.incomplete"
	}
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", end}, types)
	assert.Equal(t, want.OutputText, text)
	assert.Equal(t, want.OutputText, last.OutputText)
	assert.Equal(t, want.Output[0].Content, last.Output[0].Content)
	assert.Equal(t, want.Status, last.Status)
}

// TestResponsesLogprobs: include "message.output_text.logprobs" with
// top_logprobs gives the message's text the log-probabilities the chat
// completion gives, whole and, delta by delta, streamed.
func TestResponsesLogprobs(t *testing.T) {
	h := newHandler(t, Options{})
	body := `{"input": "Once upon a time", "max_output_tokens": 5, "temperature": 0, "include": ["message.output_text.logprobs"], "top_logprobs": 2`
	var chatAnswer struct {
		Choices []struct {
			Logprobs openai.ChatLogprobs `json:"logprobs"`
		} `json:"choices"`
	}
	w := do(h, "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 5, "temperature": 0, "logprobs": true, "top_logprobs": 2}`)
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &chatAnswer))
	want := chatAnswer.Choices[0].Logprobs.Content
	require.Len(t, want, 5)

	var whole struct {
		Output []struct {
			Content []struct {
				Logprobs []openai.ChatLogprob `json:"logprobs"`
			} `json:"content"`
		} `json:"output"`
	}
	require.NoError(t, json.Unmarshal(do(h, "POST", "/v1/responses", body+`}`).Body.Bytes(), &whole))
	assert.Equal(t, want, whole.Output[0].Content[0].Logprobs)

	var streamed, done []openai.ChatLogprob
	for _, ev := range parseSSE(t, do(h, "POST", "/v1/responses", body+`, "stream": true}`).Body.String()) {
		var e struct {
			Logprobs []openai.ChatLogprob `json:"logprobs"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &e))
		switch ev.name {
		case "response.output_text.delta":
			streamed = append(streamed, e.Logprobs...)
		case "response.output_text.done":
			done = e.Logprobs
		}
	}
	assert.Equal(t, want, streamed)
	assert.Equal(t, want, done)
}

// TestResponsesReasoning: a reply that reasons (Qwen3.5's template opens
// the think block in the prompt) has a reasoning item before its message,
// streamed as a reasoning item's events, its text the one answered whole.
func TestResponsesReasoning(t *testing.T) {
	h, err := New(editedModel(t, models.Default(), "tokenizer.chat_template", gguf.ValueOf(qwen3Template+`{{- '<think>\n' }}`), "", 0), Options{})
	require.NoError(t, err)
	body := `{"input": "Once upon a time", "max_output_tokens": 6, "temperature": 0`
	type item struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	var whole struct {
		Output []item `json:"output"`
	}
	require.NoError(t, json.Unmarshal(do(h, "POST", "/v1/responses", body+`}`).Body.Bytes(), &whole))
	require.Len(t, whole.Output, 2)
	assert.Equal(t, "reasoning", whole.Output[0].Type)
	assert.Equal(t, "reasoning_text", whole.Output[0].Content[0].Type)
	assert.NotEmpty(t, whole.Output[0].Content[0].Text)
	assert.Equal(t, "message", whole.Output[1].Type)

	var types []string
	var reasoning string
	var last struct {
		Output []item `json:"output"`
	}
	for _, ev := range parseSSE(t, do(h, "POST", "/v1/responses", body+`, "stream": true}`).Body.String()) {
		var e struct {
			Delta    string `json:"delta"`
			Response struct {
				Output []item `json:"output"`
			} `json:"response"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &e))
		if len(types) == 0 || types[len(types)-1] != ev.name {
			types = append(types, ev.name)
		}
		if ev.name == "response.reasoning_text.delta" {
			reasoning += e.Delta
		}
		last.Output = e.Response.Output
	}
	assert.Equal(t, []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
		"response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete"}, types)
	assert.Equal(t, whole.Output[0].Content[0].Text, reasoning)
	assert.Equal(t, whole.Output, last.Output)
}
