package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSplitModelInLlamaCpp: llama.cpp (through node-llama-cpp) loads the
// parts SplitBytes writes from the first one and generates the same greedy
// tokens as from the whole file, which proves the parts are what llama.cpp
// reads. Skipped without Node or node-llama-cpp, except in CI.
func TestSplitModelInLlamaCpp(t *testing.T) {
	node := needLlamaCpp(t)
	whole, first, _ := splitModel(t)
	const n = 16
	code, out, errOut := runCLI(t, "generate", "-m", whole, "-p", "Once upon a time", "-temp", "0", "-n", strconv.Itoa(n), "-json")
	require.Equal(t, exitOK, code, errOut)
	var ours generateJSON
	require.NoError(t, json.Unmarshal([]byte(out), &ours))

	type result struct {
		Tokens  []int `json:"tokens"`
		Tensors int   `json:"tensors"`
	}
	generate := func(model string) result {
		args, err := json.Marshal(map[string]any{"model": model, "prompt_tokens": ours.PromptTokens, "n": n})
		require.NoError(t, err)
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(node, filepath.Join("testdata", "llamacpp_generate.mjs"), string(args))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "llama.cpp on %s: %s", model, &stderr)
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		var r result
		require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &r), "%s", &stdout)
		return r
	}
	a, b := generate(whole), generate(first)
	require.Len(t, a.Tokens, n)
	assert.Equal(t, a, b, "llama.cpp: the split model generates as the whole file")
	assert.Equal(t, 29, b.Tensors, "node-llama-cpp read the tensors of every part")
	t.Logf("llama.cpp: %v; wasmlm: %v", b.Tokens, ours.Tokens)
}

// needLlamaCpp returns the node executable when Node and the repository's
// node-llama-cpp (npm ci) are there; otherwise it skips the test, or fails
// it in CI (CI set), where .ci/run installs both.
func needLlamaCpp(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	why := "needs Node.js (Debian package nodejs)"
	if err == nil {
		if _, err = os.Stat(filepath.Join("..", "..", "node_modules", "node-llama-cpp", "package.json")); err == nil {
			return node
		}
		why = "needs node-llama-cpp: run npm ci --omit=optional at the repository root (make test does)"
	}
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}
