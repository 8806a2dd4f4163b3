package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/grammar"
)

// xmlTools are the tools of the XML format's tests: a string parameter
// (by type, by enum), an integer, a boolean, an array and an object.
var xmlTools = []Tool{
	{Name: "set_alarm", Parameters: json.RawMessage(`{"type": "object", "properties": {
		"label": {"type": "string"}, "code": {"type": "string"}, "day": {"enum": ["mon", "tue"]},
		"hour": {"type": "integer"}, "loud": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
		"extra": {"type": "object", "properties": {"snooze": {"type": "integer"}}}},
		"required": ["hour", "label"]}`)},
	{Name: "get_time"},
}

// TestQwenXMLTypedValues: given the tools, a parameter whose schema is a
// string's keeps its text even when it reads as JSON (llama.cpp's
// resolves_to_string); other parameters, and any parameter of a call to
// an unknown tool, are JSON when they parse as JSON.
func TestQwenXMLTypedValues(t *testing.T) {
	call := func(name, params string) string {
		return "<tool_call>\n<function=" + name + ">\n" + params + "</function>\n</tool_call>"
	}
	param := func(key, value string) string { return "<parameter=" + key + ">\n" + value + "\n</parameter>\n" }
	for _, tc := range []struct {
		name, text, args string
	}{
		{"strings stay strings", call("set_alarm", param("label", "42")+param("code", "true")+param("day", "mon")),
			`{"label":"42","code":"true","day":"mon"}`},
		{"typed values are JSON", call("set_alarm", param("hour", "7")+param("loud", "false")+param("tags", `["a", "b"]`)+param("extra", `{"snooze": 5}`)),
			`{"hour":7,"loud":false,"tags":["a","b"],"extra":{"snooze":5}}`},
		{"a typed value that is no JSON is text", call("set_alarm", param("hour", "seven")), `{"hour":"seven"}`},
		{"an unknown parameter is JSON if it can be", call("set_alarm", param("other", "1.5")), `{"other":1.5}`},
		{"an unknown tool's values are JSON if they can be", call("nope", param("label", "42")), `{"label":42}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content, calls, err := ParseToolCallsFor(ToolFormatQwenXML, tc.text, 3, xmlTools)
			require.NoError(t, err)
			assert.Empty(t, content)
			require.Len(t, calls, 1)
			assert.Equal(t, tc.args, calls[0].Arguments)
			assert.Equal(t, ToolCallID(ToolFormatQwenXML, 3, 0), calls[0].ID)

			s := NewToolCallStreamFor(ToolFormatQwenXML, 3, xmlTools)
			var streamed strings.Builder
			for _, piece := range strings.SplitAfter(tc.text, ">") {
				streamed.WriteString(s.Write(piece))
			}
			rest, got := s.Finish()
			streamed.WriteString(rest)
			assert.Empty(t, streamed.String())
			assert.Equal(t, calls, got)
		})
	}
}

// TestQwenXMLValuesRendered: a call's arguments are written as Qwen3.5's
// template prints them through llama.cpp's Jinja (common/jinja/value.cpp)
// and Python's: strings as they are, objects and arrays as tojson,
// booleans and null through the string filter (True, False, None).
// @huggingface/jinja prints true and refuses null, so the Jinja reference
// (tool_reference.json) leaves these out.
func TestQwenXMLValuesRendered(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{`{"a": true, "b": false, "c": null}`, "<parameter=a>\nTrue\n</parameter>\n<parameter=b>\nFalse\n</parameter>\n<parameter=c>\nNone\n</parameter>\n"},
		{`{"n": -2.50e1, "s": "x\ny"}`, "<parameter=n>\n-2.50e1\n</parameter>\n<parameter=s>\nx\ny\n</parameter>\n"},
		{`{"o": {"k":[1,{"z":"☃"}]}}`, "<parameter=o>\n{\"k\": [1, {\"z\": \"☃\"}]}\n</parameter>\n"},
		{`not JSON`, ""},
	} {
		var b strings.Builder
		writeQwenXMLCalls(&b, "", []ToolCall{{Name: "f", Arguments: tc.args}})
		assert.Equal(t, "<tool_call>\n<function=f>\n"+tc.want+"</function>\n</tool_call>", b.String(), tc.args)
	}
}

// TestQwenXMLRoundTrip: calls written by the qwen35 format into an
// assistant turn parse back, given the tools, into the same calls.
func TestQwenXMLRoundTrip(t *testing.T) {
	tmpl, err := Named("qwen35")
	require.NoError(t, err)
	require.Equal(t, ToolFormatQwenXML, tmpl.ToolFormat())
	calls := []ToolCall{
		{Name: "set_alarm", Arguments: `{"label":"42 \"quoted\"\n<b>","hour":7,"tags":["a"],"extra":{"snooze":5}}`},
		{Name: "get_time", Arguments: `{}`},
	}
	msgs := []Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "Sure.", ToolCalls: calls}}
	opts := Options{Tools: xmlTools, DisableThinking: true}
	prompt, err := tmpl.ApplyWith(msgs, false, opts)
	require.NoError(t, err)
	user, err := tmpl.ApplyWith(msgs[:1], true, opts)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(prompt, user), "%q", prompt)
	reply, _, _ := strings.Cut(strings.TrimPrefix(prompt, user), tmpl.Stop()[0])
	content, got, err := ParseToolCallsFor(ToolFormatQwenXML, reply, 1, xmlTools)
	require.NoError(t, err)
	assert.Equal(t, "Sure.", content)
	assert.Equal(t, expectedCalls(ToolFormatQwenXML, calls, 1), got)
}

// TestQwenXMLGrammar: the forced-call grammar (grammar/jsonschema's
// converter, parsed by package grammar) accepts a call as the template
// writes it, with the required parameters, in the schema's order, then
// optional ones, each value of its schema's type; it refuses a missing
// required parameter, a value of the wrong type, another tool, a second
// call unless parallel; and what it accepts parses back.
func TestQwenXMLGrammar(t *testing.T) {
	reply := func(calls ...ToolCall) string {
		var b strings.Builder
		writeQwenXMLCalls(&b, "", calls)
		return b.String()
	}
	alarm := ToolCall{Name: "set_alarm", Arguments: `{"label":"wake\nup","hour":7,"loud":true,"tags":["a"],"extra":{"snooze":5}}`}
	// The grammar takes JSON's true: the reply is read as JSON, not printed
	// through Jinja.
	alarmText := strings.Replace(reply(alarm), "True", "true", 1)
	minimal := reply(ToolCall{Name: "set_alarm", Arguments: `{"label":"x","hour":0}`})
	timeCall := reply(ToolCall{Name: "get_time", Arguments: `{}`})
	for _, tc := range []struct {
		name     string
		choice   ToolChoice
		parallel bool
		accepts  []string
		refuses  []string
	}{
		{"required", ToolChoice{Mode: ToolRequired}, false,
			[]string{alarmText, minimal, timeCall},
			[]string{
				reply(ToolCall{Name: "set_alarm", Arguments: `{"label":"x"}`}),                // hour is required
				reply(ToolCall{Name: "set_alarm", Arguments: `{"hour":0,"label":"x"}`}),       // required ones in the schema's order
				reply(ToolCall{Name: "set_alarm", Arguments: `{"label":"x","hour":"seven"}`}), // hour is an integer
				reply(ToolCall{Name: "set_alarm", Arguments: `{"label":"x\n<b>","hour":1}`}),  // a string line may not start with "<"
				reply(ToolCall{Name: "other", Arguments: `{}`}),                               // not a tool
				minimal + "\n" + timeCall, // one call only
				"Sure. " + timeCall,       // no content before
			}},
		{"a function", ToolChoice{Mode: ToolFunction, Function: "get_time"}, false,
			[]string{timeCall}, []string{minimal, reply(ToolCall{Name: "get_time", Arguments: `{"a":1}`})}},
		{"parallel", ToolChoice{Mode: ToolRequired}, true,
			[]string{minimal, minimal + "\n" + timeCall + "\n" + alarmText}, []string{minimal + timeCall}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := ToolCallGrammar(ToolFormatQwenXML, xmlTools, tc.choice, tc.parallel)
			require.NoError(t, err)
			g, err := grammar.Parse(src)
			require.NoError(t, err, src)
			for _, text := range tc.accepts {
				require.True(t, g.Accepts(text), "%q\n%s", text, src)
				_, calls, err := ParseToolCallsFor(ToolFormatQwenXML, text, 0, xmlTools)
				require.NoError(t, err)
				require.NotEmpty(t, calls, text)
			}
			for _, text := range tc.refuses {
				assert.False(t, g.Accepts(text), "%q", text)
			}
		})
	}
	_, calls, err := ParseToolCallsFor(ToolFormatQwenXML, alarmText, 0, xmlTools)
	require.NoError(t, err)
	assert.Equal(t, alarm.Arguments, calls[0].Arguments)
}

// TestQwenXMLDetected: Qwen3.5's template gets the XML format; a template
// of the family without <parameter= gets the generic one.
func TestQwenXMLDetected(t *testing.T) {
	assert.Equal(t, "qwen-xml", ToolFormatQwenXML.String())
	assert.Equal(t, ToolFormatQwenXML, detectToolFormat("qwen35", "... <function=x> <parameter=y> ..."))
	assert.Equal(t, ToolFormatGeneric, detectToolFormat("qwen35", "no tool syntax"))
}
