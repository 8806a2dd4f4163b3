package chat

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGemma4Declarations: Gemma 4's prompt declares tools whose
// parameters take every branch of its template's format_parameters
// (descriptions, string enums, arrays of strings, of objects and of
// anything, nullable, nested and bare objects, keys sorted
// case-insensitively), a tool without parameters and one with no
// properties, as @huggingface/jinja renders the template
// (tool_reference.json's gemma4_types).
func TestGemma4Declarations(t *testing.T) {
	ref := readTestJSON[struct {
		Gemma4Types struct {
			Tools  []openAITool `json:"tools"`
			Output string       `json:"output"`
		} `json:"gemma4_types"`
	}](t, "tool_reference.json")
	tools := toolsFrom(t, ref.Gemma4Types.Tools)
	tmpl, err := Named("gemma4")
	require.NoError(t, err)
	got, err := tmpl.ApplyWith([]Message{{Role: "user", Content: "What is the weather in Paris?"}}, true, Options{Tools: tools})
	require.NoError(t, err)
	assert.Equal(t, ref.Gemma4Types.Output[len("<bos>"):], got)
}

// TestGemma4CallsRoundTrip: a call written into the history as the
// template writes it reads back as the same arguments (keys sorted, as the
// template writes them; null is written as nothing, so it is left out).
func TestGemma4CallsRoundTrip(t *testing.T) {
	for _, args := range []string{
		`{}`,
		`{"a":1,"B":-2.5e3,"c":"x \"y\" \\ <b> ☃\n","d":[true,false,[],{}],"e":{"k":[1,{"z":"w"}]}}`,
	} {
		var b strings.Builder
		writeGemma4Call(&b, ToolCall{Name: "f.g-h_1", Arguments: args})
		content, calls, err := ParseToolCalls(ToolFormatGemma4, b.String(), 0)
		require.NoError(t, err)
		assert.Empty(t, content)
		require.Len(t, calls, 1, b.String())
		assert.Equal(t, "f.g-h_1", calls[0].Name)
		assert.JSONEq(t, args, calls[0].Arguments)
	}
}

// TestGemma4ToolGrammar: the forced-call grammar takes Gemma 4 calls with
// the required parameters in the schema's order and any optional ones
// after, in order, each value of its schema in Gemma 4's syntax; what it
// accepts parses back into those calls; it refuses a missing required
// parameter, a value of the wrong type, a JSON string, another tool, two
// calls unless parallel.
func TestGemma4ToolGrammar(t *testing.T) {
	tools := []Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type": "object", "properties": {"unit": {"enum": ["c", "f"]}, "location": {"type": "string", "minLength": 1}, "days": {"type": "integer", "minimum": 1, "maximum": 14}}, "required": ["location"]}`)},
		{Name: "search", Parameters: json.RawMessage(`{"type": "object", "properties": {"filters": {"type": "object", "properties": {"langs": {"type": "array", "items": {"type": "string", "enum": ["go", "rust"]}, "maxItems": 2}, "after": {"type": "string", "format": "date"}, "ok": {"type": "boolean"}}, "additionalProperties": false}, "any": {}}}`)},
		{Name: "get_time"},
	}
	const open, end = "<|tool_call>call:", "<tool_call|>"
	checkToolGrammar(t, ToolFormatGemma4, tools, []toolGrammarCase{
		{"required", ToolChoice{Mode: ToolRequired}, false,
			[]string{
				open + `get_weather{location:<|"|>Paris <b><|"|>}` + end,
				open + `get_weather{location:<|"|>Paris<|"|>,unit:<|"|>c<|"|>,days:14}` + end,
				open + `search{}` + end,
				open + `search{filters:{langs:[<|"|>go<|"|>,<|"|>rust<|"|>],after:<|"|>2026-01-31<|"|>,ok:true}}` + end,
				open + `search{filters:{ok:false},any:[1,{k:<|"|>v<|"|>}]}` + end,
				open + `get_time{}` + end,
			},
			[]string{
				open + `get_weather{unit:<|"|>c<|"|>}` + end,
				open + `get_weather{location:<|"|><|"|>}` + end,
				open + `get_weather{location:1}` + end,
				open + `get_weather{location:"Paris"}` + end,
				open + `get_weather{location:<|"|>Paris<|"|>,days:15}` + end,
				open + `search{filters:{langs:[<|"|>go<|"|>,<|"|>go<|"|>,<|"|>go<|"|>]}}` + end,
				open + `search{filters:{after:<|"|>tomorrow<|"|>}}` + end,
				open + `get_time{a:1}` + end,
				open + `other{}` + end,
				open + `get_time{}` + end + open + `get_time{}` + end,
			}},
		{"parallel", ToolChoice{Mode: ToolRequired}, true,
			[]string{open + `get_time{}` + end + open + `get_weather{location:<|"|>x<|"|>}` + end}, []string{""}},
		{"a function", ToolChoice{Mode: ToolFunction, Function: "get_time"}, false,
			[]string{open + `get_time{}` + end}, []string{open + `search{}` + end}},
	})
}
