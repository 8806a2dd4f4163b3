package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/policy"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// clockTools are tools without parameters: their description in the
// generic tool format leaves stories260K room for a call (a tool with a
// parameters schema takes most of its 512-token context).
const clockTools = `"tools": [{"type": "function", "function": {"name": "get_time", "description": "The time now."}},
	{"type": "function", "function": {"name": "get_date"}}]`

// replyJSON is a non-streamed chat reply as a client reads it.
type replyJSON struct {
	Choices []struct {
		Message      map[string]json.RawMessage `json:"message"`
		FinishReason string                     `json:"finish_reason"`
	} `json:"choices"`
}

// callJSON is a reply's tool call.
type callJSON struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// chatReply sends a non-streamed chat request and returns its message's
// content (nil for null), calls and finish reason.
func chatReplyOf(t *testing.T, h http.Handler, body string) (content *string, calls []callJSON, finish string) {
	t.Helper()
	w := do(h, "POST", "/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, w.Code, "%s: %s", body, w.Body.String())
	var r replyJSON
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &r))
	require.Len(t, r.Choices, 1)
	m := r.Choices[0].Message
	raw, ok := m["content"]
	require.True(t, ok, "message.content is always there: %s", w.Body)
	require.NoError(t, json.Unmarshal(raw, &content))
	if raw, ok := m["tool_calls"]; ok {
		require.NoError(t, json.Unmarshal(raw, &calls))
		require.NotEmpty(t, calls, "tool_calls is absent when there are none")
	}
	return content, calls, r.Choices[0].FinishReason
}

