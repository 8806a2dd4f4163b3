//go:build !js

package embedref

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// small is a BERT-family shape small enough to write in every variant.
var small = modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, ContextLength: 64}

// texts are sentences to embed: unrelated ones, and texts[4] one word from
// texts[0].
var texts = []string{
	"The quick brown fox jumps over the lazy dog.",
	"A stock market crash wiped out their savings.",
	"hello",
	"Paris is the capital of France.",
	"The quick brown fox jumps over the lazy cat.",
}

// write writes sp's file into dir and returns its path.
func write(t *testing.T, dir string, sp modelgen.Spec) string {
	t.Helper()
	data, err := modelgen.Build(sp)
	require.NoError(t, err)
	f, err := os.CreateTemp(dir, fmt.Sprintf("%s-%s-%v-*.gguf", sp.Arch, sp.Pooling, sp.Type))
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return f.Name()
}

func finite(t *testing.T, v []float64, what string) {
	t.Helper()
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			t.Fatalf("%s: value %d is %v", what, i, x)
		}
	}
}

func dot(a, b []float64) float64 {
	var dot float64
	for i := range a {
		dot += a[i] * b[i]
	}
	return dot
}

// TestFilesLoad: llama.cpp loads modelgen's bert and nomic-bert files of
// every pooling and matrix type and embeds texts with them — finite
// vectors of Dim values, not normalized, pooled as the file says, the
// texts' ids between [CLS] and [SEP] — and its rerankers score (query,
// document) pairs: one finite raw output, node-llama-cpp's score its
// sigmoid, over [CLS] query [SEP] document. A file llama.cpp refused would
// fail here: these are the proof that modelgen writes what converted files
// hold.
func TestFilesLoad(t *testing.T) {
	r := Need(t)
	dir := t.TempDir()
	var embeds []EmbedJob
	var specs []modelgen.Spec
	for _, arch := range []string{"bert", "nomic-bert"} {
		for _, typ := range []tensor.Type{tensor.F32, tensor.F16, tensor.Q8_0} {
			for _, pooling := range []string{"mean", "cls", "last"} {
				sp := modelgen.Spec{Arch: arch, Shape: small, Type: typ, Pooling: pooling, Seed: 1}
				specs = append(specs, sp)
				embeds = append(embeds, EmbedJob{Model: write(t, dir, sp), Inputs: Texts(texts...)})
			}
		}
	}
	var ranks []RankJob
	for _, typ := range []tensor.Type{tensor.F32, tensor.F16, tensor.Q8_0} {
		sp := modelgen.Spec{Arch: "bert", Shape: small, Type: typ, Pooling: "rank", Seed: 1}
		ranks = append(ranks, RankJob{Model: write(t, dir, sp), Query: texts[0], Documents: texts[1:]})
	}
	res, err := r.Run(Request{Embed: embeds, Rank: ranks})
	require.NoError(t, err)

	pooling := map[string]int{"mean": 1, "cls": 2, "last": 3}
	for i, e := range res.Embed {
		sp := specs[i]
		name := fmt.Sprintf("%s/%v/%s", sp.Arch, sp.Type, sp.Pooling)
		require.Empty(t, e.Error, name)
		assert.Equal(t, sp.Arch, e.Architecture, name)
		assert.Equal(t, pooling[sp.Pooling], e.PoolingType, name)
		for k, emb := range e.Embeddings {
			require.Len(t, emb.Vector, small.Dim, name)
			finite(t, emb.Vector, name)
			norm := math.Sqrt(dot(emb.Vector, emb.Vector))
			assert.Greater(t, math.Abs(norm-1), 0.1, "%s: not normalized (norm %v)", name, norm)
			assert.Equal(t, 101, emb.Tokens[0], "%s: [CLS] first", name)
			assert.Equal(t, 102, emb.Tokens[len(emb.Tokens)-1], "%s: [SEP] last", name)
			assert.Equal(t, res.Embed[0].Embeddings[k].Tokens, emb.Tokens, "%s: one vocabulary", name)
		}
		// mean and cls pool different states; last pools [SEP]'s.
		assert.Less(t, testmodel.Cosine(e.Embeddings[0].Vector, e.Embeddings[1].Vector), 0.99, "%s: texts embed apart", name)
	}
	assert.Equal(t, []int{101, 7592, 102}, res.Embed[0].Embeddings[2].Tokens, "hello")

	words := func(k int) []int { // texts[k]'s ids without [CLS] and [SEP]
		ids := res.Embed[0].Embeddings[k].Tokens
		return ids[1 : len(ids)-1]
	}
	for i, rk := range res.Rank {
		require.Empty(t, rk.Error, "rank %d", i)
		for d, rank := range rk.Ranks {
			require.Len(t, rank.Raw, 1, "one label, one output")
			finite(t, rank.Raw, "raw score")
			assert.InDelta(t, 1/(1+math.Exp(-rank.Raw[0])), rank.Score, 1e-12, "rank is the sigmoid of the raw score")
			assert.Equal(t, rank.Score, rank.ScoreAll, "rankAll is rank")
			want := slices.Concat([]int{101}, words(0), []int{102}, words(d+1))
			assert.Equal(t, want, rank.Tokens, "[CLS] query [SEP] document, no closing [SEP]")
		}
		assert.NotEqual(t, rk.Ranks[0].Raw[0], rk.Ranks[1].Raw[0])
	}
}

