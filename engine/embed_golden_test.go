package engine

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/embedref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// llama.cpp's embeddings and reranking scores of random-weight models
// (testdata/llamacpp_embeddings.json), held against the engine's on every
// platform: natively, in wasm under Node, and (tests/e2e) in Chromium.
// TestEmbeddingsAsLlamaCpp (llamacpp_embed_test.go) asks llama.cpp for
// them again and fails when the file differs; -update-embeddings rewrites
// it.

// embedGoldenPath is the golden file, relative to the engine package.
const embedGoldenPath = "testdata/llamacpp_embeddings.json"

// Parity thresholds: the least cosine with llama.cpp's vector; and different
// texts' cosine at most, so that a model whose vectors are all alike (for
// which any two are close) cannot pass for one that agrees.
const (
	minEmbedCosine = 0.9999
	maxTextsCosine = 0.99
)

// embedParityShape is the encoders' test shape: small, but every part of
// the block (several heads, layers and feed-forward units) is there.
var embedParityShape = modelgen.Shape{Dim: 64, HiddenDim: 256, Layers: 3, Heads: 4, ContextLength: 256}

// readEmbedGolden reads the golden file.
func readEmbedGolden(t testing.TB) embedref.Golden {
	t.Helper()
	g, err := embedref.ParseGolden(readFile(t, embedGoldenPath))
	require.NoError(t, err)
	return g
}

// TestEmbeddingsMatchLlamaCppGolden computes every golden case's
// embeddings and scores with the engine and holds them to llama.cpp's: the
// same token ids, cosine ≥ minEmbedCosine and lengths within 0.1% (both
// unnormalised), scores within maxScoreDiff.
func TestEmbeddingsMatchLlamaCppGolden(t *testing.T) {
	for _, c := range readEmbedGolden(t).Cases {
		t.Run(c.Name, func(t *testing.T) {
			data, err := c.Model()
			require.NoError(t, err)
			m, err := LoadGGUF(data)
			require.NoError(t, err)
			checkEmbedCase(t, m, c)
		})
	}
}

// checkEmbedCase holds m's embeddings and scores of c's inputs to c's.
func checkEmbedCase(t *testing.T, m *Model, c embedref.GoldenCase) {
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	ctx := context.Background()
	if len(c.Texts) > 0 {
		got, err := s.Embed(ctx, c.Texts, EmbedOptions{Raw: true})
		require.NoError(t, err)
		worst := 1.0
		for i, e := range got {
			ids, err := m.Tokenizer().Encode(c.Texts[i], encodeSpecial)
			require.NoError(t, err)
			assert.Equal(t, c.Tokens[i], ids, "text %d %q: llama.cpp's ids", i, c.Texts[i])
			cos := testmodel.Cosine(e.Vector, c.Vectors[i])
			worst = min(worst, cos)
			assert.GreaterOrEqual(t, cos, minEmbedCosine, "text %d %q", i, c.Texts[i])
			assert.InEpsilon(t, norm(c.Vectors[i]), norm(e.Vector), 1e-3, "text %d: length", i)
		}
		spread := -1.0 // how alike the model finds different texts
		for i := range c.Vectors {
			for j := range i {
				spread = max(spread, testmodel.Cosine(c.Vectors[i], c.Vectors[j]))
			}
		}
		t.Logf("%d texts: worst cosine with llama.cpp 1 - %.2g; different texts' cosine at most %.3f", len(got), 1-worst, spread)
		if c.Spec != nil { // random weights, whose spread the parity test chose
			assert.Less(t, spread, maxTextsCosine, "different texts must have different vectors")
		}
	}
	if len(c.Documents) > 0 {
		got, err := s.Rerank(ctx, c.Query, c.Documents, EmbedOptions{})
		require.NoError(t, err)
		var worst float64
		for i, sc := range got {
			assert.Equal(t, len(c.PairTexts[i]), sc.Tokens, "document %d: pair length", i)
			d := math.Abs(float64(sc.Value - c.Scores[i]))
			worst = max(worst, d)
			assert.LessOrEqual(t, d, float64(c.ScoreTolerance), "document %d: %v, llama.cpp %v", i, sc.Value, c.Scores[i])
		}
		t.Logf("%d documents: worst score difference with llama.cpp %.2g", len(got), worst)
	}
}

// encodeSpecial tokenizes as Embed does: with the vocabulary's special tokens.
var encodeSpecial = tokenizer.EncodeOptions{AddSpecial: true}
