package jsbridge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/policy"
)

// TestChatTokens: chatTokens counts a chat request's prompt as chat
// evaluates it (its promptTokens, and policy.NewChatPrompt's natively),
// and counts one longer than the session, which chat refuses; a bad
// request rejects as chat's does.
func TestChatTokens(t *testing.T) {
	b := New()
	t.Cleanup(func() {
		b.Release()
		require.Zero(t, b.LiveFuncs(), "js.Funcs left unreleased")
	})
	mustCall(t, b, "load", jsBytes(models.Default()), obj(map[string]any{"contextLength": 64}))
	native := nativeModel(t)
	for _, tc := range []struct {
		name string
		msgs []chat.Message
	}{
		{"one message", []chat.Message{{Role: "user", Content: "Once upon a time"}}},
		{"a conversation", []chat.Message{{Role: "system", Content: "Tim"}, {Role: "user", Content: "The cat"}, {Role: "assistant", Content: "sat"}, {Role: "user", Content: "down"}}},
		{"past the context", []chat.Message{{Role: "user", Content: strings.Repeat("the big dog ", 40)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := policy.NewChatPrompt(native, tc.msgs, chat.Options{})
			require.NoError(t, err)
			var msgs []any
			for _, m := range tc.msgs {
				msgs = append(msgs, map[string]any{"role": m.Role, "content": m.Content})
			}
			n := mustCall(t, b, "chatTokens", chatRequest(t, map[string]any{"messages": msgs})).Int()
			assert.Equal(t, len(p.Tokens), n)
			if n < 64 {
				res := mustCall(t, b, "chat", greedyChat(t, msgs, 1))
				assert.Len(t, ints(res.Get("promptTokens")), n, "chat's own prompt")
			} else {
				_, err := call(t, b, "chat", greedyChat(t, msgs, 1))
				require.Error(t, err, "chat refuses what does not fit")
			}
		})
	}
	_, err := call(t, b, "chatTokens", chatRequest(t, map[string]any{"messages": "x"}))
	var je *jsError
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "invalid_argument", je.Code)
	assert.Equal(t, "messages", je.Param)
}
