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

// testTools are two tools, as JavaScript passes them and as chat takes them.
func testTools(t *testing.T) (js.Value, []chat.Tool) {
	t.Helper()
	// JSON.parse keeps the keys' order (a Go map would not), which the
	// prompt shows.
	params := js.Global().Get("JSON").Call("parse", weatherParams)
	jsTools := js.ValueOf([]any{
		map[string]any{"type": "function", "function": map[string]any{
			"name": "get_weather", "description": "The weather in a city", "parameters": params,
		}},
		map[string]any{"type": "function", "function": map[string]any{"name": "tell_time"}},
	})
	return jsTools, []chat.Tool{
		{Name: "get_weather", Description: "The weather in a city", Parameters: json.RawMessage(weatherParams)},
		{Name: "tell_time"},
	}
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

// TestChatToolPrompt: tools, toolChoice and the messages' tool_calls,
// tool_call_id and name give the prompt policy.NewChatPrompt gives
// natively, in the plain template's generic tool format and in Qwen3's
// Hermes one.
func TestChatToolPrompt(t *testing.T) {
	jsTools, tools := testTools(t)
	jsMsgs := js.ValueOf([]any{
		map[string]any{"role": "user", "content": "Weather in Paris?"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris","unit":"celsius"}`},
		}}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "20 degrees"},
		map[string]any{"role": "user", "content": "And the time?"},
	})
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
				res := mustCall(t, b, "chat", jsMsgs, sampled(2, 1, map[string]any{"tools": jsTools, "toolChoice": c.choice}))
				assert.Equal(t, want.Tokens, ints(res.Get("promptTokens")), "%v", c.choice)
			}
		})
	}
}

