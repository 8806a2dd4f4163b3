package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
)

// embeddingsResponse is what a test reads from POST /v1/embeddings.
type embeddingsResponse struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
		Truncated bool            `json:"truncated"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// vectors decodes the embeddings, float arrays or base64 strings alike.
func (r embeddingsResponse) vectors(t testing.TB) [][]float32 {
	t.Helper()
	out := make([][]float32, len(r.Data))
	for i, d := range r.Data {
		require.Equal(t, "embedding", d.Object)
		require.Equal(t, i, d.Index)
		if d.Embedding[0] == '"' {
			var s string
			require.NoError(t, json.Unmarshal(d.Embedding, &s))
			b, err := base64.StdEncoding.DecodeString(s)
			require.NoError(t, err)
			require.Zero(t, len(b)%4)
			for k := 0; k < len(b); k += 4 {
				out[i] = append(out[i], math.Float32frombits(binary.LittleEndian.Uint32(b[k:])))
			}
			continue
		}
		require.NoError(t, json.Unmarshal(d.Embedding, &out[i]))
	}
	return out
}

func decodeEmbeddings(t testing.TB, w *httptest.ResponseRecorder) embeddingsResponse {
	t.Helper()
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, "application/json", w.Header().Get("Content-Type"))
	var r embeddingsResponse
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &r))
	assert.Equal(t, "list", r.Object)
	return r
}

// engineEmbed is the engine's own answer for texts, from a session of
// the handler's model.
func engineEmbed(t testing.TB, h *Handler, texts []string, opts engine.EmbedOptions) []engine.Embedding {
	t.Helper()
	s, err := h.model.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	embs, err := s.Embed(context.Background(), texts, opts)
	require.NoError(t, err)
	return embs
}

// TestEmbeddingsAreTheEngines: every shape of request returns the engine's
// vectors bit for bit — floats in JSON, float32 bytes in base64 — in
// order, with the tokens it evaluated as usage; normalize: false is the
// engine's Raw, truncate its Truncate.
func TestEmbeddingsAreTheEngines(t *testing.T) {
	done := make(completions, 16)
	h := newHandler(t, Options{OnCompletion: done.report})
	texts := []string{"Once upon a time", "The little dog ran to the park.", "Lily"}
	long := strings.Repeat("Once upon a time there was ", 100) // about 600 tokens: more than the context
	for _, c := range []struct {
		name string
		body map[string]any
		want []string
		opts engine.EmbedOptions
	}{
		{"a string", map[string]any{"model": "anything", "input": texts[0]}, texts[:1], engine.EmbedOptions{}},
		{"a list", map[string]any{"input": texts}, texts, engine.EmbedOptions{}},
		{"base64", map[string]any{"input": texts, "encoding_format": "base64"}, texts, engine.EmbedOptions{}},
		{"float", map[string]any{"input": texts, "encoding_format": "float", "dimensions": 64, "user": "u1"}, texts, engine.EmbedOptions{}},
		{"raw", map[string]any{"input": texts, "normalize": false}, texts, engine.EmbedOptions{Raw: true}},
		{"raw base64", map[string]any{"input": texts, "normalize": false, "encoding_format": "base64"}, texts, engine.EmbedOptions{Raw: true}},
		{"truncated", map[string]any{"input": []string{long, texts[1]}, "truncate": true}, []string{long, texts[1]}, engine.EmbedOptions{Truncate: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := decodeEmbeddings(t, do(h, "POST", "/v1/embeddings", mustJSON(t, c.body)))
			assert.Equal(t, "stories260K", r.Model, "the loaded model's name, whatever was asked")
			want := engineEmbed(t, h, c.want, c.opts)
			got := r.vectors(t)
			require.Len(t, got, len(want))
			tokens := 0
			for i, e := range want {
				assert.Equal(t, e.Vector, got[i], "text %d", i)
				assert.Len(t, got[i], h.model.EmbeddingLength())
				assert.Equal(t, e.Truncated, r.Data[i].Truncated, "text %d", i)
				tokens += e.Tokens
				var norm float64
				for _, x := range got[i] {
					norm += float64(x) * float64(x)
				}
				if !c.opts.Raw {
					assert.InDelta(t, 1, norm, 1e-5, "text %d has unit length", i)
				} else {
					assert.Greater(t, math.Abs(norm-1), 1e-3, "text %d is not normalized", i)
				}
			}
			assert.Equal(t, tokens, r.Usage.PromptTokens)
			assert.Equal(t, tokens, r.Usage.TotalTokens)
			if c.opts.Truncate {
				assert.True(t, r.Data[0].Truncated)
				assert.Equal(t, h.ContextLength(), want[0].Tokens, "cut to the context")
			}
			report := done.next(t)
			assert.Equal(t, "/v1/embeddings", report.Endpoint)
			assert.Equal(t, len(c.want), report.Inputs)
			assert.Equal(t, tokens, report.PromptTokens)
			assert.NoError(t, report.Err)
			assert.Equal(t, engine.FinishStop, report.FinishReason)
		})
	}
	// Escapes are read as JSON reads them: a surrogate pair is one
	// character.
	r := decodeEmbeddings(t, do(h, "POST", "/v1/embeddings", `{"input": "caf\u00e9 \ud83d\ude00 \"\\u\""}`))
	assert.Equal(t, engineEmbed(t, h, []string{"café 😀 \"\\u\""}, engine.EmbedOptions{})[0].Vector, r.vectors(t)[0])
}

// TestEmbeddingsBadRequests: each mistake is a 400 naming its field,
// refused before the request waits for a slot; the server still answers.
func TestEmbeddingsBadRequests(t *testing.T) {
	h := newHandler(t, Options{})
	many := make([]string, engine.MaxEmbedInputs+1)
	for i := range many {
		many[i] = "x"
	}
	long := strings.Repeat("Once upon a time there was ", 100)
	for _, c := range []struct {
		name, body, param, code, message string
	}{
		{"no input", `{"model": "m"}`, "input", "missing_required_parameter", "input is required"},
		{"null input", `{"input": null}`, "input", "missing_required_parameter", "input is required"},
		{"an empty string", `{"input": ""}`, "input", "invalid_value", "input must not be an empty string"},
		{"an empty string in a list", `{"input": ["a", ""]}`, "input[1]", "invalid_value", "input[1] must not be an empty string"},
		{"an empty list", `{"input": []}`, "input", "invalid_value", "input must not be an empty array"},
		{"too many", mustJSON(t, map[string]any{"input": many}), "input", "invalid_value", "input must have at most 2048 elements"},
		{"a number among strings", `{"input": ["a", 3]}`, "input[1]", "invalid_type", "input[1] must be a string, got a number"},
		{"an object among strings", `{"input": ["a", {"text": "b"}]}`, "input[1]", "invalid_type", "input[1] must be a string, got an object"},
		{"null among strings", `{"input": ["a", null]}`, "input[1]", "invalid_type", "input[1] must be a string, got null"},
		{"token ids", `{"input": [1, 2, 3]}`, "input", "invalid_type", "token ids (OpenAI's arrays of numbers) are not taken here; send the text"},
		{"lists of token ids", `{"input": [[1, 2], [3]]}`, "input", "invalid_type", "are not taken here; send the text"},
		{"an object", `{"input": {"text": "a"}}`, "input", "invalid_type", "input must be a string or an array of strings, got an object"},
		{"a number", `{"input": 7}`, "input", "invalid_type", "got a number"},
		{"a lone high surrogate", `{"input": "a\ud800b"}`, "input", "invalid_value", "input is not valid UTF-8"},
		{"a lone low surrogate", `{"input": ["ok", "\udc00"]}`, "input[1]", "invalid_value", "input[1] is not valid UTF-8"},
		{"a high surrogate at the end", `{"input": "a\uD83D"}`, "input", "invalid_value", "not valid UTF-8"},
		{"two high surrogates", `{"input": "\ud83d\ud83d"}`, "input", "invalid_value", "not valid UTF-8"},
		{"bytes that are not UTF-8", "{\"input\": \"a\xffb\"}", "input", "invalid_value", "input is not valid UTF-8"},
		{"too long for the context", mustJSON(t, map[string]any{"input": long}), "input", "context_length_exceeded", "and input is 602 tokens with its special tokens"},
		{"too long in a list", mustJSON(t, map[string]any{"input": []string{"a", long}}), "input[1]", "context_length_exceeded", "and input[1] is 602 tokens"},
		{"far too long to tokenize", mustJSON(t, map[string]any{"input": strings.Repeat("x", 1<<16)}), "input", "context_length_exceeded", "input is at least"},
		{"an unknown encoding", `{"input": "a", "encoding_format": "hex"}`, "encoding_format", "invalid_value", `encoding_format must be "float" or "base64", got "hex"`},
		{"an encoding of the wrong type", `{"input": "a", "encoding_format": 1}`, "encoding_format", "invalid_type", "encoding_format must be a string, got a number"},
		{"other dimensions", `{"input": "a", "dimensions": 32}`, "dimensions", "invalid_value", "this model's embeddings have 64 values"},
		{"dimensions of the wrong type", `{"input": "a", "dimensions": "64"}`, "dimensions", "invalid_type", "dimensions must be an integer"},
		{"truncate of the wrong type", `{"input": "a", "truncate": "yes"}`, "truncate", "invalid_type", "truncate must be a boolean"},
		{"normalize of the wrong type", `{"input": "a", "normalize": 0}`, "normalize", "invalid_type", "normalize must be a boolean"},
		{"a user that is not a string", `{"input": "a", "user": 5}`, "user", "invalid_type", "user must be a string"},
		{"not JSON", `{"input": "a"`, "", "invalid_json", "not valid JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			badRequestFor(t, do(h, "POST", "/v1/embeddings", c.body), c.param, c.code, c.message)
		})
	}
	decodeEmbeddings(t, do(h, "POST", "/v1/embeddings", `{"input": "still here"}`))
}

// badRequestFor checks a 400 invalid_request_error about param, with
// code, whose message says message.
func badRequestFor(t *testing.T, w *httptest.ResponseRecorder, param, code, message string) {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
	e := apiErrorOf(t, w.Body.Bytes())
	assert.Equal(t, "invalid_request_error", e.Type)
	assert.Equal(t, param, deref(e.Param))
	assert.Equal(t, code, deref(e.Code))
	assert.Contains(t, e.Message, message)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestRerankBadRequests: llama.cpp's rerank request, checked field by field
// before the model is asked; a well-formed request to a model that does
// not rerank (the default model) is a 400 saying what it does instead, on
// each of llama.cpp's paths.
func TestRerankBadRequests(t *testing.T) {
	h := newHandler(t, Options{})
	many := make([]string, engine.MaxEmbedInputs+1)
	long := strings.Repeat("Once upon a time there was ", 100)
	for _, c := range []struct {
		name, body, param, code, message string
	}{
		{"no query", `{"documents": ["a"]}`, "query", "missing_required_parameter", "query is required"},
		{"a query that is not a string", `{"query": ["a"], "documents": ["a"]}`, "query", "invalid_type", "query must be a string, got an array"},
		{"a query that is not UTF-8", `{"query": "\udfff", "documents": ["a"]}`, "query", "invalid_value", "query is not valid UTF-8"},
		{"a query that fills the context", mustJSON(t, map[string]any{"query": long, "documents": []string{"a"}}), "query", "context_length_exceeded", "the query is"},
		{"no documents", `{"query": "q"}`, "documents", "missing_required_parameter", "documents is required"},
		{"no documents at all", `{"query": "q", "documents": []}`, "documents", "invalid_value", "documents must not be an empty array"},
		{"one document alone", `{"query": "q", "documents": "a"}`, "documents", "invalid_type", "documents must be an array of strings, got a string"},
		{"numbers", `{"query": "q", "documents": [1, 2, 3]}`, "documents[0]", "invalid_type", "documents[0] must be a string, got a number"},
		{"Cohere's objects", `{"query": "q", "documents": [{"text": "a"}]}`, "documents[0]", "invalid_type", "documents[0] must be a string, got an object"},
		{"too many", mustJSON(t, map[string]any{"query": "q", "documents": many}), "documents", "invalid_value", "at most 2048"},
		{"a document not UTF-8", `{"query": "q", "documents": ["a", "\ud800"]}`, "documents[1]", "invalid_value", "documents[1] is not valid UTF-8"},
		{"a document far too long", mustJSON(t, map[string]any{"query": "q", "documents": []string{strings.Repeat("x", 1<<16)}}), "documents[0]", "context_length_exceeded", "documents[0] is at least"},
		{"top_n 0", `{"query": "q", "documents": ["a"], "top_n": 0}`, "top_n", "invalid_value", "top_n = 0, must be >= 1"},
		{"top_n negative", `{"query": "q", "documents": ["a"], "top_n": -3}`, "top_n", "invalid_value", "top_n = -3"},
		{"top_n not a number", `{"query": "q", "documents": ["a"], "top_n": "all"}`, "top_n", "invalid_type", "top_n must be an integer"},
		{"return_documents not a boolean", `{"query": "q", "documents": ["a"], "return_documents": 1}`, "return_documents", "invalid_type", "must be a boolean"},
		{"not a reranker", `{"query": "q", "documents": ["a", "b"], "top_n": 99}`, "model", "model_not_supported",
			"The model stories260K cannot rank documents (a reranker, a BERT cross-encoder such as ms-marco-MiniLM, does): it generates text (POST /v1/chat/completions, /v1/completions) and embeds text (POST /v1/embeddings)."},
	} {
		for _, path := range rerankPaths {
			t.Run(c.name+path, func(t *testing.T) {
				badRequestFor(t, do(h, "POST", path, c.body), c.param, c.code, c.message)
			})
		}
	}
	w := do(h, "GET", "/v1/rerank", "")
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
	assert.Equal(t, "POST, OPTIONS", w.Header().Get("Allow"))
}

// TestModelsSayWhatTheModelDoes: /v1/models lists the capabilities, the
// embedding length and the pooling beside the fields it had.
func TestModelsSayWhatTheModelDoes(t *testing.T) {
	h := newHandler(t, Options{})
	w := do(h, "GET", "/v1/models/stories260K", "")
	require.Equal(t, http.StatusOK, w.Code)
	var m struct {
		Meta map[string]any `json:"meta"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &m))
	assert.Equal(t, []any{"completion", "embedding"}, m.Meta["capabilities"])
	assert.EqualValues(t, 64, m.Meta["embedding_length"])
	assert.Equal(t, "mean", m.Meta["pooling"])
	assert.EqualValues(t, 512, m.Meta["context_length"], "the fields it had stay")
}

// TestEmbeddingsShareTheSlots: embedding requests and completions at once,
// more than the slots, all answered, each embedding the engine's.
func TestEmbeddingsShareTheSlots(t *testing.T) {
	h := newHandler(t, Options{Slots: 2})
	srv := httptest.NewServer(h)
	defer srv.Close()
	texts := []string{"Once upon a time", "The little dog ran to the park."}
	want := engineEmbed(t, h, texts, engine.EmbedOptions{})
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%3 == 2 {
				resp := post(t, srv, "/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 20}`)
				defer resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				return
			}
			resp := post(t, srv, "/v1/embeddings", mustJSON(t, map[string]any{"input": texts, "encoding_format": "base64"}))
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if !assert.NoError(t, err) || !assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", b) {
				return
			}
			w := httptest.NewRecorder()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
			got := decodeEmbeddings(t, w).vectors(t)
			for k := range want {
				assert.Equal(t, want[k].Vector, got[k])
			}
		}()
	}
	wg.Wait()
}