// streamedReply sends a streamed chat request and reassembles it as the
// openai client's ChatCompletionStream does: content appended, each tool
// call's id, type and name set and its arguments appended, by index. It
// checks the chunks' shape on the way: the role first, a call's id, type
// and name in its first delta only, the finish reason in the last chunk.
func streamedReply(t *testing.T, h http.Handler, body string) (content *string, reasoning string, calls []callJSON, finish string) {
	t.Helper()
	w := do(h, "POST", "/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, w.Code, "%s: %s", body, w.Body.String())
	events := parseSSE(t, w.Body.String())
	require.Equal(t, "[DONE]", events[len(events)-1].data)
	for i, e := range events[:len(events)-1] {
		var c struct {
			Choices []struct {
				Delta struct {
					Role             *string `json:"role"`
					Content          *string `json:"content"`
					ReasoningContent *string `json:"reasoning_content"`
					ToolCalls        []struct {
						Index    *int    `json:"index"`
						ID       *string `json:"id"`
						Type     *string `json:"type"`
						Function *struct {
							Name      *string `json:"name"`
							Arguments *string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(e.data), &c), e.data)
		require.Len(t, c.Choices, 1)
		ch := c.Choices[0]
		d := ch.Delta
		require.Equal(t, i == 0, d.Role != nil, "the role in the first chunk only: %s", e.data)
		require.Equal(t, i == len(events)-2, ch.FinishReason != nil, "the finish reason in the last chunk only: %s", e.data)
		if ch.FinishReason != nil {
			finish = *ch.FinishReason
		}
		if d.Content != nil && (i > 0 || *d.Content != "") {
			if content == nil {
				content = new(string)
			}
			*content += *d.Content
		}
		if d.ReasoningContent != nil {
			reasoning += *d.ReasoningContent
		}
		for _, tc := range d.ToolCalls {
			require.NotNil(t, tc.Index, e.data)
			require.NotNil(t, tc.Function, e.data)
			require.NotNil(t, tc.Function.Arguments, "arguments always (\"\" when opening): %s", e.data)
			if *tc.Index == len(calls) {
				require.NotNil(t, tc.ID, "a call opens with its id: %s", e.data)
				require.Equal(t, "function", *tc.Type)
				require.NotNil(t, tc.Function.Name)
				require.Empty(t, *tc.Function.Arguments)
				calls = append(calls, callJSON{ID: *tc.ID, Type: *tc.Type})
				calls[len(calls)-1].Function.Name = *tc.Function.Name
				continue
			}
			require.Equal(t, len(calls)-1, *tc.Index, "the open call: %s", e.data)
			require.Nil(t, tc.ID)
			require.Nil(t, tc.Function.Name)
			calls[*tc.Index].Function.Arguments += *tc.Function.Arguments
		}
	}
	return content, reasoning, calls, finish
}

// TestToolChoiceForced: with tool_choice "required" or a function, the
// tiny model (its template is "plain": the generic tool format) calls a
// tool at temperature 1 for every seed: finish_reason "tool_calls",
// content null, one call without parallel_tool_calls, the named function
// when there is one, arguments that are the JSON object the (empty)
// parameters allow; streamed, the same calls reassemble from the deltas.
// The context has room for its calls: a forced call is not shortened to
// fit, and one the context cut would be dropped.
func TestToolChoiceForced(t *testing.T) {
	h := newHandler(t, Options{ContextLength: 2048})
	for _, tc := range []struct {
		choice   string
		parallel string
		names    []string
	}{
		{`"required"`, ``, []string{"get_time", "get_date"}},
		{`"required"`, `, "parallel_tool_calls": false`, []string{"get_time", "get_date"}},
		{`{"type": "function", "function": {"name": "get_date"}}`, ``, []string{"get_date"}},
		{`{"type": "function", "function": {"name": "get_time"}}`, `, "parallel_tool_calls": false`, []string{"get_time"}},
	} {
		for seed := 1; seed <= 4; seed++ {
			body := `{"messages": [{"role": "user", "content": "What time is it?"}], ` + clockTools +
				`, "tool_choice": ` + tc.choice + tc.parallel + `, "temperature": 1, "seed": ` + strconv.Itoa(seed)
			content, calls, finish := chatReplyOf(t, h, body+"}")
			assert.Nil(t, content, body)
			assert.Equal(t, "tool_calls", finish, body)
			require.NotEmpty(t, calls, body)
			if tc.parallel != "" {
				assert.Len(t, calls, 1, body)
			}
			for _, c := range calls {
				assert.Equal(t, "function", c.Type)
				assert.Contains(t, tc.names, c.Function.Name, body)
				assert.JSONEq(t, `{}`, c.Function.Arguments)
				assert.Regexp(t, `^call_[0-9A-Za-z]{24}$`, c.ID)
			}
			sContent, _, sCalls, sFinish := streamedReply(t, h, body+`, "stream": true}`)
			assert.Nil(t, sContent, body)
			assert.Equal(t, "tool_calls", sFinish, body)
			assert.Equal(t, calls, sCalls, "streamed and reassembled: %s", body)
		}
	}
}

// twoTools are tools for replies made up by the test (scripted): their
// calls' arguments are not checked against parameters, and a tool with
// parameters takes most of stories260K's context.
const twoTools = `"tools": [{"type": "function", "function": {"name": "get_weather"}}, {"type": "function", "function": {"name": "get_time"}}]`

// genericCalls is a reply in the generic tool format making two calls.
var genericCalls = []string{`{"tool_ca`, `lls": [{"name": "get_`, `weather", "arguments": {"city": "Pa`, `ris"}}, `,
	`{"name": "get_time", "arguments": {}}]}`}

// TestToolChoiceAuto: with tool_choice "auto" (the default with tools), a
// reply that is a call in the template's tool format becomes tool_calls, any
// other reply stays text; parallel_tool_calls false keeps the first call.
func TestToolChoiceAuto(t *testing.T) {
	h := newHandler(t, Options{})
	req := `{"messages": [{"role": "user", "content": "Weather?"}], ` + twoTools
	for _, stream := range []bool{false, true} {
		reply := func(body string) (*string, []callJSON, string) {
			if stream {
				content, _, calls, finish := streamedReply(t, h, strings.TrimSuffix(body, "}")+`, "stream": true}`)
				return content, calls, finish
			}
			return chatReplyOf(t, h, body)
		}
		h.generate = scripted(genericCalls, nil)
		content, calls, finish := reply(req + `}`)
		assert.Nil(t, content)
		assert.Equal(t, "tool_calls", finish)
		require.Len(t, calls, 2)
		assert.Equal(t, "get_weather", calls[0].Function.Name)
		assert.Equal(t, `{"city":"Paris"}`, calls[0].Function.Arguments)
		assert.Equal(t, "get_time", calls[1].Function.Name)
		assert.Equal(t, `{}`, calls[1].Function.Arguments)
		assert.NotEqual(t, calls[0].ID, calls[1].ID)

		_, calls, _ = reply(req + `, "tool_choice": "auto", "parallel_tool_calls": false}`)
		require.Len(t, calls, 1, "the first call only")
		assert.Equal(t, "get_weather", calls[0].Function.Name)

		h.generate = scripted([]string{"It is ", "sunny."}, nil)
		content, calls, finish = reply(req + `}`)
		require.NotNil(t, content)
		assert.Equal(t, "It is sunny.", *content)
		assert.Empty(t, calls)
		assert.Equal(t, "stop", finish)

		h.generate = scripted([]string{`{"response": "It is `, `sunny."}`}, nil)
		content, calls, _ = reply(req + `}`)
		require.NotNil(t, content)
		assert.Equal(t, "It is sunny.", *content, "the generic format's text reply")
		assert.Empty(t, calls)
	}
}

// TestToolChoiceNone: with tool_choice "none" the reply is text, even one
// that reads as a call, and the prompt does not describe the tools; the
// real model's reply is plain text too, and a response_format applies.
func TestToolChoiceNone(t *testing.T) {
	h := newHandler(t, Options{})
	var without, none engine.Prompt
	h.generate = scripted(genericCalls, &without)
	content, calls, finish := chatReplyOf(t, h, `{"messages": [{"role": "user", "content": "Weather?"}]}`)
	h.generate = scripted(genericCalls, &none)
	body := `{"messages": [{"role": "user", "content": "Weather?"}], "tools": [` + weatherTool + `], "tool_choice": "none"`
	content2, calls2, finish2 := chatReplyOf(t, h, body+`}`)
	assert.Equal(t, without.Tokens, none.Tokens, "the tools are not described")
	require.NotNil(t, content2)
	assert.Equal(t, strings.Join(genericCalls, ""), *content2)
	assert.Empty(t, calls2)
	assert.Equal(t, "stop", finish2)
	assert.Equal(t, *content, *content2)
	assert.Equal(t, calls, calls2)
	assert.Equal(t, finish, finish2)

	h.generate = runSession
	for seed := 1; seed <= 3; seed++ {
		b := body + `, "max_tokens": 40, "temperature": 1, "seed": ` + strconv.Itoa(seed)
		content, calls, _ := chatReplyOf(t, h, b+`}`)
		require.NotNil(t, content)
		assert.Empty(t, calls)
		sContent, _, sCalls, _ := streamedReply(t, h, b+`, "stream": true}`)
		assert.Equal(t, content, sContent)
		assert.Empty(t, sCalls)

		content, _, finish = chatReplyOf(t, h, body+`, "response_format": {"type": "json_object"}, "temperature": 1, "seed": `+strconv.Itoa(seed)+`}`)
		require.NotNil(t, content)
		assert.True(t, json.Valid([]byte(*content)), *content)
		assert.Equal(t, "stop", finish)
	}
}

// TestToolCallStreamChunks: a streamed reply's calls come after its content
// as OpenAI's deltas, exactly: per call, one chunk with index, id, type,
// name and arguments "", one with its arguments; then finish_reason
// "tool_calls", the usage chunk when asked, [DONE].
func TestToolCallStreamChunks(t *testing.T) {
	h := newHandler(t, Options{})
	h.generate = scripted(genericCalls, nil)
	w := do(h, "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "Weather?"}], `+twoTools+
		`, "seed": 7, "stream": true, "stream_options": {"include_usage": true}}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	events := parseSSE(t, w.Body.String())
	var got []string
	for _, e := range events {
		if e.data == "[DONE]" {
			got = append(got, e.data)
			continue
		}
		var c map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(e.data), &c))
		var choices []map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(c["choices"], &choices))
		if len(choices) == 0 {
			got = append(got, "usage")
			continue
		}
		got = append(got, string(choices[0]["delta"])+" "+string(choices[0]["finish_reason"]))
	}
	_, calls, _ := chatReplyOf(t, h, `{"messages": [{"role": "user", "content": "Weather?"}], `+twoTools+`, "seed": 7}`)
	require.Len(t, calls, 2)
	id0, id1 := calls[0].ID, calls[1].ID // the same request (seed and prompt): the same ids
	assert.Equal(t, []string{
		`{"role":"assistant","content":""} null`,
		`{"tool_calls":[{"index":0,"id":"` + id0 + `","type":"function","function":{"name":"get_weather","arguments":""}}]} null`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}]} null`,
		`{"tool_calls":[{"index":1,"id":"` + id1 + `","type":"function","function":{"name":"get_time","arguments":""}}]} null`,
		`{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]} null`,
		`{} "tool_calls"`,
		"usage",
		"[DONE]",
	}, got)
}

// TestToolMessagesInPrompt: an assistant message with tool_calls (content
// null) and the tool message answering it reach the template as chat's
// ToolCalls, ToolCallID and Name: the prompt is the one chat renders for
// them, which holds the call and the result.
func TestToolMessagesInPrompt(t *testing.T) {
	h := newHandler(t, Options{})
	var got engine.Prompt
	h.generate = scripted([]string{"It is sunny."}, &got)
	body := `{"messages": [
		{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "call_abc", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
		{"role": "tool", "tool_call_id": "call_abc", "name": "get_weather", "content": "sunny, 21 C"}
	], "tools": [` + weatherTool + `], "tool_choice": "none"}`
	content, calls, _ := chatReplyOf(t, h, body)
	require.NotNil(t, content)
	assert.Equal(t, "It is sunny.", *content)
	assert.Empty(t, calls)

	want, err := policy.NewChatPrompt(h.model, []chat.Message{
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "call_abc", Name: "get_weather", Arguments: `{"city": "Paris"}`}}},
		{Role: "tool", ToolCallID: "call_abc", Name: "get_weather", Content: "sunny, 21 C"},
	}, chat.Options{ToolChoice: chat.ToolChoice{Mode: chat.ToolNone}})
	require.NoError(t, err)
	assert.Equal(t, want.Tokens, got.Tokens)
	text, err := tokenizer.Decode(h.model.Tokenizer(), got.Tokens)
	require.NoError(t, err)
	for _, s := range []string{`"tool_call_id": "call_abc"`, `"tool": "get_weather"`, `sunny, 21 C`, `"city": "Paris"`} {
		assert.Contains(t, text, s)
	}
}

