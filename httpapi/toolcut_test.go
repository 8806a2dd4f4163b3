package httpapi

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestForcedToolCallCutByMaxTokens: a forced call that max_tokens cuts
// short, streamed or not, finishes with "length", and neither its markup
// nor a piece of it reaches the content (nor a streamed content delta): the
// content is empty, the unfinished call dropped. Run for the default model
// (the generic format's JSON) and with a Hermes template (<tool_call>
// tags), at every max_tokens until the call fits.
func TestForcedToolCallCutByMaxTokens(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    *Handler
	}{
		{"default model", newHandler(t, Options{})},
		{"hermes", func() *Handler {
			h, err := New(hermesModel(t), Options{})
			require.NoError(t, err)
			return h
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut := 0
			for maxTokens := 1; maxTokens <= 64; maxTokens++ {
				body := `{"messages": [{"role": "user", "content": "What time is it?"}], ` + clockTools +
					`, "tool_choice": {"type": "function", "function": {"name": "get_time"}}, "seed": 3, "max_tokens": ` + strconv.Itoa(maxTokens)
				content, calls, finish := chatReplyOf(t, tc.h, body+"}")
				sContent, _, sCalls, sFinish := streamedReply(t, tc.h, body+`, "stream": true}`)
				assert.Equal(t, finish, sFinish, body)
				assert.Equal(t, calls, sCalls, body)
				if finish != "length" {
					assert.Equal(t, "tool_calls", finish, body)
					require.Len(t, calls, 1, body)
					assert.Nil(t, content)
					break
				}
				cut++
				if len(calls) == 0 {
					require.NotNil(t, content, "content is there without calls: %s", body)
					assert.Empty(t, *content, "a cut call's markup is no content: %s", body)
				}
				assert.Nil(t, sContent, "no content streamed: %s", body)
				for _, c := range calls {
					assert.JSONEq(t, `{}`, c.Function.Arguments, "only a whole call stays: %s", body)
				}
			}
			assert.Greater(t, cut, 3, "the call took a few tokens")
		})
	}
}
