package jsbridge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/models"
)

// TestChatContextShift: a chat's context_shift and n_keep, and the
// defaults the page's load sends with each chat (contextShift, nKeep),
// as the HTTP API reads them; the result's usage counts the shifts.
// (Greedy, never ending on BOS or EOS, in a context of 64 positions: a
// chat of 64 tokens fills it.)
func TestChatContextShift(t *testing.T) {
	b := New()
	t.Cleanup(func() {
		b.Release()
		require.Zero(t, b.LiveFuncs(), "js.Funcs left unreleased")
	})
	mustCall(t, b, "load", jsBytes(models.Default()), obj(map[string]any{"contextLength": 64}))
	request := func(fields map[string]any) map[string]any {
		fields["messages"], fields["temperature"] = userSays("Once upon a time"), 0
		fields["logit_bias"] = map[string]any{"1": -100, "2": -100}
		return fields
	}
	for _, tc := range []struct {
		name    string
		fields  map[string]any
		options map[string]any
		field   string // of the error
		message string // in the error's message
	}{
		{"asked", map[string]any{"context_shift": true, "max_tokens": 64}, nil, "", ""},
		{"asked past the context", map[string]any{"context_shift": true, "max_tokens": 150}, nil, "", ""},
		{"asked with n_keep", map[string]any{"context_shift": true, "n_keep": 3, "max_tokens": 64}, nil, "", ""},
		{"load's default", map[string]any{"max_tokens": 64}, map[string]any{"contextShift": true, "nKeep": 2}, "", ""},
		{"load's default refused", map[string]any{"context_shift": false, "max_tokens": 64}, map[string]any{"contextShift": true}, "max_tokens", ""},
		{"not asked", map[string]any{"max_tokens": 64}, nil, "max_tokens", "maximum context length is 64"},
		{"not asked, past the context", map[string]any{"max_tokens": 150}, nil, "max_tokens", "maximum context length is 64"},
		{"without max_tokens", map[string]any{"context_shift": true}, nil, "max_tokens", ""},
		{"n_keep below -1", map[string]any{"context_shift": true, "max_tokens": 8, "n_keep": -2}, nil, "n_keep", ""},
		{"nKeep below -1", map[string]any{"max_tokens": 8}, map[string]any{"contextShift": true, "nKeep": -2}, "nKeep", ""},
		{"contextShift not a boolean", map[string]any{"max_tokens": 8}, map[string]any{"contextShift": "yes"}, "contextShift", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []any{chatRequest(t, request(tc.fields))}
			if tc.options != nil {
				args = append(args, obj(tc.options))
			}
			res, err := call(t, b, "chat", args...)
			if tc.field != "" {
				var je *jsError
				require.ErrorAs(t, err, &je)
				assert.Equal(t, tc.field, je.Field, je.Message)
				assert.Contains(t, je.Message, tc.message)
				assert.NotContains(t, je.Message, "server", "the page is no server")
				return
			}
			require.NoError(t, err)
			usage := res.Get("usage")
			maxTokens := tc.fields["max_tokens"].(int)
			assert.Equal(t, maxTokens, usage.Get("completionTokens").Int())
			if maxTokens > 64 {
				assert.Greater(t, usage.Get("contextShifts").Int(), 1, "a reply longer than the context shifts more than once")
			} else {
				assert.Equal(t, 1, usage.Get("contextShifts").Int())
			}
			assert.Positive(t, usage.Get("contextShiftedTokens").Int())
		})
	}
}