// TestTokenInputs: ids embed as the text they tokenize from does; ids
// without [CLS] and [SEP] get them, as getEmbeddingFor adds them.
func TestTokenInputs(t *testing.T) {
	r := Need(t)
	path := write(t, t.TempDir(), modelgen.Spec{Arch: "bert", Shape: small, Type: tensor.F16, Seed: 2})
	hello := []int{101, 7592, 102}
	res, err := r.Run(Request{Embed: []EmbedJob{{Model: path, Inputs: []Input{{Text: "hello"}, {Tokens: hello}, {Tokens: []int{7592}}}}}})
	require.NoError(t, err)
	e := res.Embed[0]
	require.Empty(t, e.Error)
	for i, emb := range e.Embeddings {
		assert.Equal(t, hello, emb.Tokens, "input %d", i)
		assert.Equal(t, e.Embeddings[0].Vector, emb.Vector, "input %d", i)
	}
}

// TestRefusals: llama.cpp refuses a bert file without a tensor it needs
// (a LayerNorm's bias) and one without tokenizer.ggml.token_type_count,
// saying why in that job's Error.
func TestRefusals(t *testing.T) {
	r := Need(t)
	data, err := modelgen.Build(modelgen.Spec{Arch: "bert", Shape: small, Seed: 3})
	require.NoError(t, err)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	without := func(key, tensorName string) string {
		b := gguf.NewBuilder()
		for _, kv := range f.KVs() {
			if kv.Key != key {
				b.Set(kv.Key, kv.Value)
			}
		}
		for _, ti := range f.Tensors() {
			if ti.Name != tensorName {
				b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
			}
		}
		out, err := b.Bytes()
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "bad.gguf")
		require.NoError(t, os.WriteFile(path, out, 0o644))
		return path
	}
	res, err := r.Run(Request{Embed: []EmbedJob{
		{Model: without("", "blk.1.attn_output_norm.bias"), Inputs: Texts("x")},
		{Model: without("tokenizer.ggml.token_type_count", ""), Inputs: Texts("x")},
	}})
	require.NoError(t, err)
	assert.Contains(t, res.Embed[0].Error, "blk.1.attn_output_norm.bias")
	assert.Contains(t, res.Embed[1].Error, "token type count")
}

