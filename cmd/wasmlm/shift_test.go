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
)

// TestContextShiftFlags: generate -context-shift writes past a context of
// 64 positions (stories260K, greedy from "Once upon a time": 5 prompt
// tokens; the context fills at the 60th generated token and again every
// 31, each shift keeping BOS and dropping (64-1)/2 = 31), and serve
// -context-shift makes it every request's default, max_tokens past -ctx
// allowed by -max-tokens.
func TestContextShiftFlags(t *testing.T) {
	code, out, errOut := runCLI(t, "generate", "-p", "Once upon a time", "-temp", "0", "-n", "150", "-ctx", "64", "-context-shift", "-json")
	require.Equal(t, exitOK, code, errOut)
	var res generateJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, "length", res.FinishReason)
	assert.Len(t, res.Tokens, 150)
	assert.Equal(t, 3, res.Usage.ContextShifts)
	assert.Equal(t, 93, res.Usage.ContextShiftedTokens)
	assert.Contains(t, errOut, "context shifted 3 times, 93 tokens dropped")

	code, _, errOut = runCLI(t, "generate", "-p", "Once upon a time", "-n", "0", "-context-shift")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "-n must be > 0 with context_shift")

	ctx, interrupt := context.WithCancel(context.Background())
	var stderr lockedBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-web", "", "-slots", "1", "-ctx", "64", "-max-tokens", "200", "-context-shift"}, io.Discard, &stderr)
	}()
	base := servedAt(t, &stderr)
	resp, err := http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 150, "temperature": 0, "logit_bias": {"1": -100, "2": -100}}`))
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var c struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
		Usage map[string]int `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(body, &c))
	assert.Equal(t, res.Text, c.Choices[0].Text, "the server writes what generate does")
	assert.Equal(t, map[string]int{"prompt_tokens": 5, "completion_tokens": 150, "total_tokens": 155,
		"context_shifts": 3, "context_shifted_tokens": 93}, c.Usage)
	stopServe(t, interrupt, exit, &stderr)
}
