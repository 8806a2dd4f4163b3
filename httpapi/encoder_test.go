package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// tinyBert is the shape of the encoders these tests serve: BERT's
// vocabulary, a context of 64 tokens (short enough to overflow).
var tinyBert = modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, ContextLength: 64}

// encoderHandler serves a random-weight model of spec, named "tiny".
func encoderHandler(t testing.TB, spec modelgen.Spec, opts Options) *Handler {
	t.Helper()
	data, err := modelgen.Build(spec)
	require.NoError(t, err)
	m, err := engine.Load(data, engine.LoadOptions{})
	require.NoError(t, err)
	opts.ModelName = "tiny"
	h, err := New(m, opts)
	require.NoError(t, err)
	return h
}

// modelMeta is /v1/models' meta of h's model.
func modelMetaOf(t *testing.T, h *Handler) map[string]any {
	t.Helper()
	w := do(h, "GET", "/v1/models/tiny", "")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var m struct {
		Meta map[string]any `json:"meta"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &m))
	return m.Meta
}

// completionsRefused checks that both completion endpoints refuse h's
// model, saying what it does instead.
func completionsRefused(t *testing.T, h *Handler, does string) {
	t.Helper()
	for path, body := range map[string]string{
		"/v1/completions":      `{"prompt": "Once upon a time"}`,
		"/v1/chat/completions": `{"messages": [{"role": "user", "content": "hi"}]}`,
	} {
		badRequestFor(t, do(h, "POST", path, body), "model", "model_not_supported", "The model tiny cannot generate text: it "+does+".")
	}
}

// TestEncoderEmbeddings: an embedding model (bert, nomic-bert) serves the
// engine's vectors; says what it does in /v1/models; refuses completions
// and reranking, saying it embeds; refuses a text longer than its context
// unless asked to truncate it.
func TestEncoderEmbeddings(t *testing.T) {
	for _, spec := range []modelgen.Spec{
		{Arch: "bert", Shape: tinyBert, Type: tensor.F32, Seed: 1},
		{Arch: "bert", Shape: tinyBert, Type: tensor.F16, Pooling: "cls", Seed: 2},
		{Arch: "nomic-bert", Shape: tinyBert, Type: tensor.Q8_0, Seed: 3},
	} {
		t.Run(spec.Arch+"/"+spec.Type.String(), func(t *testing.T) {
			h := encoderHandler(t, spec, Options{Slots: 2})
			meta := modelMetaOf(t, h)
			assert.Equal(t, []any{"embedding"}, meta["capabilities"])
			assert.EqualValues(t, 64, meta["embedding_length"])
			assert.Equal(t, map[string]string{"": "mean", "cls": "cls"}[spec.Pooling], meta["pooling"])
			assert.EqualValues(t, 64, meta["context_length"])

			texts := []string{"A cat sat on the mat.", "A kitten slept on the rug.", "Stocks fell sharply today."}
			for _, format := range []string{"float", "base64"} {
				r := decodeEmbeddings(t, do(h, "POST", "/v1/embeddings", mustJSON(t, map[string]any{"input": texts, "encoding_format": format})))
				want := engineEmbed(t, h, texts, engine.EmbedOptions{})
				got := r.vectors(t)
				tokens := 0
				for i := range want {
					assert.Equal(t, want[i].Vector, got[i], "%s: text %d", format, i)
					tokens += want[i].Tokens
				}
				assert.Equal(t, tokens, r.Usage.PromptTokens, "[CLS] and [SEP] counted")
			}

			completionsRefused(t, h, "embeds text (POST /v1/embeddings)")
			badRequestFor(t, do(h, "POST", "/v1/rerank", `{"query": "q", "documents": ["d"]}`), "model", "model_not_supported",
				"The model tiny cannot rank documents (a reranker, a BERT cross-encoder such as ms-marco-MiniLM, does): it embeds text (POST /v1/embeddings).")

			long := strings.Repeat("the cat sat on the mat ", 20) // 120 words: more than 64 tokens
			badRequestFor(t, do(h, "POST", "/v1/embeddings", mustJSON(t, map[string]any{"input": []string{"a", long}})),
				"input[1]", "context_length_exceeded", "input[1] is")
			r := decodeEmbeddings(t, do(h, "POST", "/v1/embeddings", mustJSON(t, map[string]any{"input": []string{"a", long}, "truncate": true})))
			want := engineEmbed(t, h, []string{"a", long}, engine.EmbedOptions{Truncate: true})
			assert.False(t, r.Data[0].Truncated)
			assert.True(t, r.Data[1].Truncated)
			assert.Equal(t, want[1].Vector, r.vectors(t)[1])
			assert.Equal(t, 64, want[1].Tokens, "cut to the context")
		})
	}
}

// rerankResults is what a test reads of a rerank response.
type rerankResults struct {
	Model   string `json:"model"`
	Object  string `json:"object"`
	Usage   embeddingUsage
	Results []struct {
		Index          int     `json:"index"`
		RelevanceScore float32 `json:"relevance_score"`
		Document       *struct {
			Text string `json:"text"`
		} `json:"document"`
	} `json:"results"`
}

func decodeRerank(t *testing.T, code int, body []byte) rerankResults {
	t.Helper()
	require.Equal(t, http.StatusOK, code, "%s", body)
	var r rerankResults
	require.NoError(t, json.Unmarshal(body, &r), "%s", body)
	assert.Equal(t, "list", r.Object)
	assert.Equal(t, "tiny", r.Model)
	return r
}

// TestReranker: a reranker scores the documents as the engine does,
// returned best first (equal scores in the documents' order), top_n of
// them, with their texts when asked, on each of llama.cpp's paths; it
// refuses embeddings and completions, saying it ranks; a document too long
// for the context is refused unless truncated.
func TestReranker(t *testing.T) {
	h := encoderHandler(t, modelgen.Spec{Arch: "bert", Shape: tinyBert, Type: tensor.Q8_0, Pooling: "rank", Seed: 7}, Options{Slots: 2})
	assert.Equal(t, []any{"rerank"}, modelMetaOf(t, h)["capabilities"])
	assert.Equal(t, "rank", modelMetaOf(t, h)["pooling"])

	query := "Where is the dog?"
	docs := []string{"The cat sleeps.", "The dog is in the park.", "Stocks fell sharply today.", "The cat sleeps.", "A dog barks."}
	s, err := h.model.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	scores, err := s.Rerank(context.Background(), query, docs, engine.EmbedOptions{})
	require.NoError(t, err)
	order := []int{0, 1, 2, 3, 4}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case scores[a].Value > scores[b].Value:
			return -1
		case scores[a].Value < scores[b].Value:
			return 1
		}
		return 0
	})
	tokens := 0
	for _, sc := range scores {
		tokens += sc.Tokens
	}
	require.Equal(t, scores[0].Value, scores[3].Value, "the same document, the same score")
	assert.Less(t, slices.Index(order, 0), slices.Index(order, 3), "a tie in the documents' order")

	for _, path := range rerankPaths {
		w := do(h, "POST", path, mustJSON(t, map[string]any{"model": "x", "query": query, "documents": docs}))
		r := decodeRerank(t, w.Code, w.Body.Bytes())
		require.Len(t, r.Results, len(docs), path)
		for k, res := range r.Results {
			assert.Equal(t, order[k], res.Index, "%s: place %d", path, k)
			assert.Equal(t, scores[res.Index].Value, res.RelevanceScore)
			assert.Nil(t, res.Document, "no document unless asked")
		}
		assert.Equal(t, embeddingUsage{PromptTokens: tokens, TotalTokens: tokens}, r.Usage)
	}
	w := do(h, "POST", "/v1/rerank", mustJSON(t, map[string]any{"query": query, "documents": docs, "top_n": 2, "return_documents": true}))
	r := decodeRerank(t, w.Code, w.Body.Bytes())
	require.Len(t, r.Results, 2)
	for k, res := range r.Results {
		assert.Equal(t, order[k], res.Index)
		require.NotNil(t, res.Document)
		assert.Equal(t, docs[res.Index], res.Document.Text)
	}
	assert.Equal(t, tokens, r.Usage.PromptTokens, "every document was scored")

	completionsRefused(t, h, "ranks documents for a query (POST /v1/rerank)")
	badRequestFor(t, do(h, "POST", "/v1/embeddings", `{"input": "a"}`), "model", "model_not_supported",
		"The model tiny cannot embed text: it ranks documents for a query (POST /v1/rerank).")

	long := strings.Repeat("the dog ran in the park ", 20)
	badRequestFor(t, do(h, "POST", "/v1/rerank", mustJSON(t, map[string]any{"query": query, "documents": []string{"a", long}})),
		"documents", "context_length_exceeded", "documents[1] with the query takes")
	w = do(h, "POST", "/v1/rerank", mustJSON(t, map[string]any{"query": query, "documents": []string{"a", long}, "truncate": true}))
	cut, err := s.Rerank(context.Background(), query, []string{"a", long}, engine.EmbedOptions{Truncate: true})
	require.NoError(t, err)
	r = decodeRerank(t, w.Code, w.Body.Bytes())
	for _, res := range r.Results {
		assert.Equal(t, cut[res.Index].Value, res.RelevanceScore)
	}
	assert.Equal(t, 64, cut[1].Tokens, "the document cut to fit with the query")
	badRequestFor(t, do(h, "POST", "/v1/rerank", mustJSON(t, map[string]any{"query": long + long + long, "documents": []string{"a"}, "truncate": true})),
		"query", "context_length_exceeded", "the query is")

	// Requests at once, more than the slots: each gets the engine's scores.
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := do(h, "POST", "/v1/rerank", mustJSON(t, map[string]any{"query": query, "documents": docs}))
			if assert.Equal(t, http.StatusOK, w.Code, w.Body.String()) {
				r := decodeRerank(t, w.Code, w.Body.Bytes())
				for _, res := range r.Results {
					assert.Equal(t, scores[res.Index].Value, res.RelevanceScore)
				}
			}
		}()
	}
	wg.Wait()
}
