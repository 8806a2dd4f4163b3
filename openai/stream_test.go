package openai

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
)

// TestStreamChunks: the chunks of a streamed completion, in OpenAI's order,
// each shown as httpapi's tests show them ("delta finish_reason", "usage"
// for the usage chunk): the role chunk; a reply's reasoning and content as
// they are released; its calls after them, per call a chunk with index,
// id, type, name and arguments "" and one with its arguments; the finish
// chunk ("tool_calls" with calls); the usage chunk when asked for.
func TestStreamChunks(t *testing.T) {
	const seed = 7
	id := func(i int) string { return chat.ToolCallID(chat.ToolFormatGeneric, seed, i) }
	tests := []struct {
		name         string
		chat         bool
		includeUsage bool
		calls        *Calls
		tokens       []string
		want         []string
	}{
		{"two calls", true, true, &Calls{Format: chat.ToolFormatGeneric, Seed: seed, Parallel: true}, genericCalls, []string{
			`{"role":"assistant","content":""} null`,
			`{"tool_calls":[{"index":0,"id":"` + id(0) + `","type":"function","function":{"name":"get_weather","arguments":""}}]} null`,
			`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}]} null`,
			`{"tool_calls":[{"index":1,"id":"` + id(1) + `","type":"function","function":{"name":"get_time","arguments":""}}]} null`,
			`{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]} null`,
			`{} "tool_calls"`,
			"usage",
		}},
		{"reasoning, then content", true, false, nil, splitReply, []string{
			`{"role":"assistant","content":""} null`,
			`{"reasoning_content":"I"} null`,
			`{"reasoning_content":" should"} null`,
			`{"reasoning_content":" greet."} null`,
			`{"content":"Hel"} null`,
			`{"content":"lo"} null`,
			`{"content":"!"} null`,
			`{} "stop"`,
		}},
		{"text completion", false, true, nil, []string{"Once", " upon"}, []string{
			`"Once" null`,
			`" upon" null`,
			`"" "stop"`,
			"usage",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream("chatcmpl-x", 1, "m", tt.chat, tt.includeUsage, tt.calls, "")
			chunks := s.Start()
			for _, tok := range tt.tokens {
				chunks = append(chunks, s.Token(tok)...)
			}
			chunks = append(chunks, s.Finish(engine.Result{FinishReason: engine.FinishStop}, 0)...)
			var got []string
			for _, c := range chunks {
				b, err := json.Marshal(c)
				require.NoError(t, err)
				var m map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(b, &m))
				var choices []map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(m["choices"], &choices))
				switch {
				case len(choices) == 0:
					got = append(got, "usage")
				case tt.chat:
					got = append(got, string(choices[0]["delta"])+" "+string(choices[0]["finish_reason"]))
				default:
					got = append(got, string(choices[0]["text"])+" "+string(choices[0]["finish_reason"]))
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestFinishReason: OpenAI's finish_reason for each of the engine's, as
// the page's chat.completions has answered them: a full context is a
// length limit too; an aborted generation says so.
func TestFinishReason(t *testing.T) {
	for r, want := range map[engine.FinishReason]string{
		engine.FinishStop: "stop", engine.FinishLength: "length", engine.FinishContext: "length", engine.FinishAbort: "abort",
	} {
		assert.Equal(t, want, FinishReason(r), r)
	}
}
