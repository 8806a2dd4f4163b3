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

// TestServeSplitModel: serve -m with the first part serves the model under
// its name without the part number, completing as generate does.
func TestServeSplitModel(t *testing.T) {
	whole, first, _ := splitModel(t)
	code, out, errOut := runCLI(t, "generate", "-m", whole, "-p", "Once upon a time", "-temp", "0", "-n", "8", "-json")
	require.Equal(t, exitOK, code, errOut)
	var want generateJSON
	require.NoError(t, json.Unmarshal([]byte(out), &want))

	ctx, interrupt := context.WithCancel(context.Background())
	var stderr lockedBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"serve", "-m", first, "-addr", "127.0.0.1:0", "-web", t.TempDir()}, io.Discard, &stderr)
	}()
	defer func() {
		interrupt()
		assert.Equal(t, exitOK, <-exit, stderr.String())
	}()
	base := servedAt(t, &stderr)

	resp, err := http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	var c struct {
		Model   string `json:"model"`
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	assert.Equal(t, "m", c.Model)
	require.Len(t, c.Choices, 1)
	assert.Equal(t, want.Text, c.Choices[0].Text)
}
