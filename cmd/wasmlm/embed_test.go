package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
)

// runEmbedCLI runs embed or rerank with stdin.
func runEmbedCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runEmbedding(context.Background(), args[0], args[1:], strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// engineEmbeddings is the engine's answer for texts with the default model.
func engineEmbeddings(t *testing.T, texts []string, opts engine.EmbedOptions) []engine.Embedding {
	t.Helper()
	m, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	embs, err := s.Embed(context.Background(), texts, opts)
	require.NoError(t, err)
	return embs
}

// TestEmbed: embed prints the engine's embeddings of its arguments (or of
// stdin's lines, in the place of -) and the tokens they took, as one JSON
// object; -raw leaves them as pooled, -truncate cuts a long text.
func TestEmbed(t *testing.T) {
	long := strings.Repeat("Once upon a time there was ", 100)
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
		texts []string
		opts  engine.EmbedOptions
	}{
		{"one text", []string{"embed", "Once upon a time"}, "", []string{"Once upon a time"}, engine.EmbedOptions{}},
		{"texts", []string{"embed", "Once upon a time", "Lily"}, "", []string{"Once upon a time", "Lily"}, engine.EmbedOptions{}},
		{"raw", []string{"embed", "-raw", "Once upon a time", "Lily"}, "", []string{"Once upon a time", "Lily"}, engine.EmbedOptions{Raw: true}},
		{"stdin", []string{"embed", "first", "-", "last"}, "Once upon a time\r\n\n  \nLily\n", []string{"first", "Once upon a time", "Lily", "last"}, engine.EmbedOptions{}},
		{"truncated", []string{"embed", "-truncate", "-threads", "1", long, "Lily"}, "", []string{long, "Lily"}, engine.EmbedOptions{Truncate: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runEmbedCLI(t, c.stdin, c.args...)
			require.Equal(t, exitOK, code, errOut)
			var got embedJSON
			require.NoError(t, json.Unmarshal([]byte(out), &got))
			want := engineEmbeddings(t, c.texts, c.opts)
			require.Len(t, got.Data, len(want))
			tokens := 0
			for i, e := range want {
				assert.Equal(t, i, got.Data[i].Index)
				assert.Equal(t, e.Vector, got.Data[i].Embedding, "text %d", i)
				assert.Equal(t, e.Truncated, got.Data[i].Truncated, "text %d", i)
				tokens += e.Tokens
				var norm float64
				for _, x := range e.Vector {
					norm += float64(x) * float64(x)
				}
				assert.Equal(t, !c.opts.Raw, math.Abs(norm-1) < 1e-5, "text %d: unit length unless -raw", i)
			}
			assert.Equal(t, embedUsageJSON{PromptTokens: tokens, TotalTokens: tokens}, got.Usage)
			if c.opts.Truncate {
				assert.True(t, got.Data[0].Truncated)
				assert.Contains(t, out, `"truncated":true`)
			} else {
				assert.NotContains(t, out, "truncated")
			}
		})
	}
}

func TestEmbedErrors(t *testing.T) {
	long := strings.Repeat("Once upon a time there was ", 100)
	for _, c := range []struct {
		args  []string
		stdin string
		code  int
		want  string
	}{
		{[]string{"embed"}, "", exitUsage, "embed: no texts given (arguments, or - to read them from stdin, one a line)"},
		{[]string{"embed", "-"}, "\n\n", exitUsage, "embed: no texts given"},
		{[]string{"embed", "-", "-"}, "a\n", exitError, "embed: - is given twice: stdin is read once"},
		{[]string{"embed", ""}, "", exitUsage, "embed: text must not be an empty string"},
		{[]string{"embed", "a", ""}, "", exitUsage, "embed: text 2 must not be an empty string"},
		{[]string{"embed", "a", "b\xff"}, "", exitUsage, "embed: text 2 is not valid UTF-8"},
		{[]string{"embed", long}, "", exitError, "embed: engine: prompt too long: the text is 602 tokens with its special tokens; the context holds 512 (-truncate cuts it to fit)"},
		{[]string{"embed", "a", long}, "", exitError, "embed: engine: prompt too long: text 2 is 602 tokens with its special tokens; the context holds 512 (-truncate cuts it to fit)"},
		{[]string{"embed", "-threads", "-1", "a"}, "", exitUsage, "embed: -threads must be 0 (every core) to"},
		{[]string{"embed", "-bogus", "a"}, "", exitUsage, "flag provided but not defined: -bogus"},
		{[]string{"embed", "-h"}, "", exitOK, "usage: wasmlm embed [flags] TEXT... (- reads texts from stdin, one a line)"},
		{[]string{"embed", "-m", "/nonexistent/model.gguf", "a"}, "", exitError, "no such file"},
		{[]string{"rerank", "a"}, "", exitUsage, "rerank: -query is required"},
		{[]string{"rerank", "-query", "q"}, "", exitUsage, "rerank: no documents given"},
		{[]string{"rerank", "-query", "q", "-top-n", "-1", "a"}, "", exitUsage, "rerank: -top-n must be >= 0 (0: all), got -1"},
		{[]string{"rerank", "-query", "q", "a", "b"}, "", exitError, "give a reranker with -m (wasmlm bench -gen DIR -shapes minilm-l6-rerank"},
		{[]string{"rerank", "-h"}, "", exitOK, "usage: wasmlm rerank [flags] -query Q DOC..."},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errOut := runEmbedCLI(t, c.stdin, c.args...)
			assert.Equal(t, c.code, code, errOut)
			assert.Contains(t, errOut, c.want)
			assert.Empty(t, out)
		})
	}
	code, _, errOut := runCLI(t, "embed")
	assert.Equal(t, exitUsage, code, "run knows the command")
	assert.Contains(t, errOut, "no texts given")
	code, _, errOut = runCLI(t, "rerank", "-query", "q", "a")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "does not rerank")
}

