//go:build !js

package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// embeddingList is what the tests read of an embeddings response, from the
// server or through the openai client (openai_embeddings_client.mjs).
type embeddingList struct {
	Model  string `json:"model"`
	Object string `json:"object"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
	Data []struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	// Wire is what the client's request asked for and what JSON type the
	// server's embeddings were (through the openai client only).
	Wire struct {
		EncodingFormat *string `json:"encoding_format"`
		EmbeddingType  string  `json:"embedding_type"`
	} `json:"wire"`
}

// embeddingsAttempt is one call of the openai client: what it returned, or
// the error it threw.
type embeddingsAttempt struct {
	OK    *embeddingList `json:"ok"`
	Error *clientError   `json:"error"`
}

// embeddingsClientResult is what openai_embeddings_client.mjs prints.
type embeddingsClientResult struct {
	Base64     embeddingsAttempt `json:"base64"`
	Float      embeddingsAttempt `json:"float"`
	One        embeddingsAttempt `json:"one"`
	Dimensions embeddingsAttempt `json:"dimensions"`
	Empty      embeddingsAttempt `json:"empty"`
	Rerank     struct {
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	} `json:"rerank"`
}

// runEmbeddingsClient runs openai_embeddings_client.mjs against base (a
// server's root): the texts embedded, then reranked for query.
func runEmbeddingsClient(t *testing.T, base, query string, texts ...string) embeddingsClientResult {
	t.Helper()
	var r embeddingsClientResult
	runOpenAIScript(t, &r, "openai_embeddings_client.mjs", append([]string{base + "/v1", query}, texts...)...)
	return r
}

// postEmbeddings posts an embeddings request to base (a server's root)
// and decodes the answer, which must be 200.
func postEmbeddings(t testing.TB, base, body string) embeddingList {
	t.Helper()
	var l embeddingList
	postOK(t, base+"/v1/embeddings", body, &l)
	return l
}

// embeddingTexts are what the embeddings tests embed.
var embeddingTexts = []string{"Once upon a time", "The little dog ran to the park.", "Lily liked the sun"}

// rerankQuery is what the rerank tests rank embeddingTexts for.
const rerankQuery = "Where is the dog?"

// checkClientEmbeddings: the unmodified openai client got, from the
// server, the embeddings the native handler computes, bit for bit —
// through base64 (its default, which it decodes) and as JSON floats — and
// the server's errors as its BadRequestErrors.
func checkClientEmbeddings(t *testing.T, r embeddingsClientResult, nativeURL, model string) {
	t.Helper()
	native := postEmbeddings(t, nativeURL, jsonString(t, map[string]any{"input": embeddingTexts}))
	require.Len(t, native.Data, len(embeddingTexts))
	for name, a := range map[string]embeddingsAttempt{"base64": r.Base64, "float": r.Float} {
		require.Nil(t, a.Error, name)
		got := a.OK
		assert.Equal(t, model, got.Model, name)
		assert.Equal(t, "list", got.Object, name)
		assert.Equal(t, native.Usage, got.Usage, name)
		require.Len(t, got.Data, len(native.Data), name)
		for i, d := range got.Data {
			assert.Equal(t, "embedding", d.Object)
			assert.Equal(t, i, d.Index)
			assert.Equal(t, native.Data[i].Embedding, d.Embedding, "%s: text %d", name, i)
		}
	}
	assert.Equal(t, "base64", deref(r.Base64.OK.Wire.EncodingFormat), "the client asks for base64 by default")
	assert.Equal(t, "string", r.Base64.OK.Wire.EmbeddingType, "and gets base64 strings, which it decodes")
	assert.Equal(t, "float", deref(r.Float.OK.Wire.EncodingFormat))
	assert.Equal(t, "object", r.Float.OK.Wire.EmbeddingType, "arrays of numbers")
	require.NotNil(t, r.One.OK, "%v", r.One.Error)
	require.Len(t, r.One.OK.Data, 1)
	assert.Equal(t, native.Data[0].Embedding, r.One.OK.Data[0].Embedding, "one text alone")

	require.NotNil(t, r.Dimensions.Error)
	assert.Equal(t, "BadRequestError", r.Dimensions.Error.Name)
	assert.Equal(t, "dimensions", deref(r.Dimensions.Error.Param))
	require.NotNil(t, r.Empty.Error)
	assert.Equal(t, http.StatusBadRequest, r.Empty.Error.Status)
	assert.Equal(t, "input", deref(r.Empty.Error.Param))
}

// checkNotSupported checks a 400 model_not_supported whose message says
// what the model does.
func checkNotSupported(t *testing.T, status int, body []byte, does string) {
	t.Helper()
	assert.Equal(t, http.StatusBadRequest, status, "%s", body)
	e := openAIError(t, body)
	assert.Equal(t, "model_not_supported", deref(e.Code))
	assert.Equal(t, "model", deref(e.Param))
	assert.Contains(t, e.Message, does)
}

// httpapi/README.md's curl examples, which the tests run against the server in
// place of http://127.0.0.1:8080.
const (
	embeddingsCurl = `curl http://127.0.0.1:8080/v1/embeddings -H 'Content-Type: application/json' -d '{
  "model": "stories260K", "input": ["Once upon a time", "The little dog ran to the park."]
}'`
	rerankCurl = `curl http://127.0.0.1:8080/v1/rerank -H 'Content-Type: application/json' -d '{
  "query": "Where is the dog?", "documents": ["The cat sleeps.", "The dog is in the park."], "top_n": 1
}'`
)

