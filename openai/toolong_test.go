package openai

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTooLongHint: a prompt that leaves no room for a completion is
// refused with OpenAI's message, which clients match, followed by the
// host's ContextHint: refused by its bytes before tokenizing and by its
// tokens after.
func TestTooLongHint(t *testing.T) {
	const hint = "Load the model with a longer contextLength."
	for _, tc := range []struct {
		name, prompt, says string
	}{
		{"by its tokens", strings.Repeat("Once upon a time there was a dog. ", 60), "the messages are "},
		{"by its bytes", strings.Repeat("Once upon a time there was a dog. ", 2000), "the messages are at least "},
	} {
		a := newAPI(t)
		for _, h := range []string{"", hint} {
			a.ContextHint = h
			req := ChatRequest{SamplingRequest: a.NewSamplingRequest()}
			require.Nil(t, Decode([]byte(`{"messages": [{"role": "user", "content": "`+tc.prompt+`"}]}`), &req))
			_, e := a.ChatJob(&req)
			require.NotNil(t, e, tc.name)
			assert.Equal(t, "context_length_exceeded", e.Code, tc.name)
			assert.True(t, strings.HasPrefix(e.Message, "This model's maximum context length is 512 tokens, and "+tc.says), "%s: %s", tc.name, e.Message)
			want := "no room is left for a completion."
			if h != "" {
				want += " " + h
			}
			assert.True(t, strings.HasSuffix(e.Message, want), "%s: %s", tc.name, e.Message)
		}
	}
}
