//go:build !js

package e2e

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// embeddingsClientResult is what openai_embeddings_client.mjs prints.
type embeddingsClientResult struct {
	Base64     embeddingList `json:"base64"`
	Float      embeddingList `json:"float"`
	One        embeddingList `json:"one"`
	Dimensions struct {
		Error *clientError `json:"error"`
	} `json:"dimensions"`
	Empty struct {
		Error *clientError `json:"error"`
	} `json:"empty"`
	Rerank struct {
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	} `json:"rerank"`
}

// runEmbeddingsClient runs openai_embeddings_client.mjs against baseURL
// (ending in /v1).
func runEmbeddingsClient(t *testing.T, baseURL, query string, texts ...string) embeddingsClientResult {
	t.Helper()
	var r embeddingsClientResult
	runOpenAIScript(t, &r, "openai_embeddings_client.mjs", append([]string{baseURL, query}, texts...)...)
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

// checkEmbeddingsClient: the unmodified openai client gets, from the
// server at baseURL, the embeddings the native handler computes, bit for
// bit — through base64 (its default, which it decodes into Float32Arrays)
// and as JSON floats — and the server's errors as its BadRequestErrors; a
// rerank request to the default model, which does not rerank, is a 400
// saying what the model does.
func checkEmbeddingsClient(t *testing.T, baseURL, nativeURL string) {
	r := runEmbeddingsClient(t, baseURL, "Where is the dog?", embeddingTexts...)
	native := postEmbeddings(t, nativeURL, jsonString(t, map[string]any{"input": embeddingTexts}))
	require.Len(t, native.Data, len(embeddingTexts))
	assert.Equal(t, "base64", deref(r.Base64.Wire.EncodingFormat), "the client asks for base64 by default")
	assert.Equal(t, "string", r.Base64.Wire.EmbeddingType, "and gets base64 strings, which it decodes")
	assert.Equal(t, "float", deref(r.Float.Wire.EncodingFormat))
	assert.Equal(t, "object", r.Float.Wire.EmbeddingType, "arrays of numbers")
	for name, got := range map[string]embeddingList{"base64": r.Base64, "float": r.Float} {
		assert.Equal(t, "stories260K", got.Model, name)
		assert.Equal(t, "list", got.Object, name)
		assert.Equal(t, native.Usage, got.Usage, name)
		require.Len(t, got.Data, len(native.Data), name)
		for i, d := range got.Data {
			assert.Equal(t, "embedding", d.Object)
			assert.Equal(t, i, d.Index)
			assert.Equal(t, native.Data[i].Embedding, d.Embedding, "%s: text %d", name, i)
		}
	}
	require.Len(t, r.One.Data, 1)
	assert.Equal(t, native.Data[0].Embedding, r.One.Data[0].Embedding, "one text, dimensions the model's")

	require.NotNil(t, r.Dimensions.Error)
	assert.Equal(t, "BadRequestError", r.Dimensions.Error.Name)
	assert.Equal(t, "dimensions", deref(r.Dimensions.Error.Param))
	require.NotNil(t, r.Empty.Error)
	assert.Equal(t, http.StatusBadRequest, r.Empty.Error.Status)
	assert.Equal(t, "input", deref(r.Empty.Error.Param))

	assert.Equal(t, http.StatusBadRequest, r.Rerank.Status)
	e := openAIError(t, r.Rerank.Body)
	assert.Equal(t, "model_not_supported", deref(e.Code))
	assert.Equal(t, "model", deref(e.Param))
	assert.Contains(t, e.Message, "embeds text (POST /v1/embeddings)")
}

// embeddingsCurl is the README's curl example of embeddings.
var embeddingsCurl = []string{"-s", "/v1/embeddings", "-H", "Content-Type: application/json", "-d", `{
  "model": "stories260K", "input": ["Once upon a time", "The little dog ran to the park."]
}`}

// curlJSON runs curl with args, the second a path on base, and returns
// what it printed.
func curlJSON(t *testing.T, base string, args []string) []byte {
	t.Helper()
	curl := needTool(t, "curl", "Debian package curl")
	args = append([]string(nil), args...)
	args[1] = base + args[1]
	out, err := exec.Command(curl, args...).Output()
	require.NoError(t, err)
	return out
}

// checkEmbeddingsCurl runs the README's curl example against base: two
// unit vectors of the model's 64 values, the native handler's.
func checkEmbeddingsCurl(t *testing.T, base, nativeURL string) {
	t.Helper()
	var got embeddingList
	out := curlJSON(t, base, embeddingsCurl)
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	native := postEmbeddings(t, nativeURL, embeddingsCurl[len(embeddingsCurl)-1])
	require.Len(t, got.Data, 2, "%s", out)
	for i, d := range got.Data {
		assert.Len(t, d.Embedding, 64)
		assert.Equal(t, native.Data[i].Embedding, d.Embedding)
	}
	assert.Equal(t, native.Usage, got.Usage)
}

// TestWorkerEmbeddings: the edge worker's /v1/embeddings through the
// openai client and curl, in workerd.
func TestWorkerEmbeddings(t *testing.T) {
	native := nativeServer(t).URL
	checkEmbeddingsClient(t, edgeWorker(t).url+"/v1", native)
	checkEmbeddingsCurl(t, edgeWorker(t).url, native)
}

// TestHTTPEmbeddingsServe: wasmlm serve's /v1/embeddings through the
// openai client and curl.
func TestHTTPEmbeddingsServe(t *testing.T) {
	p, native := startServe(t), nativeServer(t).URL
	checkEmbeddingsClient(t, p.url+"/v1", native)
	checkEmbeddingsCurl(t, p.url, native)
}
