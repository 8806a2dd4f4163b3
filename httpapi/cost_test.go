package httpapi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// hugeEmbedding is the request that held a slot for minutes: 2,048 texts
// of about 400 bytes, some 400,000 tokens in a body under 1 MiB.
func hugeEmbedding(t testing.TB) string {
	text := strings.Repeat("Once upon a time there was a little girl named Lily. ", 8)[:400]
	in := make([]string, engine.MaxEmbedInputs)
	for i := range in {
		in[i] = text
	}
	body := mustJSON(t, map[string]any{"input": in})
	require.Less(t, len(body), DefaultMaxBodyBytes)
	return body
}

// TestEmbedTokenCap: an embeddings or rerank request is counted before it
// waits for a slot — exactly the tokens the engine then reports as usage —
// and one beyond Options.MaxEmbedTokens (by default DefaultMaxEmbedTokens)
// is a 400 naming the texts' field, with the count and the cap; a negative
// cap is none, and a text truncate cuts counts as cut.
func TestEmbedTokenCap(t *testing.T) {
	texts := []string{"Once upon a time there was a little girl", "named Lily. She loved to play outside in the sun."}
	usage := decodeEmbeddings(t, do(newHandler(t, Options{}), "POST", "/v1/embeddings", mustJSON(t, map[string]any{"input": texts}))).Usage.PromptTokens
	long := strings.Repeat("Once upon a time there was ", 100) // 602 tokens: cut to the context's 512
	cut := decodeEmbeddings(t, do(newHandler(t, Options{}), "POST", "/v1/embeddings", mustJSON(t, map[string]any{"input": long, "truncate": true}))).Usage.PromptTokens
	require.Equal(t, 512, cut)

	reranker := func(opts Options) *Handler {
		return encoderHandler(t, modelgen.Spec{Arch: "bert", Shape: tinyBert, Type: tensor.Q8_0, Pooling: "rank", Seed: 7}, opts)
	}
	docs := mustJSON(t, map[string]any{"query": "Where is the dog?", "documents": []string{"The cat sleeps.", "The dog is in the park."}})
	w := do(reranker(Options{}), "POST", "/v1/rerank", docs)
	pairs := decodeRerank(t, w.Code, w.Body.Bytes()).Usage.PromptTokens

	for _, c := range []struct {
		name    string
		h       *Handler
		path    string
		body    string
		param   string // "": served
		message string
	}{
		{"at the cap", newHandler(t, Options{MaxEmbedTokens: usage}), "/v1/embeddings", mustJSON(t, map[string]any{"input": texts}), "", ""},
		{"one token beyond", newHandler(t, Options{MaxEmbedTokens: usage - 1}), "/v1/embeddings", mustJSON(t, map[string]any{"input": texts}),
			"input", fmt.Sprintf("Requested %d tokens, max %d tokens per request", usage, usage-1)},
		{"a truncated text counts as cut", newHandler(t, Options{MaxEmbedTokens: 512}), "/v1/embeddings", mustJSON(t, map[string]any{"input": long, "truncate": true}), "", ""},
		{"the huge request, by default", newHandler(t, Options{}), "/v1/embeddings", hugeEmbedding(t),
			"input", "tokens, max 16384 tokens per request: input holds more than this server evaluates in one request"},
		{"a rerank at the cap", reranker(Options{MaxEmbedTokens: pairs}), "/v1/rerank", docs, "", ""},
		{"a rerank beyond", reranker(Options{MaxEmbedTokens: pairs - 1}), "/v1/rerank", docs,
			"documents", fmt.Sprintf("Requested %d tokens, max %d tokens per request: documents holds more", pairs, pairs-1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := do(c.h, "POST", c.path, c.body)
			if c.param == "" {
				assert.Equal(t, 200, w.Code, w.Body.String())
				return
			}
			badRequestFor(t, w, c.param, "max_tokens_per_request", c.message)
		})
	}

	// The huge request's count, in its message, is the engine's.
	w = do(newHandler(t, Options{}), "POST", "/v1/embeddings", hugeEmbedding(t))
	var n int
	_, err := fmt.Sscanf(apiErrorOf(t, w.Body.Bytes()).Message, "Requested %d tokens", &n)
	require.NoError(t, err)
	one := decodeEmbeddings(t, do(newHandler(t, Options{}), "POST", "/v1/embeddings", mustJSON(t, map[string]any{"input": strings.Repeat("Once upon a time there was a little girl named Lily. ", 8)[:400]}))).Usage.PromptTokens
	assert.Equal(t, engine.MaxEmbedInputs*one, n)
	t.Logf("the huge request: %d tokens", n)
}
