//go:build !js

package e2e

import (
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/embedref"
)

// TestBrowserEmbeddingsAsLlamaCpp holds the page's embeddings and rerank
// scores to llama.cpp's: every case of engine/testdata's golden file
// (bert and nomic-bert in F32, F16 and Q8_0, bert rerankers, two decoders;
// llama.cpp's outputs, which engine's TestEmbeddingsAsLlamaCpp checks
// against llama.cpp itself), its model served to the page, embedded
// unnormalised by lm.embeddings.create and ranked by lm.rerank: cosine ≥
// 0.9999 with llama.cpp's vectors, lengths within 0.1%, scores within the
// case's tolerance.
func TestBrowserEmbeddingsAsLlamaCpp(t *testing.T) {
	data, err := os.ReadFile("../../engine/testdata/llamacpp_embeddings.json")
	require.NoError(t, err)
	golden, err := embedref.ParseGolden(data)
	require.NoError(t, err)
	tb := newTab(t, blankPage)
	for _, c := range golden.Cases {
		t.Run(c.Name, func(t *testing.T) {
			model, err := c.Model()
			require.NoError(t, err)
			path, _ := serveFile(t, tb.site, c.Name+".gguf", model)
			got := eval[struct {
				Embeddings *embeddingResponse[[]float64] `json:"embeddings"`
				Ranked     *rerankResponse               `json:"ranked"`
			}](t, tb, apiScript(`
				const lm = await WasmLM.load('`+path+`');
				const texts = `+jsonString(t, c.Texts)+` ?? [], documents = `+jsonString(t, c.Documents)+` ?? [];
				const embeddings = texts.length ? await lm.embeddings.create({ input: texts, normalize: false }) : null;
				const ranked = documents.length ? await lm.rerank({ query: `+jsonString(t, c.Query)+`, documents }) : null;
				lm.unload();
				return { embeddings, ranked };
			`))
			if len(c.Texts) > 0 {
				require.NotNil(t, got.Embeddings)
				require.Len(t, got.Embeddings.Data, len(c.Texts))
				worst := 1.0
				for i, e := range got.Embeddings.Data {
					cos, ratio := compareVectors(c.Vectors[i], e.Embedding)
					worst = min(worst, cos)
					assert.GreaterOrEqual(t, cos, 0.9999, "text %d %q", i, c.Texts[i])
					assert.InDelta(t, 1, ratio, 1e-3, "text %d: length", i)
				}
				t.Logf("%d texts: worst cosine with llama.cpp 1 - %.2g", len(c.Texts), 1-worst)
			}
			if len(c.Documents) > 0 {
				require.NotNil(t, got.Ranked)
				require.Len(t, got.Ranked.Results, len(c.Documents))
				var worst float64
				for _, r := range got.Ranked.Results {
					d := math.Abs(r.RelevanceScore - float64(c.Scores[r.Index]))
					worst = max(worst, d)
					assert.LessOrEqual(t, d, float64(c.ScoreTolerance), "document %d", r.Index)
				}
				t.Logf("%d documents: worst score difference with llama.cpp %.2g", len(c.Documents), worst)
			}
		})
	}
}

// compareVectors is the cosine of llama.cpp's vector want and the page's
// got, and the ratio of their lengths.
func compareVectors(want []float32, got []float64) (cos, ratio float64) {
	var wg, ww, gg float64
	for i := range want {
		w := float64(want[i])
		wg += w * got[i]
		ww += w * w
		gg += got[i] * got[i]
	}
	return wg / math.Sqrt(ww*gg), math.Sqrt(gg / ww)
}