// runCurlExample runs a curl example of httpapi/README.md, curl URL -H '...' -d '...',
// against base; it returns what curl printed and the request's body.
func runCurlExample(t *testing.T, example, base string) (out []byte, body string) {
	t.Helper()
	docHas(t, "httpapi/README.md", example)
	curl := needTool(t, "curl", "Debian package curl")
	rest, ok := strings.CutPrefix(example, "curl http://127.0.0.1:8080")
	require.True(t, ok, example)
	path, rest, ok := strings.Cut(rest, " -H 'Content-Type: application/json' -d '")
	require.True(t, ok, example)
	body = strings.TrimSuffix(rest, "'")
	out, err := exec.Command(curl, "-s", base+path, "-H", "Content-Type: application/json", "-d", body).Output()
	require.NoError(t, err)
	return out, body
}

// checkEmbeddingsCurl runs httpapi/README.md's curl example of embeddings against
// base: the native handler's vectors, 64 values each.
func checkEmbeddingsCurl(t *testing.T, base, nativeURL string) {
	t.Helper()
	out, body := runCurlExample(t, embeddingsCurl, base)
	var got embeddingList
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	native := postEmbeddings(t, nativeURL, body)
	require.Len(t, got.Data, 2, "%s", out)
	for i, d := range got.Data {
		assert.Len(t, d.Embedding, 64)
		assert.Equal(t, native.Data[i].Embedding, d.Embedding)
	}
	assert.Equal(t, native.Usage, got.Usage)
}

// checkDefaultModelEmbeddings checks the server at base, which serves the
// default model, against the native handler: the openai client's
// embeddings, the curl example, and a rerank refused (the default model
// does not rerank).
func checkDefaultModelEmbeddings(t *testing.T, base string) {
	native := nativeServer(t).URL
	r := runEmbeddingsClient(t, base, rerankQuery, embeddingTexts...)
	checkClientEmbeddings(t, r, native, "stories260K")
	checkNotSupported(t, r.Rerank.Status, r.Rerank.Body, "embeds text (POST /v1/embeddings)")
	checkEmbeddingsCurl(t, base, native)
}

// TestWorkerEmbeddings: the edge worker's /v1/embeddings through the
// openai client and curl, in workerd.
func TestWorkerEmbeddings(t *testing.T) {
	checkDefaultModelEmbeddings(t, edgeWorker(t).url)
}

// TestHTTPEmbeddingsServe: wasmlm serve's /v1/embeddings through the
// openai client and curl.
func TestHTTPEmbeddingsServe(t *testing.T) {
	checkDefaultModelEmbeddings(t, startServe(t).url)
}

// nativeModelServer serves the model file at path natively, named name, as
// wasmlm serve names it.
func nativeModelServer(t *testing.T, path, name string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	m, err := engine.Load(b, engine.LoadOptions{})
	require.NoError(t, err)
	h, err := httpapi.New(m, httpapi.Options{ModelName: name})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestHTTPServeEncoders: wasmlm serve with an embedding model gives the
// openai client its embeddings and refuses reranking; with a reranker it
// ranks documents (fetch, and httpapi/README.md's curl example) as the native
// handler does, and the openai client's embeddings are refused, saying
// what the model does.
func TestHTTPServeEncoders(t *testing.T) {
	dir := t.TempDir()
	shape := modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, ContextLength: 128}
	write := func(name string, spec modelgen.Spec) string {
		b, err := modelgen.Build(spec)
		require.NoError(t, err)
		path := filepath.Join(dir, name+".gguf")
		require.NoError(t, os.WriteFile(path, b, 0o644))
		return path
	}

	bert := write("tiny-bert", modelgen.Spec{Arch: "bert", Shape: shape, Type: tensor.Q8_0, Seed: 1})
	p := startServe(t, "-m", bert)
	r := runEmbeddingsClient(t, p.url, rerankQuery, embeddingTexts...)
	checkClientEmbeddings(t, r, nativeModelServer(t, bert, "tiny-bert"), "tiny-bert")
	checkNotSupported(t, r.Rerank.Status, r.Rerank.Body, "it embeds text (POST /v1/embeddings)")

	reranker := write("tiny-reranker", modelgen.Spec{Arch: "bert", Shape: shape, Type: tensor.Q8_0, Pooling: "rank", Seed: 2})
	p = startServe(t, "-m", reranker)
	native := nativeModelServer(t, reranker, "tiny-reranker")
	r = runEmbeddingsClient(t, p.url, rerankQuery, embeddingTexts...)
	require.NotNil(t, r.Base64.Error)
	assert.Equal(t, "BadRequestError", r.Base64.Error.Name)
	assert.Equal(t, "model_not_supported", deref(r.Base64.Error.Code))
	assert.Contains(t, r.Base64.Error.Message, "it ranks documents for a query (POST /v1/rerank)")
	require.Equal(t, http.StatusOK, r.Rerank.Status, "%s", r.Rerank.Body)
	var want json.RawMessage
	postOK(t, native+"/v1/rerank", jsonString(t, map[string]any{"model": "any-model-name", "query": rerankQuery,
		"documents": embeddingTexts, "top_n": 2, "return_documents": true}), &want)
	assert.JSONEq(t, string(want), string(r.Rerank.Body), "the native handler's ranking")

	out, body := runCurlExample(t, rerankCurl, p.url)
	postOK(t, native+"/v1/rerank", body, &want)
	assert.JSONEq(t, string(want), string(out))
	var ranked struct {
		Results []struct {
			Index int `json:"index"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(out, &ranked))
	assert.Len(t, ranked.Results, 1, "top_n 1")
}