// TestChatForcedToolCall: toolChoice 'required' or a named function makes
// the reply a call whose arguments are valid for the tool's parameters, in
// the plain template's generic format and in Qwen3's Hermes one, for
// several seeds at temperature 1; streamed, the chunks' content and calls
// are the result's.
func TestChatForcedToolCall(t *testing.T) {
	jsTools, _ := testTools(t)
	jsMsgs := js.ValueOf([]any{map[string]any{"role": "user", "content": "What is the weather in Paris?"}})
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
					opts := map[string]any{"tools": jsTools, "toolChoice": c.choice, "parallelToolCalls": c.parallel}
					res := mustCall(t, b, "chat", jsMsgs, sampled(200, seed, opts))
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
					sres := mustCall(t, b, "chat", jsMsgs, sampled(200, seed, opts), fn)
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

// TestChatToolChoiceNone: with toolChoice 'none' the reply is text and
// nothing is parsed for calls; with 'auto' a reply that is not a call is
// all content, and its calls an empty list.
func TestChatToolChoiceNone(t *testing.T) {
	jsTools, _ := testTools(t)
	jsMsgs := js.ValueOf([]any{map[string]any{"role": "user", "content": "Once upon a time"}})
	b := newLoadedFile(t, toolModels(t)[0].data)
	res := mustCall(t, b, "chat", jsMsgs, sampled(40, 3, map[string]any{"tools": jsTools, "toolChoice": "none"}))
	assert.True(t, res.Get("toolCalls").IsUndefined())
	assert.NotEmpty(t, res.Get("content").String())

	auto := mustCall(t, b, "chat", jsMsgs, obj(map[string]any{"temperature": 0, "maxTokens": 40, "tools": jsTools}))
	assert.Equal(t, 0, auto.Get("toolCalls").Length())
	require.False(t, strings.HasPrefix(strings.TrimSpace(auto.Get("text").String()), "{"), "the model wrote JSON: pick another prompt")
	assert.Equal(t, auto.Get("text").String(), auto.Get("content").String())
}

// TestToolOptionErrors: bad tools, toolChoice, parallelToolCalls and tool
// messages reject at once with invalid_argument, naming the option (the
// keys inside as OpenAI spells them) and OpenAI's param.
func TestToolOptionErrors(t *testing.T) {
	b := newLoadedFile(t, toolModels(t)[0].data)
	jsTools, _ := testTools(t)
	user := map[string]any{"role": "user", "content": "Hi"}
	fn := func(f map[string]any) map[string]any { return map[string]any{"type": "function", "function": f} }
	tools := func(ts ...any) map[string]any { return map[string]any{"tools": ts} }
	withTools := func(o map[string]any) map[string]any { o["tools"] = jsTools; return o }
	cases := []struct {
		opts         map[string]any
		msgs         []any
		want         string
		field, param string
	}{
		{tools(5), nil, "tools[0] must be an object, got 5", "tools[0]", "tools[0]"},
		{map[string]any{"tools": "get_weather"}, nil, `tools must be an array, got string "get_weather"`, "tools", "tools"},
		{tools(map[string]any{"type": "retrieval"}), nil, `tools[0].type must be 'function', got string "retrieval"`, "tools[0].type", "tools[0].type"},
		{tools(map[string]any{"type": "function"}), nil, "tools[0].function is required", "tools[0].function", "tools[0].function"},
		{tools(map[string]any{"type": "function", "function": map[string]any{"name": "f"}, "x": 1}), nil, `unknown option "x" in tools[0]`, "", ""},
		{tools(fn(map[string]any{"name": ""})), nil, `tools[0].function.name must be a non-empty string, got string ""`, "tools[0].function.name", "tools[0].function.name"},
		{map[string]any{"tools": []any{}}, nil, "tools must not be empty (omit it for no tools)", "tools", "tools"},
		{tools(fn(map[string]any{"name": "get.weather"})), nil, `tools[0].function.name must be 1 to 64 letters, digits, '_' or '-', got string "get.weather"`, "tools[0].function.name", "tools[0].function.name"},
		{tools(fn(map[string]any{"name": "f"}), fn(map[string]any{"name": "f"})), nil, `tools[1].function.name "f" is the name of an earlier tool`, "tools[1].function.name", "tools[1].function.name"},
		{tools(fn(map[string]any{"name": "f", "description": 5})), nil, "tools[0].function.description must be a string, got 5", "tools[0].function.description", "tools[0].function.description"},
		{tools(fn(map[string]any{"name": "f", "parameters": []any{}})), nil, "tools[0].function.parameters must be a JSON schema object, got an array", "tools[0].function.parameters", "tools[0].function.parameters"},
		{tools(fn(map[string]any{"name": "f", "strict": 1})), nil, "tools[0].function.strict must be a boolean, got 1", "tools[0].function.strict", "tools[0].function.strict"},
		{withTools(map[string]any{"toolChoice": "always"}), nil, `toolChoice must be 'auto', 'none', 'required' or {type: 'function', function: {name}}, got string "always"`, "toolChoice", "tool_choice"},
		{map[string]any{"toolChoice": "required"}, nil, "toolChoice is only allowed when tools are given", "toolChoice", "tool_choice"},
		{map[string]any{"toolChoice": "none"}, nil, "toolChoice is only allowed when tools are given", "toolChoice", "tool_choice"},
		{map[string]any{"parallelToolCalls": false}, nil, "parallelToolCalls is only allowed when tools are given", "parallelToolCalls", "parallel_tool_calls"},
		{withTools(map[string]any{"toolChoice": map[string]any{"type": "function", "function": map[string]any{"name": "nope"}}}), nil, `toolChoice.function.name names "nope", which is not among the tools`, "toolChoice.function.name", "tool_choice.function.name"},
		{withTools(map[string]any{"toolChoice": map[string]any{"type": "tool"}}), nil, `toolChoice.type must be 'function', got string "tool"`, "toolChoice.type", "tool_choice.type"},
		{withTools(map[string]any{"toolChoice": map[string]any{"type": "function"}}), nil, "toolChoice.function is required", "toolChoice.function", "tool_choice.function"},
		{withTools(map[string]any{"parallelToolCalls": "yes"}), nil, `parallelToolCalls must be a boolean, got string "yes"`, "parallelToolCalls", "parallel_tool_calls"},
		{withTools(map[string]any{"responseFormat": map[string]any{"type": "json_object"}}), nil, `responseFormat applies with tool_choice "none" only: with tools and tool_choice "auto", the reply may be a tool call`, "responseFormat", "response_format"},
		{withTools(map[string]any{"toolChoice": "required", "grammar": `root ::= "a"`}), nil, `grammar applies with tool_choice "none" only: with tools and tool_choice "required"`, "grammar", "grammar"},
		{withTools(map[string]any{"toolChoice": map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, "responseFormat": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{}}}}), nil, `responseFormat applies with tool_choice "none" only: with tools and tool_choice function "get_weather"`, "responseFormat", "response_format"},
		{tools(fn(map[string]any{"name": "f", "parameters": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "strng"}}}})), []any{user}, "", "", ""},
		{withTools(map[string]any{"toolChoice": "required"}), []any{user, map[string]any{"role": "tool", "content": "x"}}, "messages[1].tool_call_id is required in a message of role 'tool'", "messages[1].tool_call_id", "messages[1].tool_call_id"},
		{nil, []any{map[string]any{"role": "assistant", "tool_calls": 5}}, "messages[0].tool_calls must be an array, got 5", "messages[0].tool_calls", "messages[0].tool_calls"},
		{nil, []any{map[string]any{"role": "user", "content": "x", "tool_calls": []any{}}}, "messages[0].tool_calls only assistant messages make tool calls", "messages[0].tool_calls", "messages[0].tool_calls"},
		{nil, []any{map[string]any{"role": "user", "content": "x", "tool_call_id": "c"}}, "messages[0].tool_call_id only tool messages answer a call", "messages[0].tool_call_id", "messages[0].tool_call_id"},
		{nil, []any{map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"type": "function", "function": map[string]any{"name": "f"}}}}}, "messages[0].tool_calls[0].id must be a string, got undefined", "messages[0].tool_calls[0].id", "messages[0].tool_calls[0].id"},
		{nil, []any{map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c", "function": map[string]any{"name": "f"}}}}}, "messages[0].tool_calls[0].type must be 'function', got undefined", "messages[0].tool_calls[0].type", "messages[0].tool_calls[0].type"},
		{nil, []any{map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c", "type": "function", "function": map[string]any{"name": 5}}}}}, "messages[0].tool_calls[0].function.name must be a non-empty string, got 5", "messages[0].tool_calls[0].function.name", "messages[0].tool_calls[0].function.name"},
		{nil, []any{map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c", "type": "function", "function": map[string]any{"name": "f", "arguments": 5}}}}}, "messages[0].tool_calls[0].function.arguments must be a JSON string (or an object), got 5", "messages[0].tool_calls[0].function.arguments", "messages[0].tool_calls[0].function.arguments"},
		{nil, []any{map[string]any{"role": "tool", "tool_call_id": 5, "content": "x"}}, "messages[0].tool_call_id must be a string, got 5", "messages[0].tool_call_id", "messages[0].tool_call_id"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i, c.want), func(t *testing.T) {
			msgs := c.msgs
			if msgs == nil {
				msgs = []any{user}
			}
			_, err := call(t, b, "chat", js.ValueOf(msgs), obj(c.opts))
			if c.want == "" { // a schema the converter refuses, whatever the tool choice
				const field = "tools[0].function.parameters"
				c.want, c.field, c.param = field+" cannot be used: ", field, field
			}
			var je *jsError
			require.ErrorAs(t, err, &je)
			assert.Equal(t, "invalid_argument", je.Code)
			assert.Contains(t, je.Message, c.want)
			assert.Equal(t, c.field, je.Field)
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
	jsTools, _ := testTools(t)
	jsMsgs := js.ValueOf([]any{map[string]any{"role": "user", "content": "What is the weather in Paris?"}})
	b := newLoadedFile(t, toolModels(t)[0].data)
	opts := map[string]any{"tools": jsTools, "toolChoice": "required"}
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
	res := mustCall(t, b, "chat", jsMsgs, sampled(200, 1, opts), fn)
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
