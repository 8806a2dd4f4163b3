package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGeneratePromptCache: generate -prompt-cache FILE saves the session
// once its prompt is evaluated; run again with the same prompt it
// evaluates nothing, with a longer one only what follows, and writes the
// tokens a run without the cache writes. A cache of another model, or a
// corrupt one, is an error that says how to start over.
func TestGeneratePromptCache(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "prompt.cache")
	generate := func(prompt string, extra ...string) generateJSON {
		t.Helper()
		args := append([]string{"generate", "-p", prompt, "-temp", "0", "-n", "12", "-json"}, extra...)
		code, out, errOut := runCLI(t, args...)
		require.Equal(t, exitOK, code, errOut)
		var res generateJSON
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		return res
	}
	const prompt = "Once upon a time, there was a little dog"
	want := generate(prompt)
	first := generate(prompt, "-prompt-cache", cache)
	assert.Equal(t, want.Tokens, first.Tokens)
	assert.Equal(t, len(want.PromptTokens), first.Timings.PrefillTokens)
	saved, err := os.Stat(cache)
	require.NoError(t, err)

	again := generate(prompt, "-prompt-cache", cache)
	assert.Equal(t, want.Tokens, again.Tokens, "from the cache")
	assert.Zero(t, again.Timings.PrefillTokens, "the cached prompt is not evaluated again")
	same, err := os.Stat(cache)
	require.NoError(t, err)
	assert.Equal(t, saved.ModTime(), same.ModTime(), "a cache that held the whole prompt is not written again")
	code, _, errOut := runCLI(t, "generate", "-p", prompt, "-temp", "0", "-n", "2", "-prompt-cache", cache)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, errOut, "; prefill none (the prompt cache held the prompt), decode ", "no rate of nothing evaluated")
	assert.NotContains(t, errOut, "prefill 0.0 tok/s")

	longer := prompt + " named Max."
	wantLonger := generate(longer)
	gotLonger := generate(longer, "-prompt-cache", cache)
	assert.Equal(t, wantLonger.Tokens, gotLonger.Tokens, "a prompt that extends the cached one")
	assert.Equal(t, len(wantLonger.PromptTokens)-len(want.PromptTokens), gotLonger.Timings.PrefillTokens, "only the new tokens are evaluated")

	code, _, errOut = runCLI(t, "generate", "-m", "../../engine/testdata/gguf/stories260K-F32.gguf", "-p", prompt, "-n", "2", "-prompt-cache", cache)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "saved by another model")
	assert.Contains(t, errOut, "delete "+cache)

	require.NoError(t, os.WriteFile(cache, []byte("WLMS\x01\x00\x00\x00"), 0o644))
	code, _, errOut = runCLI(t, "generate", "-p", prompt, "-n", "2", "-prompt-cache", cache)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "malformed saved state")
}
