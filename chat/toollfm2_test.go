package chat

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/grammar"
)

// TestLFM2ToolGrammar: the forced-call grammar takes Python calls with the
// required parameters in the schema's order and any optional ones after,
// in order, each value JSON of its schema; what it accepts parses back
// into those calls; it refuses a missing required parameter, a value of
// the wrong type, another tool, two calls unless parallel.
func TestLFM2ToolGrammar(t *testing.T) {
	tools := []Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type": "object", "properties": {"unit": {"enum": ["c", "f"]}, "location": {"type": "string"}, "days": {"type": "integer"}}, "required": ["location"]}`)},
		{Name: "opts", Parameters: json.RawMessage(`{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}}}`)},
		{Name: "get_time"},
	}
	const start, end = "<|tool_call_start|>[", "]<|tool_call_end|>"
	checkToolGrammar(t, ToolFormatLFM2, tools, []toolGrammarCase{
		{"required", ToolChoice{Mode: ToolRequired}, false,
			[]string{
				start + `get_weather(location="Paris")` + end,
				start + `get_weather(location="Paris", unit="c", days=3)` + end,
				start + `get_weather(location="Paris", days=3)` + end,
				start + `opts()` + end, start + `opts(b=true)` + end, start + `opts(a=1, b=false)` + end,
				start + `get_time()` + end,
			},
			[]string{
				start + `get_weather(unit="c")` + end,
				start + `get_weather(location=1)` + end,
				start + `get_weather(unit="c", location="Paris")` + end,
				start + `opts(, b=true)` + end,
				start + `other()` + end,
				start + `get_time(), get_time()` + end,
			}},
		{"parallel", ToolChoice{Mode: ToolRequired}, true,
			[]string{start + `get_time(), get_weather(location="x")` + end}, []string{start + end}},
		{"a function", ToolChoice{Mode: ToolFunction, Function: "get_time"}, false,
			[]string{start + `get_time()` + end}, []string{start + `opts()` + end}},
	})
}

// toolGrammarCase is a forced tool choice and replies its grammar must
// accept (each parsing back into calls, nothing left) and refuse.
type toolGrammarCase struct {
	name     string
	choice   ToolChoice
	parallel bool
	accepts  []string
	refuses  []string
}

// checkToolGrammar checks format's forced-call grammar for each case.
func checkToolGrammar(t *testing.T, format ToolFormat, tools []Tool, cases []toolGrammarCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src, err := ToolCallGrammar(format, tools, tc.choice, tc.parallel)
			require.NoError(t, err)
			g, err := grammar.Parse(src)
			require.NoError(t, err, src)
			for _, reply := range tc.accepts {
				require.True(t, g.Accepts(reply), "%q\n%s", reply, src)
				rest, calls, err := ParseToolCalls(format, reply, 0)
				require.NoError(t, err)
				assert.Empty(t, rest)
				require.NotEmpty(t, calls, reply)
			}
			for _, reply := range tc.refuses {
				assert.False(t, g.Accepts(reply), "%q\n%s", reply, src)
			}
		})
	}
}
