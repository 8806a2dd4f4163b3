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

// ctxWarning is the warning generate, bench and serve print once for a -ctx
// beyond the default model's trained 512 positions.
const ctxWarning = "warning: -ctx: context length 2048 exceeds the 512 positions the model was trained for"

// TestContextBeyondTrainingFlags: generate, bench and serve take a -ctx longer
// than the model was trained for (stories260K: 512), warn once naming both
// numbers, and generate past the trained positions; within it they say
// nothing. A -ctx beyond engine.MaxContextLength is still refused (see
// TestCLIErrors).
func TestContextBeyondTrainingFlags(t *testing.T) {
	// A prompt of 801 tokens, too long for the trained context.
	long := strings.Repeat("once upon a time ", 200)
	code, out, errOut := runCLI(t, "generate", "-p", long, "-temp", "0", "-n", "5", "-ctx", "2048", "-json")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, 1, strings.Count(errOut, "generate: "+ctxWarning), errOut)
	var res generateJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Greater(t, len(res.PromptTokens), 512, "past the trained positions")

	_, _, errOut = runCLI(t, "generate", "-p", "Once", "-n", "2", "-ctx", "512")
	assert.NotContains(t, errOut, "warning: -ctx")

	code, _, errOut = runCLI(t, "bench", "-prompt", "4", "-n", "2", "-warmup", "0", "-ctx", "2048")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, 1, strings.Count(errOut, "bench: "+ctxWarning), errOut)
	_, _, errOut = runCLI(t, "bench", "-prompt", "4", "-n", "2", "-warmup", "0", "-ctx", "512")
	assert.NotContains(t, errOut, "warning: -ctx")

	ctx, interrupt := context.WithCancel(context.Background())
	var stderr lockedBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-web", "", "-slots", "1", "-ctx", "2048"}, io.Discard, &stderr)
	}()
	base := servedAt(t, &stderr)
	assert.Equal(t, 1, strings.Count(stderr.String(), "serve: "+ctxWarning), stderr.String())
	assert.Contains(t, stderr.String(), "(context 2048,")
	resp, err := http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 600, "temperature": 0, "logit_bias": {"1": -100, "2": -100}}`))
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var c struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage map[string]int `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(body, &c))
	assert.Equal(t, "length", c.Choices[0].FinishReason)
	assert.Equal(t, 600, c.Usage["completion_tokens"])
	stopServe(t, interrupt, exit, &stderr)
}
