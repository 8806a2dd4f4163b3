//go:build !js

package engine

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/embedref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

var updateEmbeddings = flag.Bool("update-embeddings", false, "rewrite "+embedGoldenPath+" from llama.cpp's embeddings")

// embedParityTexts are the texts every embedding model of the parity test
// embeds: prose, punctuation, numbers, accents, scripts BERT's vocabulary
// splits by character (CJK) or does not know, white space of every kind,
// and a long one.
var embedParityTexts = []string{
	"The quick brown fox jumps over the lazy dog.",
	"A man is playing a guitar.",
	"How do I reset my password?",
	"Click 'Forgot password' on the sign-in page and follow the e-mail's link.",
	"what is the capital of france",
	"Paris is the capital and most populous city of France.",
	"Héllo wörld! Ça va? naïve café, ÉCOLE, Ångström",
	"東京は日本の首都です。",
	"北京是中国的首都",
	"Привет, как дела?",
	"2 + 2 = 4, 3.14159 and 1,000,000",
	"don't won't it's we're they'll",
	"   leading and trailing spaces   ",
	"tabs\tand\nnew\r\nlines",
	"emoji 🙂🚀 and symbols © ® ™ ∑ ∫",
	"hyphen-ated words, under_scores and CamelCase",
	"URL https://example.com/path?q=1&r=2#frag",
	"a",
	"!!!???...",
	"The mitochondria is the powerhouse of the cell.",
	"Embeddings map text to vectors so that similar meanings lie close together.",
	"unbelievably unaffordable antidisestablishmentarianism",
	strings.Repeat("Once upon a time there was a little girl who loved to read. ", 6),
	"Ünïcödé ẞ ß ﬁ ligature ½ ² Ⅻ",
}

// embedParityQuery and embedParityDocs are the reranker's inputs.
var (
	embedParityQuery = "How do I reset my password?"
	embedParityDocs  = embedParityTexts
)

// embedParityCases are the models of the parity test: bert and nomic-bert
// in F32 and Q8_0 (bert in F16 with CLS pooling too), bert rerankers, and
// two decoders (the default model, mean pooling; a qwen3, last token).
func embedParityCases() []embedref.GoldenCase {
	// The weights' spread: at modelgen's default (BertStd), a network of
	// this small shape is chaotic — one word changes the whole vector, and
	// a difference in a float's last bit that moves an activation across a
	// Q8_0 or F16 rounding step grows layer after layer — where trained
	// models are smooth. A third of it keeps different texts apart
	// (cosines at most about 0.9) without the chaos.
	std := 0.3 * modelgen.BertStd(embedParityShape)
	spec := func(arch string, typ tensor.Type, pooling string, seed uint64) *modelgen.Spec {
		return &modelgen.Spec{Arch: arch, Shape: embedParityShape, Type: typ, Pooling: pooling, Seed: seed, Std: std}
	}
	embed := func(name string, sp *modelgen.Spec) embedref.GoldenCase {
		return embedref.GoldenCase{Name: name, Spec: sp, Texts: embedParityTexts}
	}
	rank := func(name string, sp *modelgen.Spec, tolerance float32) embedref.GoldenCase {
		return embedref.GoldenCase{Name: name, Spec: sp, Query: embedParityQuery, Documents: embedParityDocs, ScoreTolerance: tolerance}
	}
	qwen3 := &modelgen.Spec{Arch: "qwen3", Shape: modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 512, ContextLength: 1024}, Type: tensor.F32, Seed: 7}
	return []embedref.GoldenCase{
		embed("bert-F32", spec("bert", tensor.F32, "", 1)),
		embed("bert-Q8_0", spec("bert", tensor.Q8_0, "", 1)),
		// At the default spread: its states are F16-rounded, not quantized.
		embed("bert-cls-F16", &modelgen.Spec{Arch: "bert", Shape: embedParityShape, Type: tensor.F16, Pooling: "cls", Seed: 2}),
		embed("nomic-bert-F32", spec("nomic-bert", tensor.F32, "", 3)),
		embed("nomic-bert-Q8_0", spec("nomic-bert", tensor.Q8_0, "", 3)),
		rank("bert-rerank-F32", spec("bert", tensor.F32, "rank", 4), 1e-3),
		rank("bert-rerank-Q8_0", spec("bert", tensor.Q8_0, "rank", 4), 1e-2),
		{Name: "stories260K-mean", Default: true, Pooling: uint32(PoolingMean), Texts: embedParityTexts},
		{Name: "qwen3-last", Spec: qwen3, Pooling: uint32(PoolingLast), Texts: embedParityTexts},
	}
}