// TestToolCallIDs: call ids differ between requests without a seed; with
// one, the same request gets the same ids, and the conversation's next turn
// new ones, never those of the calls in its history.
func TestToolCallIDs(t *testing.T) {
	h := newHandler(t, Options{})
	h.generate = scripted(genericCalls, nil)
	req := `{"messages": [{"role": "user", "content": "Weather?"}], ` + twoTools
	seen := map[string]bool{}
	for range 10 {
		for _, stream := range []bool{false, true} {
			var calls []callJSON
			if stream {
				_, _, calls, _ = streamedReply(t, h, req+`, "stream": true}`)
			} else {
				_, calls, _ = chatReplyOf(t, h, req+`}`)
			}
			for _, c := range calls {
				assert.False(t, seen[c.ID], "id %s given twice", c.ID)
				seen[c.ID] = true
			}
		}
	}
	assert.Len(t, seen, 40)

	// The Hermes format: the generic one's history of a call and its
	// result does not fit stories260K's context.
	h, err := New(hermesModel(t), Options{})
	require.NoError(t, err)
	h.generate = scripted([]string{"<tool_call>\n{\"name\": \"t\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"t\", \"arguments\": {}}\n</tool_call>"}, nil)
	req = `{"messages": [{"role": "user", "content": "Weather?"}], "tools": [{"type": "function", "function": {"name": "t"}}]`
	_, a, _ := chatReplyOf(t, h, req+`, "seed": 3}`)
	_, b, _ := chatReplyOf(t, h, req+`, "seed": 3}`)
	assert.Equal(t, a, b, "same seed, same request: same ids")
	next := strings.Replace(req, `"Weather?"}]`, `"Weather?"}, {"role": "assistant", "tool_calls": [{"id": "`+a[0].ID+
		`", "type": "function", "function": {"name": "t", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "`+a[0].ID+`", "content": "12"}]`, 1)
	_, c, _ := chatReplyOf(t, h, next+`, "seed": 3}`)
	require.Len(t, c, 2)
	assert.NotEqual(t, a[0].ID, c[0].ID)
	assert.NotEqual(t, a[1].ID, c[1].ID)
}

