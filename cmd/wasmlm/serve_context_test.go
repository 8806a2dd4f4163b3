//go:build !js

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/cmd/internal/servecli"
)

// TestServeContextHint: a chat whose messages leave no room for a reply
// in serve's default context (the default model's 512) is refused with
// OpenAI's message, which then says how to lengthen the context; started
// with that longer -ctx, serve answers the same request.
func TestServeContextHint(t *testing.T) {
	body, err := json.Marshal(map[string]any{"max_tokens": 4, "messages": []map[string]string{
		{"role": "user", "content": strings.Repeat("Once upon a time there was a dog. ", 60)}}})
	require.NoError(t, err)
	for _, tc := range []struct {
		flags  []string
		status int
	}{
		{nil, http.StatusBadRequest},
		{[]string{"-ctx", "2048"}, http.StatusOK},
	} {
		ctx, interrupt := context.WithCancel(context.Background())
		var stderr lockedBuffer
		exit := make(chan int, 1)
		go func() {
			exit <- run(ctx, append([]string{"serve", "-addr", "127.0.0.1:0", "-web", "", "-slots", "1"}, tc.flags...), io.Discard, &stderr)
		}()
		base := servedAt(t, &stderr)
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
		require.NoError(t, err)
		var answer struct {
			Error struct {
				Message string `json:"message"`
				Code    string `json:"code"`
			} `json:"error"`
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
		resp.Body.Close()
		require.Equal(t, tc.status, resp.StatusCode, "%v: %s", tc.flags, answer.Error.Message)
		if tc.status == http.StatusOK {
			assert.Greater(t, answer.Usage.PromptTokens, 512, "the longer context holds the prompt")
		} else {
			assert.Equal(t, "context_length_exceeded", answer.Error.Code)
			assert.True(t, strings.HasPrefix(answer.Error.Message, "This model's maximum context length is 512 tokens, and the messages are "), answer.Error.Message)
			assert.True(t, strings.HasSuffix(answer.Error.Message, ": no room is left for a completion. "+servecli.ContextHint), answer.Error.Message)
		}
		stopServe(t, interrupt, exit, &stderr)
	}
}