// TestEmbeddingsAsLlamaCpp has llama.cpp (node-llama-cpp, pinned) embed
// and rank the parity inputs with every parity model, holds the engine to
// its results (checkEmbedCase: the same ids, cosine ≥ 0.9999, scores
// within maxScoreDiff), and checks that the golden file the other
// platforms are held to is what llama.cpp gives, within those bounds:
// its cases and inputs exactly, its outputs as the engine's
// (-update-embeddings rewrites it).
func TestEmbeddingsAsLlamaCpp(t *testing.T) {
	r := embedref.Need(t)
	cases := embedParityCases()
	dir := t.TempDir()
	var req embedref.Request
	for _, c := range cases {
		data, err := c.Model()
		require.NoError(t, err)
		path := filepath.Join(dir, c.Name+".gguf")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		if len(c.Texts) > 0 {
			req.Embed = append(req.Embed, embedref.EmbedJob{Model: path, Inputs: embedref.Texts(c.Texts...)})
		}
		if len(c.Documents) > 0 {
			req.Rank = append(req.Rank, embedref.RankJob{Model: path, Query: c.Query, Documents: c.Documents})
		}
	}
	res, err := r.Run(req)
	require.NoError(t, err)
	var embeds, ranks int
	for i := range cases {
		c := &cases[i]
		if len(c.Texts) > 0 {
			e := res.Embed[embeds]
			embeds++
			require.Empty(t, e.Error, c.Name)
			for _, v := range e.Embeddings {
				c.Tokens = append(c.Tokens, v.Tokens)
				c.Vectors = append(c.Vectors, float32s(v.Vector))
			}
		}
		if len(c.Documents) > 0 {
			rk := res.Rank[ranks]
			ranks++
			require.Empty(t, rk.Error, c.Name)
			for _, v := range rk.Ranks {
				c.PairTexts = append(c.PairTexts, v.Tokens)
				c.Scores = append(c.Scores, float32(v.Raw[0]))
			}
		}
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			data, err := c.Model()
			require.NoError(t, err)
			m, err := LoadGGUF(data)
			require.NoError(t, err)
			checkEmbedCase(t, m, c)
		})
	}
	got, err := json.Marshal(embedref.Golden{Cases: cases})
	require.NoError(t, err)
	if *updateEmbeddings {
		require.NoError(t, os.WriteFile(embedGoldenPath, append(got, '\n'), 0o644))
		return
	}
	var want embedref.Golden
	require.NoError(t, json.Unmarshal(readFile(t, embedGoldenPath), &want))
	var now embedref.Golden
	require.NoError(t, json.Unmarshal(got, &now))
	require.Equal(t, withoutOutputs(want), withoutOutputs(now), "%s has other cases or inputs than these: rerun with -update-embeddings", embedGoldenPath)
	// llama.cpp's kernels depend on the CPU (AVX2 or AVX-512, say), so its
	// outputs are held to the file as the engine's are, not bit for bit.
	for i, c := range want.Cases {
		for j, v := range c.Vectors {
			assert.GreaterOrEqual(t, testmodel.Cosine(v, now.Cases[i].Vectors[j]), minEmbedCosine, "%s text %d: %s is not what llama.cpp gives now: rerun with -update-embeddings", c.Name, j, embedGoldenPath)
			assert.InEpsilon(t, norm(v), norm(now.Cases[i].Vectors[j]), 1e-3, "%s text %d: length", c.Name, j)
		}
		for j, sc := range c.Scores {
			assert.InDelta(t, sc, now.Cases[i].Scores[j], float64(c.ScoreTolerance), "%s document %d", c.Name, j)
		}
	}
}

// withoutOutputs is g without llama.cpp's vectors and scores: the cases,
// their inputs and token ids.
func withoutOutputs(g embedref.Golden) embedref.Golden {
	cases := make([]embedref.GoldenCase, len(g.Cases))
	for i, c := range g.Cases {
		c.Vectors, c.Scores = nil, nil
		cases[i] = c
	}
	return embedref.Golden{Cases: cases}
}

// float32s rounds v to float32.
func float32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
