package openai

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/wasmlm/wasmlm/chat"
)

// TestReplyFinishWithCalls: a reply that makes calls finishes with
// "tool_calls" only when its generation stopped on its own; one the token
// limit cut (its last call possibly cut with it) or that was aborted keeps
// its reason.
func TestReplyFinishWithCalls(t *testing.T) {
	calls := []chat.ToolCall{{ID: "call_0", Name: "get_weather", Arguments: `{"city":"Paris","unit":""}`}}
	for _, tc := range []struct {
		finish string
		calls  []chat.ToolCall
		want   string
	}{
		{"stop", calls, "tool_calls"},
		{"length", calls, "length"},
		{"abort", calls, "abort"},
		{"stop", nil, "stop"},
		{"length", nil, "length"},
	} {
		msg, finish := Reply{ToolCalls: tc.calls}.Message(tc.finish)
		assert.Equal(t, tc.want, finish, "%s with %d calls", tc.finish, len(tc.calls))
		assert.Len(t, msg.ToolCalls, len(tc.calls))
	}
}
