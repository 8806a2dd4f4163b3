package jsbridge

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/policy"
)

// toolModels are the default model with a context of 2048 (its 512 do not
// hold a prompt that describes tools: the generic format's instructions and
// an indented JSON list of the tools take 600 of its tokens), as it is
// (the plain template: the generic tool format) and with Qwen3's template
// (the Hermes tool format).
func toolModels(t *testing.T) []struct {
	name string
	data []byte
} {
	t.Helper()
	long, err := modelgen.SetKV(models.Default(), "llama.context_length", gguf.ValueOf(uint32(2048)))
	require.NoError(t, err)
	// A template that writes <tool_call> is one trained for tools: Hermes.
	qwen3, err := modelgen.SetKV(long, "tokenizer.chat_template", gguf.ValueOf(qwen3Template+`{{- '<tool_call>' }}`))
	require.NoError(t, err)
	return []struct {
		name string
		data []byte
	}{{"plain", long}, {"qwen3", qwen3}}
}

// newLoadedFile returns a binding with data loaded (see newLoaded).
func newLoadedFile(t *testing.T, data []byte) *Binding {
	t.Helper()
	b := New()
	t.Cleanup(func() {
		b.Release()
		require.Zero(t, b.LiveFuncs(), "js.Funcs left unreleased")
	})
	mustCall(t, b, "load", jsBytes(data))
	return b
}

// weatherParams is the parameters schema of the tests' get_weather tool.
const weatherParams = `{"type":"object","properties":{"city":{"type":"string","maxLength":20},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city","unit"],"additionalProperties":false}`

// testTools are two tools, as a request gives them (the parameters as
// JSON text, whose keys' order the prompt shows) and as chat takes them.
func testTools() ([]any, []chat.Tool) {
	reqTools := []any{
		map[string]any{"type": "function", "function": map[string]any{
			"name": "get_weather", "description": "The weather in a city", "parameters": json.RawMessage(weatherParams),
		}},
		map[string]any{"type": "function", "function": map[string]any{"name": "tell_time"}},
	}
	return reqTools, []chat.Tool{
		{Name: "get_weather", Description: "The weather in a city", Parameters: json.RawMessage(weatherParams)},
		{Name: "tell_time"},
	}
}

// sampledChat is a chat request sampling n tokens at temperature 1 with
// seed in reply to msgs, with more fields.
func sampledChat(t testing.TB, msgs any, n, seed int, more map[string]any) js.Value {
	fields := map[string]any{"messages": msgs, "temperature": 1, "max_tokens": n, "seed": seed}
	for k, v := range more {
		fields[k] = v
	}
	return chatRequest(t, fields)
}

// weatherArgs checks a get_weather call's arguments against weatherParams.
func weatherArgs(t *testing.T, args string) {
	t.Helper()
	var a struct{ City, Unit *string }
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&a), "%q", args)
	require.NotNil(t, a.City, "%q", args)
	require.NotNil(t, a.Unit, "%q", args)
	assert.LessOrEqual(t, len([]rune(*a.City)), 20)
	assert.Contains(t, []string{"celsius", "fahrenheit"}, *a.Unit)
}

// toolCalls reads a result's or chunk's toolCalls.
func toolCalls(v js.Value) []chat.ToolCall {
	if v.IsUndefined() {
		return nil
	}
	out := make([]chat.ToolCall, v.Length())
	for i := range out {
		c := v.Index(i)
		out[i] = chat.ToolCall{ID: c.Get("id").String(), Name: c.Get("name").String(), Arguments: c.Get("arguments").String()}
	}
	return out
}

