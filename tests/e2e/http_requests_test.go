//go:build !js

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/httpapi"
)

// badRequest is one request the API must refuse, and how.
type badRequest struct {
	name         string
	method, path string
	body         string
	status       int
	param, code  string // "" expects null
	contentType  string // "" sends application/json
}

// badRequests are the malformed requests of the HTTP contract, for a server
// with the default limits and the default model (context 512).
func badRequests() []badRequest {
	const (
		cmpl = "/v1/completions"
		chat = "/v1/chat/completions"
	)
	jsonOf := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err) // only maps of strings and numbers
		}
		return string(b)
	}
	long := strings.Repeat("Once upon a time there was a dog. ", 100) // far over 512 tokens
	return []badRequest{
		{"malformed JSON", "POST", cmpl, `{"prompt": "Once",`, 400, "", "invalid_json", ""},
		{"not a JSON object", "POST", chat, `"hello"`, 400, "", "invalid_type", ""},
		{"max_tokens of the wrong type", "POST", cmpl, `{"prompt": "x", "max_tokens": "ten"}`, 400, "max_tokens", "invalid_type", ""},
		{"temperature of the wrong type", "POST", chat, `{"messages": [{"role": "user", "content": "x"}], "temperature": [1]}`, 400, "temperature", "invalid_type", ""},
		{"stream of the wrong type", "POST", cmpl, `{"prompt": "x", "stream": 1}`, 400, "stream", "invalid_type", ""},
		{"messages of the wrong type", "POST", chat, `{"messages": {"role": "user"}}`, 400, "messages", "invalid_type", ""},
		{"max_tokens above the context, no host limit", "POST", cmpl, `{"prompt": "x", "max_tokens": 513}`, 400, "max_tokens", "context_length_exceeded", ""},
		{"max_tokens above the context", "POST", cmpl, `{"prompt": "Once upon a time", "max_tokens": 510}`, 400, "max_tokens", "context_length_exceeded", ""},
		{"prompt too long", "POST", cmpl, jsonOf(map[string]any{"prompt": long}), 400, "prompt", "context_length_exceeded", ""},
		{"messages too long", "POST", chat, jsonOf(map[string]any{"messages": []map[string]string{{"role": "user", "content": long}}}), 400, "messages", "context_length_exceeded", ""},
		{"top_p out of range", "POST", cmpl, `{"prompt": "x", "top_p": 1.5}`, 400, "top_p", "invalid_value", ""},
		{"n other than 1", "POST", chat, `{"messages": [{"role": "user", "content": "x"}], "n": 3}`, 400, "n", "invalid_value", ""},
		{"too many stop strings", "POST", cmpl, `{"prompt": "x", "stop": ["a", "b", "c", "d", "e"]}`, 400, "stop", "invalid_value", ""},
		{"unknown role", "POST", chat, `{"messages": [{"role": "wizard", "content": "x"}]}`, 400, "messages", "invalid_value", ""},
		{"streamed request with a bad field", "POST", chat, `{"messages": [{"role": "user", "content": "x"}], "stream": true, "max_tokens": 0}`, 400, "max_tokens", "invalid_value", ""},
		{"body over the size limit", "POST", cmpl, jsonOf(map[string]any{"prompt": strings.Repeat("a", httpapi.DefaultMaxBodyBytes)}), 413, "", "request_too_large", ""},
		{"wrong method", "GET", chat, ``, 405, "", "method_not_allowed", ""},
		{"wrong method on a GET route", "POST", "/health", `{}`, 405, "", "method_not_allowed", ""},
		{"unknown route", "POST", "/v1/engines", `{}`, 404, "", "unknown_url", ""},
		{"detokenize outside the vocabulary", "POST", "/detokenize", `{"tokens": [600]}`, 400, "tokens", "invalid_value", ""},
		// What a page of another site may send without a CORS preflight.
		{"a text/plain body", "POST", chat, `{"messages": [{"role": "user", "content": "x"}]}`, 415, "", "unsupported_media_type", "text/plain;charset=UTF-8"},
		{"a form body", "POST", cmpl, `prompt=x`, 415, "", "unsupported_media_type", "application/x-www-form-urlencoded"},
	}
}

// checkBadRequests sends every bad request to baseURL, checks its status
// and OpenAI error object, and then that a good request still succeeds.
func checkBadRequests(t *testing.T, baseURL string) {
	for _, tc := range badRequests() {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctxTimeout(t), tc.method, baseURL+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			contentType := tc.contentType
			if contentType == "" {
				contentType = "application/json"
			}
			req.Header.Set("Content-Type", contentType)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode, "%s", body)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			e := openAIError(t, body)
			assert.Equal(t, "invalid_request_error", e.Type)
			assert.Equal(t, tc.param, deref(e.Param), "param")
			assert.Equal(t, tc.code, deref(e.Code), "code")
		})
	}
	t.Run("then a good request", func(t *testing.T) {
		c := postCompletion(t, baseURL, "/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 5, "temperature": 0}`)
		assert.Equal(t, 5, c.Usage.CompletionTokens)
		assert.NotEmpty(t, c.Choices[0].Text)
	})
}

// TestHTTPBadRequestsNative runs the bad-request table against the handler
// served natively.
func TestHTTPBadRequestsNative(t *testing.T) {
	checkBadRequests(t, nativeServer(t).URL)
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// openAIError checks that body is exactly {"error": {"message", "type",
// "param", "code"}} and returns the error.
func openAIError(t testing.TB, body []byte) errorObject {
	t.Helper()
	var shape map[string]map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &shape), "%s", body)
	require.Len(t, shape, 1, "%s", body)
	require.Contains(t, shape, "error")
	require.Len(t, shape["error"], 4, "message, type, param, code: %s", body)
	var e struct {
		Error errorObject `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e))
	require.NotEmpty(t, e.Error.Message)
	require.NotEmpty(t, e.Error.Type)
	return e.Error
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// completion is the part of a non-streamed response the tests read.
type completion struct {
	Model   string `json:"model"`
	Object  string `json:"object"`
	Choices []struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Timings struct {
		DecodeTokensPerSecond float64 `json:"decode_tokens_per_second"`
	} `json:"timings"`
}

func postCompletion(t testing.TB, baseURL, path, body string) completion {
	t.Helper()
	var c completion
	b := postOK(t, baseURL+path, body, &c)
	require.Len(t, c.Choices, 1, string(b))
	return c
}

// postOK posts a JSON body to url, requires a 200 and decodes the answer
// into v; it returns the answer as sent.
func postOK(t testing.TB, url, body string, v any) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxTimeout(t), "POST", url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	require.NoError(t, json.Unmarshal(b, v), "%s", b)
	return b
}
