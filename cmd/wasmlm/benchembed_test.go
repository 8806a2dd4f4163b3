package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestBenchEmbed: -embed measures each spec in -rounds rounds after at
// least one to warm up, and gives each the median's rate.
func TestBenchEmbed(t *testing.T) {
	data, err := modelgen.Build(modelgen.Spec{Arch: "bert", Type: tensor.F16, Seed: 1,
		Shape: modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, ContextLength: 64}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "bert-F16.gguf")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	code, out, errOut := runCLI(t, "bench", "-m", path, "-embed", "8x1,12x3", "-rounds", "3", "-warmup", "0", "-threads", "1", "-json")
	require.Equal(t, exitOK, code, errOut)
	var res benchJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Models, 1)
	r := res.Models[0]
	assert.Equal(t, "bert", r.Architecture)
	assert.Equal(t, 1, r.Threads)
	require.Len(t, r.Embed, 2)
	for i, want := range []modelgen.EmbedSpec{{Tokens: 8, Batch: 1}, {Tokens: 12, Batch: 3}} {
		e := r.Embed[i]
		assert.Equal(t, []int{want.Tokens, want.Batch}, []int{e.Tokens, e.Batch})
		assert.Equal(t, 1, e.WarmupRounds, "-warmup 0: one round")
		require.Len(t, e.Seconds, 3)
		perSecond, median := want.Rate(e.Seconds)
		assert.Equal(t, []float64{perSecond, median}, []float64{e.EmbeddingsPerSecond, e.MedianSeconds})
	}
	assert.Zero(t, r.GeneratedTokens)

	code, out, errOut = runCLI(t, "bench", "-m", path, "-embed", "8x2", "-warmup", "0")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "5 rounds", "-rounds defaults to 5 with -embed")
	assert.Contains(t, out, "8 tokens x 2")
}

// TestBenchEmbedErrors: a spec that is not TOKENSxBATCH, -embed with a
// grammar, and texts that a model's tokenizer does not count as BERT's
// (the default model's is a llama's) are errors.
func TestBenchEmbedErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-embed", "32"}, {"-embed", "2x1"}, {"-embed", "32x0"}, {"-embed", "32x1,x"}, {"-embed", "32x2049"},
		{"-embed", "32x1", "-grammar", "g.gbnf"},
	} {
		code, _, errOut := runCLI(t, append([]string{"bench"}, args...)...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
	code, _, errOut := runCLI(t, "bench", "-embed", "16x1", "-warmup", "0")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "not BERT's WordPiece")
}