// TestSpread: the embeddings of the benchmark's MiniLM-L6 shape (bert) and
// of a nomic-bert of its size are far from degenerate: unrelated texts'
// cosines stay well below 0.99, and the two texts one word apart are the
// closest pair.
func TestSpread(t *testing.T) {
	if testing.Short() {
		t.Skip("writes two 25 MB models")
	}
	r := Need(t)
	dir := t.TempDir()
	var jobs []EmbedJob
	for _, arch := range []string{"bert", "nomic-bert"} {
		sp := modelgen.Spec{Arch: arch, Shape: modelgen.MiniLML6(), Type: tensor.Q8_0, Seed: 1}
		jobs = append(jobs, EmbedJob{Model: write(t, dir, sp), Inputs: Texts(texts...)})
	}
	res, err := r.Run(Request{Embed: jobs})
	require.NoError(t, err)
	for i, e := range res.Embed {
		require.Empty(t, e.Error)
		lo, hi := 1.0, -1.0
		for a := range texts {
			for b := a + 1; b < len(texts); b++ {
				if a == 0 && b == 4 {
					continue
				}
				c := testmodel.Cosine(e.Embeddings[a].Vector, e.Embeddings[b].Vector)
				lo, hi = min(lo, c), max(hi, c)
			}
		}
		near := testmodel.Cosine(e.Embeddings[0].Vector, e.Embeddings[4].Vector)
		t.Logf("%s: unrelated texts' cosines %.3f–%.3f, one word apart %.3f", jobs[i].Model, lo, hi, near)
		assert.Less(t, hi, 0.95)
		assert.Greater(t, near, hi)
	}
}

// TestTime: both timing modes run a batch, of ids or of texts, on one
// thread or two, and report each round's wall time; modelgen.EmbedTexts'
// texts are as many tokens as asked for by llama.cpp's WordPiece, and a
// text of another length fails its job.
func TestTime(t *testing.T) {
	r := Need(t)
	path := write(t, t.TempDir(), modelgen.Spec{Arch: "nomic-bert", Shape: small, Type: tensor.Q8_0, Seed: 4})
	texts, err := modelgen.EmbedTexts(16, 4)
	require.NoError(t, err)
	jobs := []TimeJob{
		{Model: path, Tokens: 16, Batch: 4, Repeats: 2, Mode: Sequences},
		{Model: path, Tokens: 16, Batch: 4, Repeats: 2, Mode: Sequential},
		{Model: path, Tokens: 16, Batch: 4, Repeats: 2, Mode: Sequences, Texts: texts, Threads: 2, WarmupMS: 50},
		{Model: path, Tokens: 16, Batch: 4, Repeats: 2, Mode: Sequential, Texts: texts, Threads: 2},
		{Model: path, Tokens: 17, Batch: 4, Repeats: 1, Texts: texts},
	}
	res, err := r.Run(Request{Time: jobs})
	require.NoError(t, err)
	for i, tr := range res.Time[:4] {
		require.Empty(t, tr.Error, jobs[i].Mode)
		require.Len(t, tr.Seconds, 2)
		for _, s := range tr.Seconds {
			assert.Greater(t, s, 0.0)
		}
		assert.Greater(t, tr.PerSecond(jobs[i]), 0.0)
		assert.Equal(t, 16, tr.Tokens)
		assert.Equal(t, max(jobs[i].Threads, 1), tr.Threads, "job %d", i)
		assert.GreaterOrEqual(t, tr.WarmupRounds, 1)
	}
	assert.Contains(t, res.Time[4].Error, "texts[0] is 16 tokens with [CLS] and [SEP], not 17")
	_, err = r.Run(Request{Time: []TimeJob{{Model: path, Tokens: 2, Batch: 1, Repeats: 1}}})
	assert.Error(t, err, "fewer than 3 tokens")
	_, err = r.Run(Request{Time: []TimeJob{{Model: path, Tokens: 16, Batch: 2, Repeats: 1, Texts: texts}}})
	assert.Error(t, err, "4 texts for a batch of 2")
}