// TestChatToolPrompt: tools, tool_choice and the messages' tool_calls,
// tool_call_id and name give the prompt policy.NewChatPrompt gives
// natively, in the plain template's generic tool format and in Qwen3's
// Hermes one.
func TestChatToolPrompt(t *testing.T) {
	reqTools, tools := testTools()
	reqMsgs := []any{
		map[string]any{"role": "user", "content": "Weather in Paris?"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris","unit":"celsius"}`},
		}}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "20 degrees"},
		map[string]any{"role": "user", "content": "And the time?"},
	}
	msgs := []chat.Message{
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`}}},
		{Role: "tool", ToolCallID: "call_1", Name: "get_weather", Content: "20 degrees"},
		{Role: "user", Content: "And the time?"},
	}
	for _, file := range toolModels(t) {
		t.Run(file.name, func(t *testing.T) {
			b := newLoadedFile(t, file.data)
			native, err := engine.Load(file.data, engine.LoadOptions{})
			require.NoError(t, err)
			for _, c := range []struct {
				choice   any
				want     chat.ToolChoice
				thinking bool // the template's thinking stays on
			}{
				{nil, chat.ToolChoice{}, true},
				{"auto", chat.ToolChoice{Mode: chat.ToolAuto}, true},
				{"none", chat.ToolChoice{Mode: chat.ToolNone}, true},
				{"required", chat.ToolChoice{Mode: chat.ToolRequired}, false},
				{map[string]any{"type": "function", "function": map[string]any{"name": "tell_time"}}, chat.ToolChoice{Mode: chat.ToolFunction, Function: "tell_time"}, false},
			} {
				want, err := policy.NewChatPrompt(native, msgs, chat.Options{Tools: tools, ToolChoice: c.want, DisableThinking: !c.thinking})
				require.NoError(t, err)
				res := mustCall(t, b, "chat", sampledChat(t, reqMsgs, 2, 1, map[string]any{"tools": reqTools, "tool_choice": c.choice}))
				assert.Equal(t, want.Tokens, ints(res.Get("promptTokens")), "%v", c.choice)
			}
		})
	}
}

// TestChatForcedToolCall: tool_choice "required" or a named function makes
// the reply a call whose arguments are valid for the tool's parameters, in
// the plain template's generic format and in Qwen3's Hermes one, for
// several seeds at temperature 1; streamed, the chunks' content and calls
// are the result's. Parallel calls get room for all the calls the tiny
// model makes (a call is never shortened to fit max_tokens: a cut one is
// dropped, with "length").
func TestChatForcedToolCall(t *testing.T) {
	reqTools, _ := testTools()
	reqMsgs := userSays("What is the weather in Paris?")
	weather := map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}
	for _, file := range toolModels(t) {
		t.Run(file.name, func(t *testing.T) {
			b := newLoadedFile(t, file.data)
			for seed := 1; seed <= 2; seed++ {
				for _, c := range []struct {
					choice   any
					parallel bool
				}{{"required", true}, {"required", false}, {weather, false}} {
					name := fmt.Sprintf("seed %d, %v, parallel %v", seed, c.choice, c.parallel)
					fields := map[string]any{"tools": reqTools, "tool_choice": c.choice, "parallel_tool_calls": c.parallel}
					n := 200
					if c.parallel {
						n = 1200
					}
					res := mustCall(t, b, "chat", sampledChat(t, reqMsgs, n, seed, fields))
					calls := toolCalls(res.Get("toolCalls"))
					require.NotEmpty(t, calls, "%s: %q", name, res.Get("text").String())
					assert.Equal(t, "stop", res.Get("finishReason").String(), name)
					assert.Equal(t, "", res.Get("content").String(), name)
					if !c.parallel {
						assert.Len(t, calls, 1, name)
					}
					for _, call := range calls {
						assert.NotEmpty(t, call.ID)
						if c.choice != "required" {
							assert.Equal(t, "get_weather", call.Name)
						}
						switch call.Name {
						case "get_weather":
							weatherArgs(t, call.Arguments)
						case "tell_time":
							assert.Equal(t, "{}", call.Arguments)
						default:
							t.Errorf("%s: a call of %q", name, call.Name)
						}
					}

					var content strings.Builder
					var streamed []chat.ToolCall
					fn := js.FuncOf(func(_ js.Value, a []js.Value) any {
						content.WriteString(a[0].Get("content").String())
						streamed = append(streamed, toolCalls(a[0].Get("toolCalls"))...)
						return nil
					})
					sres := mustCall(t, b, "chat", sampledChat(t, reqMsgs, n, seed, fields), js.Undefined(), fn)
					fn.Release()
					assert.Equal(t, res.Get("text").String(), sres.Get("text").String(), name)
					assert.Equal(t, calls, streamed, name)
					assert.Equal(t, calls, toolCalls(sres.Get("toolCalls")), name)
					assert.Equal(t, "", content.String(), name)
				}
			}
		})
	}
}

// TestChatToolChoiceNone: with tool_choice "none" the reply is text and
// nothing is parsed for calls; with "auto" a reply that is not a call is
// all content, and its calls an empty list.
func TestChatToolChoiceNone(t *testing.T) {
	reqTools, _ := testTools()
	reqMsgs := userSays("Once upon a time")
	b := newLoadedFile(t, toolModels(t)[0].data)
	res := mustCall(t, b, "chat", sampledChat(t, reqMsgs, 40, 3, map[string]any{"tools": reqTools, "tool_choice": "none"}))
	assert.True(t, res.Get("toolCalls").IsUndefined())
	assert.NotEmpty(t, res.Get("content").String())

	auto := mustCall(t, b, "chat", chatRequest(t, map[string]any{"messages": reqMsgs, "temperature": 0, "max_tokens": 40, "tools": reqTools}))
	assert.Equal(t, 0, auto.Get("toolCalls").Length())
	require.False(t, strings.HasPrefix(strings.TrimSpace(auto.Get("text").String()), "{"), "the model wrote JSON: pick another prompt")
	assert.Equal(t, auto.Get("text").String(), auto.Get("content").String())
}

// TestToolOptionErrors: bad tools, tool_choice, parallel_tool_calls and
// tool messages reject with invalid_argument, naming the field as OpenAI's
// API does (param, also the error's field).
func TestToolOptionErrors(t *testing.T) {
	b := newLoadedFile(t, toolModels(t)[0].data)
	reqTools, _ := testTools()
	user := map[string]any{"role": "user", "content": "Hi"}
	fn := func(f map[string]any) map[string]any { return map[string]any{"type": "function", "function": f} }
	tools := func(ts ...any) map[string]any { return map[string]any{"tools": ts} }
	withTools := func(o map[string]any) map[string]any { o["tools"] = reqTools; return o }
	cases := []struct {
		opts        map[string]any
		msgs        []any
		want, param string
	}{
		{tools(5), nil, "tools[0] must be an object, got a number", "tools[0]"},
		{map[string]any{"tools": "get_weather"}, nil, "tools must be an array, got a string", "tools"},
		{tools(map[string]any{"type": "retrieval"}), nil, `tools[0].type must be "function", got "retrieval"`, "tools[0].type"},
		{tools(map[string]any{"type": "function"}), nil, "tools[0].function is required", "tools[0].function"},
		{tools(map[string]any{"type": "function", "function": map[string]any{"name": "f"}, "x": 1}), nil, `tools[0]: unknown parameter "x"`, "tools[0].x"},
		{tools(fn(map[string]any{"name": ""})), nil, "tools[0].function.name must not be empty", "tools[0].function.name"},
		{map[string]any{"tools": []any{}}, nil, "tools must not be empty (omit it for no tools)", "tools"},
		{tools(fn(map[string]any{"name": "get.weather"})), nil, `tools[0].function.name "get.weather" must be 1 to 64 letters, digits, '_' or '-'`, "tools[0].function.name"},
		{tools(fn(map[string]any{"name": "f"}), fn(map[string]any{"name": "f"})), nil, `tools[1].function.name "f" is the name of tools[0] too: names must be unique`, "tools[1].function.name"},
		{tools(fn(map[string]any{"name": "f", "description": 5})), nil, "tools[0].function.description must be a string, got a number", "tools[0].function.description"},
		{tools(fn(map[string]any{"name": "f", "parameters": []any{}})), nil, "tools[0].function.parameters must be an object, got an array", "tools[0].function.parameters"},
		{tools(fn(map[string]any{"name": "f", "strict": 1})), nil, "tools[0].function.strict must be a boolean, got a number", "tools[0].function.strict"},
		{withTools(map[string]any{"tool_choice": "always"}), nil, `tool_choice must be "auto", "none", "required" or {"type": "function", "function": {"name": ...}}, got "always"`, "tool_choice"},
		{map[string]any{"tool_choice": "required"}, nil, "tool_choice is only allowed when tools are given", "tool_choice"},
		{map[string]any{"tool_choice": "none"}, nil, "tool_choice is only allowed when tools are given", "tool_choice"},
		{map[string]any{"parallel_tool_calls": false}, nil, "parallel_tool_calls is only allowed when tools are given", "parallel_tool_calls"},
		{withTools(map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "nope"}}}), nil, `tool_choice names the function "nope", which is not among the tools`, "tool_choice.function.name"},
		{withTools(map[string]any{"tool_choice": map[string]any{"type": "tool"}}), nil, `tool_choice.type must be "function", got "tool"`, "tool_choice.type"},
		{withTools(map[string]any{"tool_choice": map[string]any{"type": "function"}}), nil, "tool_choice.function is required", "tool_choice.function"},
		{withTools(map[string]any{"parallel_tool_calls": "yes"}), nil, "parallel_tool_calls must be a boolean, got a string", "parallel_tool_calls"},
		{withTools(map[string]any{"response_format": map[string]any{"type": "json_object"}}), nil, `response_format applies with tool_choice "none" only: with tools and tool_choice "auto", the reply may be a tool call`, "response_format"},
		{withTools(map[string]any{"tool_choice": "required", "grammar": `root ::= "a"`}), nil, `grammar applies with tool_choice "none" only: with tools and tool_choice "required"`, "grammar"},
		{withTools(map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, "response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{}}}}), nil, `response_format applies with tool_choice "none" only: with tools and tool_choice function "get_weather"`, "response_format"},
		{tools(fn(map[string]any{"name": "f", "parameters": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "strng"}}}})), []any{user},
			`tools[0].function.parameters.properties.a.type cannot be used: "type" must be one of`, "tools[0].function.parameters.properties.a.type"},
		{withTools(map[string]any{"tool_choice": "required"}), []any{user, map[string]any{"role": "tool", "content": "x"}}, "messages[1].tool_call_id is required", "messages[1].tool_call_id"},
		{nil, []any{map[string]any{"role": "assistant", "tool_calls": 5}}, "messages[0].tool_calls must be an array, got a number", "messages[0].tool_calls"},
		{nil, []any{map[string]any{"role": "user", "content": "x", "tool_calls": []any{}}}, "messages[0].tool_calls: only assistant messages make tool calls", "messages[0].tool_calls"},
		{nil, []any{map[string]any{"role": "user", "content": "x", "tool_call_id": "c"}}, "messages[0].tool_call_id: only tool messages answer a call", "messages[0].tool_call_id"},
		{nil, []any{map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"type": "function", "function": map[string]any{"name": "f"}}}}}, "messages[0].tool_calls[0].id is required", "messages[0].tool_calls[0].id"},
		{nil, []any{map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c", "function": map[string]any{"name": "f"}}}}}, "messages[0].tool_calls[0].type is required", "messages[0].tool_calls[0].type"},
		{nil, []any{map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c", "type": "function", "function": map[string]any{"name": 5}}}}}, "messages[0].tool_calls[0].function.name must be a string, got a number", "messages[0].tool_calls[0].function.name"},
		{nil, []any{map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c", "type": "function", "function": map[string]any{"name": "f", "arguments": 5}}}}}, "messages[0].tool_calls[0].function.arguments must be a string, got a number", "messages[0].tool_calls[0].function.arguments"},
		{nil, []any{map[string]any{"role": "tool", "tool_call_id": 5, "content": "x"}}, "messages[0].tool_call_id must be a string, got a number", "messages[0].tool_call_id"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i, c.want), func(t *testing.T) {
			msgs := c.msgs
			if msgs == nil {
				msgs = []any{user}
			}
			fields := map[string]any{"messages": msgs}
			for k, v := range c.opts {
				fields[k] = v
			}
			_, err := call(t, b, "chat", chatRequest(t, fields))
			var je *jsError
			require.ErrorAs(t, err, &je)
			assert.Equal(t, "invalid_argument", je.Code)
			assert.Contains(t, je.Message, c.want)
			assert.Equal(t, c.param, je.Field)
			assert.Equal(t, c.param, je.Param)
		})
	}
}

// TestChatOpenAIShapes: a chat's result carries OpenAI's choice (the
// message with its tool_calls, content null, finish_reason "tool_calls")
// and its chunks OpenAI's deltas (per call one that opens it and one with
// its arguments), which chat.completions.create wraps: the same calls as
// the result's toolCalls.
func TestChatOpenAIShapes(t *testing.T) {
	reqTools, _ := testTools()
	reqMsgs := userSays("What is the weather in Paris?")
	b := newLoadedFile(t, toolModels(t)[0].data)
	fields := map[string]any{"tools": reqTools, "tool_choice": "required"}
	var deltas []js.Value
	fn := js.FuncOf(func(_ js.Value, a []js.Value) any {
		if d := a[0].Get("deltas"); !d.IsNull() {
			for i := range d.Length() {
				deltas = append(deltas, d.Index(i))
			}
		}
		return nil
	})
	defer fn.Release()
	// Room for every call the tiny model makes: a call max_tokens cuts is
	// dropped, never shortened to fit.
	res := mustCall(t, b, "chat", sampledChat(t, reqMsgs, 1200, 1, fields), js.Undefined(), fn)
	calls := toolCalls(res.Get("toolCalls"))
	require.NotEmpty(t, calls)

	choice := res.Get("choice")
	assert.Equal(t, "tool_calls", choice.Get("finish_reason").String())
	msg := choice.Get("message")
	assert.Equal(t, "assistant", msg.Get("role").String())
	assert.True(t, msg.Get("content").IsNull(), "content null: the reply is calls only")
	assert.True(t, msg.Get("reasoning_content").IsUndefined())
	require.Equal(t, len(calls), msg.Get("tool_calls").Length())
	for i, c := range calls {
		m := msg.Get("tool_calls").Index(i)
		assert.Equal(t, c.ID, m.Get("id").String())
		assert.Equal(t, "function", m.Get("type").String())
		assert.Equal(t, c.Name, m.Get("function").Get("name").String())
		assert.Equal(t, c.Arguments, m.Get("function").Get("arguments").String())
	}

	require.Len(t, deltas, 2*len(calls), "per call, one delta that opens it and one with its arguments")
	for i, c := range calls {
		open, args := deltas[2*i].Get("tool_calls").Index(0), deltas[2*i+1].Get("tool_calls").Index(0)
		assert.Equal(t, i, open.Get("index").Int())
		assert.Equal(t, c.ID, open.Get("id").String())
		assert.Equal(t, "function", open.Get("type").String())
		assert.Equal(t, c.Name, open.Get("function").Get("name").String())
		assert.Equal(t, "", open.Get("function").Get("arguments").String())
		assert.Equal(t, i, args.Get("index").Int())
		assert.True(t, args.Get("id").IsUndefined())
		assert.Equal(t, c.Arguments, args.Get("function").Get("arguments").String())
	}
}

// TestChatForcedToolCallCut: a forced call that max_tokens cuts short
// finishes with "length" and leaves no markup: the result's content is
// empty and it has no calls, and no streamed chunk carries a piece of the
// call as content, in the generic format and in Hermes's.
func TestChatForcedToolCallCut(t *testing.T) {
	reqTools, _ := testTools()
	reqMsgs := userSays("What is the weather in Paris?")
	weather := map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}
	fields := map[string]any{"tools": reqTools, "tool_choice": weather}
	for _, file := range toolModels(t) {
		t.Run(file.name, func(t *testing.T) {
			b := newLoadedFile(t, file.data)
			for _, n := range []int{2, 6, 12} {
				res := mustCall(t, b, "chat", sampledChat(t, reqMsgs, n, 1, fields))
				require.NotEmpty(t, res.Get("text").String(), "max_tokens %d", n)
				assert.Equal(t, "length", res.Get("finishReason").String(), "max_tokens %d", n)
				assert.Equal(t, "", res.Get("content").String(), "max_tokens %d: %q", n, res.Get("text").String())
				assert.Empty(t, toolCalls(res.Get("toolCalls")), "max_tokens %d", n)

				var content strings.Builder
				var streamed []chat.ToolCall
				fn := js.FuncOf(func(_ js.Value, a []js.Value) any {
					content.WriteString(a[0].Get("content").String())
					streamed = append(streamed, toolCalls(a[0].Get("toolCalls"))...)
					return nil
				})
				sres := mustCall(t, b, "chat", sampledChat(t, reqMsgs, n, 1, fields), js.Undefined(), fn)
				fn.Release()
				assert.Equal(t, "length", sres.Get("finishReason").String(), "max_tokens %d", n)
				assert.Equal(t, "", content.String(), "max_tokens %d: nothing streamed as content", n)
				assert.Empty(t, streamed, "max_tokens %d", n)
			}
		})
	}
}
