package chat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseCase is one reply and what ParseToolCalls makes of it; a call's
// empty ID means "the generated one" (ToolCallID with the case's index).
type parseCase struct {
	name    string
	text    string
	content string
	calls   []ToolCall
}

// parseCases are the replies of every format that the parse and stream
// tests share. The ones marked llama.cpp are the model outputs and the
// expected messages of llama.cpp's tests/test-chat.cpp (special_function,
// {"arg1": 1}); the others pin down this package's rules (whitespace next
// to a call, text that is no call kept as it is, parallel calls).
var parseCases = map[ToolFormat][]parseCase{
	ToolFormatHermes: {
		{name: "llama.cpp: one call", text: "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>",
			calls: []ToolCall{{Name: "special_function", Arguments: `{"arg1":1}`}}},
		{name: "llama.cpp: content then a call", text: "Hello, world!\nWhat's up?<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}</tool_call>",
			content: "Hello, world!\nWhat's up?", calls: []ToolCall{{Name: "special_function", Arguments: `{"arg1":1}`}}},
		{name: "llama.cpp: content, newline, a call", text: "Hello, world!\nWhat's up?\n<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>",
			content: "Hello, world!\nWhat's up?", calls: []ToolCall{{Name: "special_function", Arguments: `{"arg1":1}`}}},
		{name: "llama.cpp: parallel", text: "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"special_function_with_opt\", \"arguments\": {\"arg1\": 1, \"arg2\": 2}}\n</tool_call>",
			calls: []ToolCall{{Name: "special_function", Arguments: `{"arg1":1}`}, {Name: "special_function_with_opt", Arguments: `{"arg1":1,"arg2":2}`}}},
		{name: "no call", text: "  Just text, <tool  call> not a tag.\n", content: "  Just text, <tool  call> not a tag.\n"},
		{name: "closing tag missing at the end", text: "<tool_call>{\"name\":\"f\",\"arguments\":{}}\n",
			calls: []ToolCall{{Name: "f", Arguments: `{}`}}},
		{name: "cut off in the JSON", text: "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a", content: "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a"},
		{name: "no name", text: "<tool_call>{\"arguments\": {}}</tool_call>", content: "<tool_call>{\"arguments\": {}}</tool_call>"},
		{name: "arguments not an object", text: "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>", content: "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>"},
		{name: "arguments as a JSON string", text: "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>",
			calls: []ToolCall{{Name: "f", Arguments: `{"a":1}`}}},
		{name: "a bad block, then a good one, then text", text: "<tool_call>oops</tool_call> and <tool_call> {\"name\": \"f\", \"arguments\": {\"b\": [true, null, 2.50, \"x\"]}} </tool_call>\n\nDone.",
			content: "<tool_call>oops</tool_call> andDone.", calls: []ToolCall{{Name: "f", Arguments: `{"b":[true,null,2.50,"x"]}`}}},
		{name: "unicode", text: "Wetter? ☃ <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Z\\u00fcrich \\\"☃\\\"\"}}</tool_call>",
			content: "Wetter? ☃", calls: []ToolCall{{Name: "get_weather", Arguments: `{"location":"Zürich \"☃\""}`}}},
	},
	ToolFormatQwenXML: {
		{name: "a call as Qwen3.5 writes it", text: "<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>",
			calls: []ToolCall{{Name: "special_function", Arguments: `{"arg1":1}`}}},
		{name: "content, then parallel calls", text: "Let me check both.\n\n<tool_call>\n<function=get_weather>\n<parameter=location>\nParis\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
			content: "Let me check both.", calls: []ToolCall{{Name: "get_weather", Arguments: `{"location":"Paris","unit":"celsius"}`}, {Name: "get_time", Arguments: `{}`}}},
		{name: "values: JSON when they parse, else text; lines kept", text: "<tool_call><function=f><parameter=a>[1, 2.50]</parameter><parameter=b>\ntwo\nlines <b>\n\n</parameter><parameter=c>\n{\"k\": null}\n</parameter><parameter=d>\ntrue\n</parameter></function>",
			calls: []ToolCall{{Name: "f", Arguments: `{"a":[1,2.50],"b":"two\nlines <b>\n","c":{"k":null},"d":true}`}}},
		{name: "no call", text: "Use <function=x> in code.", content: "Use <function=x> in code."},
		{name: "cut off in a parameter", text: "Sure.\n<tool_call>\n<function=f>\n<parameter=a>\nPar", content: "Sure.\n<tool_call>\n<function=f>\n<parameter=a>\nPar"},
		{name: "a bad block, then a good one, then text", text: "<tool_call>\n{\"name\": \"f\"}\n</tool_call> and <tool_call>\n<function=g>\n</function>\n</tool_call>\n\nDone.",
			content: "<tool_call>\n{\"name\": \"f\"}\n</tool_call> andDone.", calls: []ToolCall{{Name: "g", Arguments: `{}`}}},
		{name: "a bad function name", text: "<tool_call><function=a b></function></tool_call>", content: "<tool_call><function=a b></function></tool_call>"},
	},
	ToolFormatHarmony: {
		{name: "the channel's header names the recipient", text: "<|channel|>commentary to=functions.special_function <|constrain|>json<|message|>{\"arg1\": 1}",
			calls: []ToolCall{{Name: "special_function", Arguments: `{"arg1":1}`}}},
		{name: "the role's header names it, as the template writes a call", text: " to=functions.get_weather<|channel|>commentary json<|message|>{\"location\": \"Paris\"}<|call|>",
			calls: []ToolCall{{Name: "get_weather", Arguments: `{"location":"Paris"}`}}},
		{name: "after an analysis message, the next message's opening", text: "<|start|>assistant<|channel|>commentary to=functions.f<|message|>{}",
			calls: []ToolCall{{Name: "f", Arguments: `{}`}}},
		{name: "a preamble stays content", text: "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": [1, \"☃\"]}",
			content: "<|channel|>commentary<|message|>Checking.<|end|>", calls: []ToolCall{{Name: "f", Arguments: `{"a":[1,"☃"]}`}}},
		{name: "no call", text: "Send it to=functions please.", content: "Send it to=functions please."},
		{name: "arguments not an object", text: "<|channel|>commentary to=functions.f <|constrain|>json<|message|>[1]", content: "<|channel|>commentary to=functions.f <|constrain|>json<|message|>[1]"},
		{name: "cut off in the JSON", text: "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a", content: "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a"},
		{name: "no channel", text: " to=functions.f<|message|>{}", content: " to=functions.f<|message|>{}"},
	},
	ToolFormatLFM2: {
		{name: "a call as LFM2 writes it", text: "<|tool_call_start|>[special_function(arg1=1)]<|tool_call_end|>",
			calls: []ToolCall{{Name: "special_function", Arguments: `{"arg1":1}`}}},
		{name: "content, then parallel calls of every literal", text: "Checking.<|tool_call_start|>[get_weather(location=\"Paris\", unit='celsius'), f(a=True, b=None, c=false, d=[1, 2.5, 'x'], e={'k': null, \"z\": -3e2}, s='it\\'s \\u00e9\\n')]<|tool_call_end|> Done.",
			content: "Checking.Done.", calls: []ToolCall{{Name: "get_weather", Arguments: `{"location":"Paris","unit":"celsius"}`},
				{Name: "f", Arguments: `{"a":true,"b":null,"c":false,"d":[1,2.5,"x"],"e":{"k":null,"z":-3e2},"s":"it's é\n"}`}}},
		{name: "no arguments, closing marker missing at the end", text: "<|tool_call_start|>[get_time()]", calls: []ToolCall{{Name: "get_time", Arguments: `{}`}}},
		{name: "no call", text: "Call get_time() now.", content: "Call get_time() now."},
		{name: "a positional argument", text: "<|tool_call_start|>[f(1)]<|tool_call_end|>", content: "<|tool_call_start|>[f(1)]<|tool_call_end|>"},
		{name: "cut off", text: "<|tool_call_start|>[f(a='x", content: "<|tool_call_start|>[f(a='x"},
	},
	// Gemma 4: llama.cpp's own cases (tests/test-chat.cpp), arguments as
	// its gemma4_to_json writes them.
	ToolFormatGemma4: {
		{name: "llama.cpp: a string argument", text: `<|tool_call>call:get_time{city:<|"|>London<|"|>}<tool_call|>`,
			calls: []ToolCall{{Name: "get_time", Arguments: `{"city":"London"}`}}},
		{name: "llama.cpp: empty arguments", text: `<|tool_call>call:empty_args{}<tool_call|>`,
			calls: []ToolCall{{Name: "empty_args", Arguments: `{}`}}},
		{name: "llama.cpp: content, then a call", text: "Hello, world!\nWhat's up?<|tool_call>call:get_time{city:<|\"|>Paris<|\"|>}<tool_call|>",
			content: "Hello, world!\nWhat's up?", calls: []ToolCall{{Name: "get_time", Arguments: `{"city":"Paris"}`}}},
		{name: "llama.cpp: parallel calls", text: `<|tool_call>call:get_time{city:<|"|>London<|"|>}<tool_call|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>`,
			calls: []ToolCall{{Name: "get_time", Arguments: `{"city":"London"}`}, {Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		{name: "llama.cpp: numbers", text: `<|tool_call>call:f{a:42,b:-7,c:3.14,d:1.5e10}<tool_call|>`,
			calls: []ToolCall{{Name: "f", Arguments: `{"a":42,"b":-7,"c":3.14,"d":1.5e10}`}}},
		{name: "llama.cpp: booleans and null", text: `<|tool_call>call:toggle{enabled:true,off:false,value:null}<tool_call|>`,
			calls: []ToolCall{{Name: "toggle", Arguments: `{"enabled":true,"off":false,"value":null}`}}},
		{name: "llama.cpp: a list, a dict, empty ones", text: `<|tool_call>call:todo{todos:[<|"|>buy milk<|"|>,<|"|>walk dog<|"|>],config:{theme:<|"|>dark<|"|>,count:3},e:[],d:{}}<tool_call|>`,
			calls: []ToolCall{{Name: "todo", Arguments: `{"todos":["buy milk","walk dog"],"config":{"theme":"dark","count":3},"e":[],"d":{}}`}}},
		{name: "white space where llama.cpp allows it, keys as written", text: "<|tool_call>call:f{ a: [ 1, <|\"|>x\"y\n<|\"|> ] ,<|\"|>k<|\"|>:{ }}<tool_call|>",
			content: "<|tool_call>call:f{ a: [ 1, <|\"|>x\"y\n<|\"|> ] ,<|\"|>k<|\"|>:{ }}<tool_call|>"},
		{name: "quoted keys and spaces", text: "<|tool_call>call:f{ a: [ 1, <|\"|>x\"y\n<|\"|> ],<|\"|>k<|\"|>:{ } }<tool_call|>",
			calls: []ToolCall{{Name: "f", Arguments: `{"a":[1,"x\"y\n"],"<|\"|>k<|\"|>":{}}`}}},
		{name: "closing marker missing at the end", text: `<|tool_call>call:get_time{}`, calls: []ToolCall{{Name: "get_time", Arguments: `{}`}}},
		{name: "no call", text: "Call get_time{} now.", content: "Call get_time{} now."},
		{name: "cut off in a string", text: `<|tool_call>call:f{a:<|"|>x`, content: `<|tool_call>call:f{a:<|"|>x`},
		{name: "a Python literal", text: `<|tool_call>call:f{a:True}<tool_call|>`, content: `<|tool_call>call:f{a:True}<tool_call|>`},
	},
	ToolFormatMistral: {
		{name: "llama.cpp: Nemo's call", text: `[TOOL_CALLS][{"name": "special_function", "arguments": {"arg1": 1}, "id": "123456789"}]`,
			calls: []ToolCall{{ID: "123456789", Name: "special_function", Arguments: `{"arg1":1}`}}},
		{name: "parallel, one without id", text: "Checking.[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {}, \"id\": \"abcdefghi\"},\n {\"name\": \"b\", \"arguments\": {\"x\": \"y\"}}]",
			content: "Checking.", calls: []ToolCall{{ID: "abcdefghi", Name: "a", Arguments: `{}`}, {Name: "b", Arguments: `{"x":"y"}`}}},
		{name: "one object", text: `[TOOL_CALLS]{"name": "a", "arguments": {}}`, calls: []ToolCall{{Name: "a", Arguments: `{}`}}},
		{name: "not a list of calls", text: `[TOOL_CALLS][{"name": "a"}, 3]`, content: `[TOOL_CALLS][{"name": "a"}, 3]`},
		{name: "empty list", text: `[TOOL_CALLS][]`, content: `[TOOL_CALLS][]`},
		{name: "cut off", text: `[TOOL_CALLS][{"name": "a", "argu`, content: `[TOOL_CALLS][{"name": "a", "argu`},
		{name: "no call", text: "It is sunny. [TOOL_CALL", content: "It is sunny. [TOOL_CALL"},
	},
	ToolFormatLlama3: {
		{name: "a call", text: `{"name": "special_function", "parameters": {"arg1": 1}}`,
			calls: []ToolCall{{Name: "special_function", Arguments: `{"arg1":1}`}}},
		{name: "type function, python tag, spaces", text: " \n<|python_tag|>{ \"type\": \"function\", \"name\": \"f\", \"parameters\": {} }\n",
			calls: []ToolCall{{Name: "f", Arguments: `{}`}}},
		{name: "parallel with ; then text", text: `{"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {}} Then text.`,
			content: "Then text.", calls: []ToolCall{{Name: "a", Arguments: `{"x":1}`}, {Name: "b", Arguments: `{}`}}},
		{name: "text first: no call", text: `Here: {"name": "a", "parameters": {}}`, content: `Here: {"name": "a", "parameters": {}}`},
		{name: "JSON that is no call", text: `{"answer": 42}`, content: `{"answer": 42}`},
		{name: "type other than function", text: `{"type": "x", "name": "a", "parameters": {}}`, content: `{"type": "x", "name": "a", "parameters": {}}`},
		{name: "cut off", text: `{"name": "a", "parameters": {"x":`, content: `{"name": "a", "parameters": {"x":`},
		{name: "the python tag alone", text: "<|python_tag|>print(1)", content: "<|python_tag|>print(1)"},
	},
	ToolFormatGeneric: {
		{name: "one call", text: "{\n  \"tool_call\": {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n}",
			calls: []ToolCall{{Name: "special_function", Arguments: `{"arg1":1}`}}},
		{name: "calls with ids and content", text: `{"tool_calls": [{"name": "a", "arguments": {}, "id": "call_1___"}, {"name": "b", "arguments": {"k": "v"}}], "content": "Both."}`,
			content: "Both.", calls: []ToolCall{{ID: "call_1___", Name: "a", Arguments: `{}`}, {Name: "b", Arguments: `{"k":"v"}`}}},
		{name: "a response", text: ` {"response": "Hello, world!\nWhat's up?"} `, content: "Hello, world!\nWhat's up?"},
		{name: "a response that is JSON", text: `{"response": {"a": [1]}}`, content: "{\n  \"a\": [\n    1\n  ]\n}"},
		{name: "plain text", text: "Hello ☃", content: "Hello ☃"},
		{name: "another object", text: `{"answer": 42}`, content: `{"answer": 42}`},
		{name: "text after the object", text: `{"response": "a"} and more`, content: `{"response": "a"} and more`},
		{name: "cut off", text: `{"tool_call": {"name": "a", "arguments": {`, content: `{"tool_call": {"name": "a", "arguments": {`},
	},
}

func TestParseToolCalls(t *testing.T) {
	const seed = 42
	for format, cases := range parseCases {
		for _, c := range cases {
			t.Run(format.String()+"/"+c.name, func(t *testing.T) {
				content, calls, err := ParseToolCalls(format, c.text, seed)
				require.NoError(t, err)
				assert.Equal(t, c.content, content)
				assert.Equal(t, expectedCalls(format, c.calls, seed), calls)
			})
		}
	}
	_, _, err := ParseToolCalls(0, "x", 0)
	require.ErrorIs(t, err, ErrUnknownToolFormat)
}

// expectedCalls fills in the ids ParseToolCalls generates.
func expectedCalls(format ToolFormat, calls []ToolCall, seed uint64) []ToolCall {
	if calls == nil {
		return nil
	}
	out := append([]ToolCall(nil), calls...)
	for i := range out {
		if out[i].ID == "" {
			out[i].ID = ToolCallID(format, seed, i)
		}
	}
	return out
}

func TestToolCallID(t *testing.T) {
	id := ToolCallID(ToolFormatHermes, 7, 0)
	assert.Len(t, id, len("call_")+24)
	assert.True(t, strings.HasPrefix(id, "call_") && isAlnum(id[5:]), id)
	assert.Equal(t, id, ToolCallID(ToolFormatHermes, 7, 0), "deterministic")
	assert.NotEqual(t, id, ToolCallID(ToolFormatHermes, 7, 1))
	assert.NotEqual(t, id, ToolCallID(ToolFormatHermes, 8, 0))
	m := ToolCallID(ToolFormatMistral, 7, 0)
	assert.Len(t, m, 9)
	assert.True(t, isAlnum(m))
	assert.Equal(t, m, mistralID(m), "a Mistral id is written as it is")
	assert.Len(t, mistralID("call_abc"), 9)
	assert.Equal(t, mistralID("call_abc"), mistralID("call_abc"))
}

// TestToolCallRoundTrip: calls written into an assistant message by a
// format are parsed back, by that format, into the same calls (ids kept
// where the format writes them).
func TestToolCallRoundTrip(t *testing.T) {
	calls := []ToolCall{
		{ID: "abcdefghi", Name: "get_weather", Arguments: `{"location":"Zürich \"☃\"\n","unit":null,"n":[1,2.5,-3e2]}`},
		{ID: "bcdefghij", Name: "get_time", Arguments: `{}`},
	}
	templates := map[string]Template{
		"chatml":            {f: families["chatml"]},
		"qwen3":             {f: families["qwen3"]},
		"llama3":            {f: families["llama3"]},
		"mistral-v3-tekken": {f: families["mistral-v3-tekken"]},
		"mistral-v3":        {f: families["mistral-v3"]},
		"generic gemma":     {f: families["gemma"]},
		"generic chatml":    {f: families["chatml"], tools: ToolFormatGeneric},
	}
	for name, tmpl := range templates {
		t.Run(name, func(t *testing.T) {
			msgs := []Message{{Role: "user", Content: "q"}, {Role: "assistant", ToolCalls: calls}}
			prompt, err := tmpl.ApplyWith(msgs, false, Options{})
			require.NoError(t, err)
			user, err := tmpl.ApplyWith(msgs[:1], true, Options{})
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(prompt, user), "%q", prompt)
			reply := strings.TrimPrefix(prompt, user)
			if tmpl.f.name == "gemma" {
				reply = strings.TrimPrefix(prompt, strings.TrimSuffix(user, "<start_of_turn>model\n")+"<start_of_turn>model\n")
			}
			reply, _, _ = strings.Cut(reply, tmpl.Stop()[0])
			_, reply = SplitReasoning(reply) // qwen3's empty think block, as a host would
			format := tmpl.ToolFormat()
			content, got, err := ParseToolCalls(format, reply, 1)
			require.NoError(t, err)
			assert.Empty(t, content)
			want := calls
			if format == ToolFormatHermes || format == ToolFormatLlama3 {
				want = expectedCalls(format, []ToolCall{{Name: calls[0].Name, Arguments: calls[0].Arguments}, {Name: calls[1].Name, Arguments: calls[1].Arguments}}, 1)
			}
			if format == ToolFormatLlama3 {
				want = want[:1] // one call a turn: the second is the next turn
			}
			assert.Equal(t, want, got, "%q", reply)
		})
	}
}