// writeModel writes a random-weight model of spec to a file of dir.
func writeModel(t *testing.T, dir string, spec modelgen.Spec) string {
	t.Helper()
	b, err := modelgen.Build(spec)
	require.NoError(t, err)
	name := spec.Arch
	if spec.Pooling != "" {
		name += "-" + spec.Pooling
	}
	path := filepath.Join(dir, name+".gguf")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

// tinyBert is the shape of the encoders these tests run.
var tinyBert = modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, ContextLength: 64}

// TestEncoders: embed and rerank with an embedding model and a reranker
// print the engine's vectors and scores (rerank's best first, -top-n of
// them); generate refuses both, naming the command that serves each;
// rerank refuses an embedding model and embed a reranker.
func TestEncoders(t *testing.T) {
	dir := t.TempDir()
	bert := writeModel(t, dir, modelgen.Spec{Arch: "bert", Shape: tinyBert, Type: tensor.F16, Seed: 1})
	reranker := writeModel(t, dir, modelgen.Spec{Arch: "bert", Shape: tinyBert, Type: tensor.Q8_0, Pooling: "rank", Seed: 2})
	session := func(path string) *engine.Session {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		m, err := engine.Load(b, engine.LoadOptions{})
		require.NoError(t, err)
		s, err := m.NewSession(engine.SessionOptions{})
		require.NoError(t, err)
		return s
	}

	texts := []string{"A cat sat on the mat.", "Stocks fell sharply today."}
	code, out, errOut := runEmbedCLI(t, "", append([]string{"embed", "-m", bert}, texts...)...)
	require.Equal(t, exitOK, code, errOut)
	var got embedJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	want, err := session(bert).Embed(context.Background(), texts, engine.EmbedOptions{})
	require.NoError(t, err)
	for i := range want {
		assert.Equal(t, want[i].Vector, got.Data[i].Embedding)
	}
	assert.Equal(t, want[0].Tokens+want[1].Tokens, got.Usage.PromptTokens)

	docs := []string{"The cat sleeps.", "The dog is in the park.", "A dog barks."}
	code, out, errOut = runEmbedCLI(t, "", append([]string{"rerank", "-m", reranker, "-query", "Where is the dog?", "-top-n", "2"}, docs...)...)
	require.Equal(t, exitOK, code, errOut)
	var ranked rerankJSON
	require.NoError(t, json.Unmarshal([]byte(out), &ranked))
	scores, err := session(reranker).Rerank(context.Background(), "Where is the dog?", docs, engine.EmbedOptions{})
	require.NoError(t, err)
	require.Len(t, ranked.Results, 2)
	best := []rerankResultJSON{}
	for i, s := range scores {
		best = append(best, rerankResultJSON{Index: i, RelevanceScore: s.Value})
	}
	slices.SortStableFunc(best, func(a, b rerankResultJSON) int { return cmp.Compare(b.RelevanceScore, a.RelevanceScore) })
	assert.Equal(t, best[:2], ranked.Results)
	assert.Equal(t, scores[0].Tokens+scores[1].Tokens+scores[2].Tokens, ranked.Usage.PromptTokens, "every document scored")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", "-m", bert, "-p", "hi"}, "generate: this bert model is an embedding model: it embeds text and does not generate it (wasmlm embed TEXT...)"},
		{[]string{"generate", "-m", reranker, "-p", "hi"}, "generate: this bert model is a reranker: it scores documents for a query and does not generate text (wasmlm rerank -query Q DOC...)"},
		{[]string{"rerank", "-m", bert, "-query", "q", "d"}, "rerank: engine: unsupported model: this model does not rerank"},
		{[]string{"embed", "-m", reranker, "d"}, "embed: engine: unsupported model: this model is a reranker"},
		{[]string{"rerank", "-m", reranker, "-query", "q", "d", strings.Repeat("a dog ", 40)}, "rerank: engine: prompt too long: document 2 with the query takes"},
		{[]string{"rerank", "-m", reranker, "-query", "q", "d", strings.Repeat("a dog ", 40)}, "(-truncate cuts the document)"},
	} {
		code, out, errOut := runCLI(t, c.args...)
		assert.Equal(t, exitError, code, "%v", c.args)
		assert.Contains(t, errOut, c.want)
		assert.Empty(t, out)
	}
}
