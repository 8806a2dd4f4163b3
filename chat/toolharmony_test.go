package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/grammar"
)

// TestHarmonyTypeScript: gpt-oss's prompt writes a tool whose parameters
// take every branch of its template's render_typescript_type (nested
// objects, arrays of each kind, type lists, oneOf with descriptions and
// defaults, enums, nullable, defaults) as @huggingface/jinja renders the
// template (tool_reference.json's harmony_types).
func TestHarmonyTypeScript(t *testing.T) {
	ref := readTestJSON[struct {
		HarmonyDate  string `json:"harmony_date"`
		HarmonyTypes struct {
			Tools  []openAITool `json:"tools"`
			Output string       `json:"output"`
		} `json:"harmony_types"`
	}](t, "tool_reference.json")
	tools := toolsFrom(t, ref.HarmonyTypes.Tools)
	tmpl, err := Named("gpt-oss")
	require.NoError(t, err)
	got, err := tmpl.ApplyWith([]Message{{Role: "user", Content: "What is the weather in Paris?"}}, true,
		Options{Tools: tools, Date: ref.HarmonyDate})
	require.NoError(t, err)
	assert.Equal(t, ref.HarmonyTypes.Output, got)
}

// TestHarmonyToolGrammar: the forced-call grammar takes analysis messages,
// then a commentary message to one of the tools holding arguments of its
// schema, in the form gpt-oss writes; what it accepts, read as a host reads
// a reply (SplitReasoning, then ParseToolCalls), is that call; it refuses
// another tool, arguments not of the schema, a final answer, text after
// the arguments. A named function allows that tool only.
func TestHarmonyToolGrammar(t *testing.T) {
	tools := []Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"], "additionalProperties": false}`)},
		{Name: "get_time"},
	}
	const weather = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
	const clock = "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>"
	const analysis = "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant"
	for _, tc := range []struct {
		name    string
		choice  ToolChoice
		accepts []string
		refuses []string
	}{
		{"required", ToolChoice{Mode: ToolRequired},
			[]string{weather + `{"location": "Paris"}`, analysis + clock + "{}", analysis + analysis + weather + `{"location":"Zürich"}`},
			[]string{weather + `{}`, weather + `{"location": "Paris"} more`, "<|channel|>final<|message|>Hi", "<|channel|>commentary to=functions.other <|constrain|>json<|message|>{}"}},
		{"a function", ToolChoice{Mode: ToolFunction, Function: "get_time"},
			[]string{clock + "{}", analysis + clock + "{}"}, []string{weather + `{"location": "Paris"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := ToolCallGrammar(ToolFormatHarmony, tools, tc.choice, true)
			require.NoError(t, err)
			g, err := grammar.Parse(src)
			require.NoError(t, err, src)
			for _, reply := range tc.accepts {
				require.True(t, g.Accepts(reply), "%q\n%s", reply, src)
				_, content := SplitReasoning(reply)
				rest, calls, err := ParseToolCalls(ToolFormatHarmony, content, 0)
				require.NoError(t, err)
				assert.Empty(t, rest, reply)
				require.Len(t, calls, 1, reply)
			}
			for _, reply := range tc.refuses {
				assert.False(t, g.Accepts(reply), reply)
			}
		})
	}
}

// TestHarmonyToolRoundTrip: a call the gpt-oss format writes into the
// history, after the generation prompt's "<|start|>assistant", parses back
// into the same call; so do its tool results' caller.
func TestHarmonyToolRoundTrip(t *testing.T) {
	tmpl, err := Named("gpt-oss")
	require.NoError(t, err)
	require.Equal(t, ToolFormatHarmony, tmpl.ToolFormat())
	calls := []ToolCall{{Name: "get_weather", Arguments: `{"location":"Zürich \"☃\"\n","n":[1,2.5]}`}}
	msgs := []Message{{Role: "user", Content: "q"}, {Role: "assistant", ToolCalls: calls}}
	opts := Options{Date: "2026-01-02"}
	prompt, err := tmpl.ApplyWith(msgs, false, opts)
	require.NoError(t, err)
	user, err := tmpl.ApplyWith(msgs[:1], true, opts)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(prompt, user), "%q", prompt)
	reply := strings.TrimPrefix(prompt, user)
	content, got, err := ParseToolCalls(ToolFormatHarmony, reply, 1)
	require.NoError(t, err)
	assert.Empty(t, content, reply)
	assert.Equal(t, expectedCalls(ToolFormatHarmony, calls, 1), got)
}