// hermesModel is the default model with enough of Qwen3's template for
// Detect to see its family and its tool format, Hermes's.
func hermesModel(t *testing.T) *engine.Model {
	t.Helper()
	return editedModel(t, models.Default(), "tokenizer.chat_template", gguf.ValueOf(qwen3Template+`{{- '<tool_call>' }}`), "", 0)
}

// TestToolsThinking: a thinking template (Qwen3's, the Hermes tool format)
// with a forced call or a JSON format has thinking off, so the grammar
// holds the reply from its start; with tool_choice "auto" it thinks, and
// the reasoning comes apart from the calls, streamed or not.
func TestToolsThinking(t *testing.T) {
	m := hermesModel(t)
	h, err := New(m, Options{})
	require.NoError(t, err)
	tmpl, err := policy.ChatTemplate(m)
	require.NoError(t, err)
	require.Equal(t, chat.ToolFormatHermes, tmpl.ToolFormat())
	msgs := []chat.Message{{Role: "user", Content: "hi"}}
	tools := []chat.Tool{{Name: "get_time"}}
	for _, tc := range []struct {
		fields string
		opts   chat.Options
	}{
		{`, "tool_choice": "required"`, chat.Options{Tools: tools, ToolChoice: chat.ToolChoice{Mode: chat.ToolRequired}, DisableThinking: true}},
		{`, "tool_choice": {"type": "function", "function": {"name": "get_time"}}`,
			chat.Options{Tools: tools, ToolChoice: chat.ToolChoice{Mode: chat.ToolFunction, Function: "get_time"}, DisableThinking: true}},
		{``, chat.Options{Tools: tools}},
		{`, "tool_choice": "none", "response_format": {"type": "json_object"}`, chat.Options{Tools: tools, ToolChoice: chat.ToolChoice{Mode: chat.ToolNone}, DisableThinking: true}},
	} {
		want, err := policy.NewChatPrompt(m, msgs, tc.opts)
		require.NoError(t, err)
		var got engine.Prompt
		h.generate = scripted([]string{"x"}, &got)
		w := do(h, "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "get_time"}}]`+tc.fields+`}`)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		assert.Equal(t, want.Tokens, got.Tokens, tc.fields)
	}

	reply := []string{"<think>\nThe user", " wants the time.\n</think>\n\n<tool_", "call>\n{\"name\": \"get_time\", ", "\"arguments\": {}}\n</tool_call>"}
	h.generate = scripted(reply, nil)
	body := `{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "get_time"}}]`
	w := do(h, "POST", "/v1/chat/completions", body+`}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var r replyJSON
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &r))
	assert.JSONEq(t, `"The user wants the time."`, string(r.Choices[0].Message["reasoning_content"]))
	assert.JSONEq(t, `null`, string(r.Choices[0].Message["content"]))
	content, reasoning, calls, finish := streamedReply(t, h, body+`, "stream": true}`)
	assert.Nil(t, content)
	assert.Equal(t, "The user wants the time.", reasoning)
	require.Len(t, calls, 1)
	assert.Equal(t, "get_time", calls[0].Function.Name)
	assert.Equal(t, "{}", calls[0].Function.Arguments)
	assert.Equal(t, "tool_calls", finish)
}
