package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/golden"
)

// The handler the bad-request table runs against: small limits so that
// "above the limit" and "above the context" are different requests.
const (
	testMaxTokens = 256
	testMaxBody   = 64 << 10
)

// longPrompt has far more tokens than stories260K's 512-token context.
var longPrompt = strings.Repeat("Once upon a time there was a dog. ", 100)

// TestBadRequests: every malformed request of the API contract gets the
// status OpenAI would send and an OpenAI error object naming the field at
// fault; after all of them a good request still succeeds.
func TestBadRequests(t *testing.T) {
	h := newHandler(t, Options{MaxTokens: testMaxTokens, MaxBodyBytes: testMaxBody})
	const (
		cmpl = "/v1/completions"
		chat = "/v1/chat/completions"
	)
	msgs := `"messages":[{"role":"user","content":"Hi"}]`
	cases := []struct {
		name         string
		method, path string
		body         string
		status       int
		param, code  string // "" means null
	}{
		{"malformed JSON", "POST", cmpl, `{"prompt": "x",`, 400, "", "invalid_json"},
		{"empty body", "POST", cmpl, ``, 400, "", "invalid_json"},
		{"not an object", "POST", cmpl, `[1, 2]`, 400, "", "invalid_type"},
		{"trailing garbage", "POST", cmpl, `{"prompt": "x"} x`, 400, "", "invalid_json"},
		{"max_tokens string", "POST", cmpl, `{"prompt": "x", "max_tokens": "10"}`, 400, "max_tokens", "invalid_type"},
		{"max_tokens fraction", "POST", cmpl, `{"prompt": "x", "max_tokens": 1.5}`, 400, "max_tokens", "invalid_type"},
		{"max_tokens huge", "POST", cmpl, `{"prompt": "x", "max_tokens": 1e30}`, 400, "max_tokens", "invalid_type"},
		{"max_tokens zero", "POST", cmpl, `{"prompt": "x", "max_tokens": 0}`, 400, "max_tokens", "invalid_value"},
		{"max_tokens negative", "POST", cmpl, `{"prompt": "x", "max_tokens": -1}`, 400, "max_tokens", "invalid_value"},
		{"max_tokens above the limit", "POST", cmpl, fmt.Sprintf(`{"prompt": "x", "max_tokens": %d}`, testMaxTokens+1), 400, "max_tokens", "invalid_value"},
		{"max_completion_tokens above the limit", "POST", chat, fmt.Sprintf(`{%s, "max_completion_tokens": %d}`, msgs, testMaxTokens+1), 400, "max_completion_tokens", "invalid_value"},
		{"max_tokens above the context", "POST", cmpl, mustJSON(t, map[string]any{"prompt": longPrompt[:1200], "max_tokens": testMaxTokens}), 400, "max_tokens", "context_length_exceeded"},
		{"prompt too long", "POST", cmpl, mustJSON(t, map[string]any{"prompt": longPrompt}), 400, "prompt", "context_length_exceeded"},
		{"messages too long", "POST", chat, mustJSON(t, map[string]any{"messages": []map[string]string{{"role": "user", "content": longPrompt}}}), 400, "messages", "context_length_exceeded"},
		{"temperature string", "POST", cmpl, `{"prompt": "x", "temperature": "hot"}`, 400, "temperature", "invalid_type"},
		{"temperature negative", "POST", cmpl, `{"prompt": "x", "temperature": -1}`, 400, "temperature", "invalid_value"},
		{"temperature overflows float32", "POST", cmpl, `{"prompt": "x", "temperature": 1e300}`, 400, "temperature", "invalid_value"},
		{"top_p above 1", "POST", cmpl, `{"prompt": "x", "top_p": 2}`, 400, "top_p", "invalid_value"},
		{"top_k negative", "POST", cmpl, `{"prompt": "x", "top_k": -1}`, 400, "top_k", "invalid_value"},
		{"min_p above 1", "POST", chat, `{` + msgs + `, "min_p": 1.5}`, 400, "min_p", "invalid_value"},
		{"repeat_penalty negative", "POST", cmpl, `{"prompt": "x", "repeat_penalty": -1}`, 400, "repeat_penalty", "invalid_value"},
		{"presence_penalty out of range", "POST", cmpl, `{"prompt": "x", "presence_penalty": 3}`, 400, "presence_penalty", "invalid_value"},
		{"frequency_penalty out of range", "POST", chat, `{` + msgs + `, "frequency_penalty": -2.5}`, 400, "frequency_penalty", "invalid_value"},
		{"seed string", "POST", cmpl, `{"prompt": "x", "seed": "x"}`, 400, "seed", "invalid_type"},
		{"seed fraction", "POST", cmpl, `{"prompt": "x", "seed": 0.5}`, 400, "seed", "invalid_type"},
		{"logit_bias not an object", "POST", cmpl, `{"prompt": "x", "logit_bias": [1]}`, 400, "logit_bias", "invalid_type"},
		{"logit_bias key not an id", "POST", cmpl, `{"prompt": "x", "logit_bias": {"abc": 1}}`, 400, "logit_bias", "invalid_value"},
		{"logit_bias value out of range", "POST", cmpl, `{"prompt": "x", "logit_bias": {"5": 101}}`, 400, "logit_bias.5", "invalid_value"},
		{"logit_bias value not a number", "POST", cmpl, `{"prompt": "x", "logit_bias": {"1": 2, "7": "x"}}`, 400, "logit_bias.7", "invalid_type"},
		{"logit_bias id outside the vocabulary", "POST", cmpl, `{"prompt": "x", "logit_bias": {"512": 1}}`, 400, "logit_bias.512", "invalid_value"},
		{"stop number", "POST", cmpl, `{"prompt": "x", "stop": 5}`, 400, "stop", "invalid_type"},
		{"stop list of numbers", "POST", cmpl, `{"prompt": "x", "stop": [1, 2]}`, 400, "stop", "invalid_type"},
		{"stop too many", "POST", cmpl, `{"prompt": "x", "stop": ["a", "b", "c", "d", "e"]}`, 400, "stop", "invalid_value"},
		{"stop empty", "POST", cmpl, `{"prompt": "x", "stop": ""}`, 400, "stop", "invalid_value"},
		{"an anyOf branch", "POST", cmpl, `{"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"enum": []}]}}}}`, 400, "response_format.json_schema.schema.anyOf[2].enum", "invalid_value"},
		{"stop's second empty", "POST", cmpl, `{"prompt": "x", "stop": ["a", ""]}`, 400, "stop[1]", "invalid_value"},
		{"stop's second too long", "POST", cmpl, mustJSON(t, map[string]any{"prompt": "x", "stop": []string{"a", strings.Repeat("a", 300)}}), 400, "stop[1]", "invalid_value"},
		{"stop too long", "POST", cmpl, mustJSON(t, map[string]any{"prompt": "x", "stop": strings.Repeat("a", 300)}), 400, "stop", "invalid_value"},
		{"stop too long, streamed", "POST", cmpl, mustJSON(t, map[string]any{"prompt": "x", "stream": true, "stop": strings.Repeat("a", 300)}), 400, "stop", "invalid_value"},
		{"stream not a boolean", "POST", cmpl, `{"prompt": "x", "stream": "yes"}`, 400, "stream", "invalid_type"},
		{"stream_options wrong type", "POST", cmpl, `{"prompt": "x", "stream": true, "stream_options": {"include_usage": 1}}`, 400, "stream_options.include_usage", "invalid_type"},
		{"n is 2", "POST", cmpl, `{"prompt": "x", "n": 2}`, 400, "n", "invalid_value"},
		{"n is 0", "POST", chat, `{` + msgs + `, "n": 0}`, 400, "n", "invalid_value"},
		{"model not a string", "POST", cmpl, `{"prompt": "x", "model": 5}`, 400, "model", "invalid_type"},
		{"prompt missing", "POST", cmpl, `{"max_tokens": 5}`, 400, "prompt", "missing_required_parameter"},
		{"prompt number", "POST", cmpl, `{"prompt": 5}`, 400, "prompt", "invalid_value"},
		{"prompt batch", "POST", cmpl, `{"prompt": ["a", "b"]}`, 400, "prompt", "invalid_value"},
		{"prompt empty ids", "POST", cmpl, `{"prompt": []}`, 400, "prompt", "invalid_value"},
		{"prompt id outside the vocabulary", "POST", cmpl, `{"prompt": [1, 512]}`, 400, "prompt", "invalid_value"},
		{"messages missing", "POST", chat, `{}`, 400, "messages", "invalid_value"},
		{"messages empty", "POST", chat, `{"messages": []}`, 400, "messages", "invalid_value"},
		{"messages not an array", "POST", chat, `{"messages": "hi"}`, 400, "messages", "invalid_type"},
		{"message without role", "POST", chat, `{"messages": [{"content": "hi"}]}`, 400, "messages[0].role", "invalid_value"},
		{"message with unknown role", "POST", chat, `{"messages": [{"role": "robot", "content": "hi"}]}`, 400, "messages", "invalid_value"},
		{"message content number", "POST", chat, `{"messages": [{"role": "user", "content": 5}]}`, 400, "messages[0].content", "invalid_type"},
		{"message content image", "POST", chat, `{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}`, 400, "messages[0].content", "invalid_type"},
		{"body over the size limit", "POST", cmpl, mustJSON(t, map[string]any{"prompt": strings.Repeat("a", testMaxBody)}), 413, "", "request_too_large"},
		{"GET a POST route", "GET", cmpl, ``, 405, "", "method_not_allowed"},
		{"PUT a POST route", "PUT", chat, `{}`, 405, "", "method_not_allowed"},
		{"POST a GET route", "POST", "/v1/models", `{}`, 405, "", "method_not_allowed"},
		{"DELETE health", "DELETE", "/health", ``, 405, "", "method_not_allowed"},
		{"unknown API route", "POST", "/v1/images/generations", `{}`, 404, "", "unknown_url"},
		{"unknown route", "GET", "/nope", ``, 404, "", "unknown_url"},
		{"unknown model", "GET", "/v1/models/gpt-4", ``, 404, "model", "model_not_found"},
		{"tokenize without content", "POST", "/tokenize", `{}`, 400, "content", "missing_required_parameter"},
		{"tokenize content number", "POST", "/tokenize", `{"content": 5}`, 400, "content", "invalid_type"},
		{"detokenize without tokens", "POST", "/detokenize", `{}`, 400, "tokens", "missing_required_parameter"},
		{"detokenize tokens string", "POST", "/detokenize", `{"tokens": "x"}`, 400, "tokens", "invalid_type"},
		{"detokenize token outside the vocabulary", "POST", "/detokenize", `{"tokens": [1, 99999]}`, 400, "tokens", "invalid_value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := do(h, tc.method, tc.path, tc.body)
			require.Equal(t, tc.status, w.Code, w.Body.String())
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			e := apiErrorOf(t, w.Body.Bytes())
			wantType := typeInvalidRequest
			assert.Equal(t, wantType, e.Type)
			assertNullable(t, tc.param, e.Param, "param")
			assertNullable(t, tc.code, e.Code, "code")
			if tc.status == http.StatusMethodNotAllowed {
				assert.Contains(t, w.Header().Get("Allow"), "OPTIONS")
			}
		})
	}
	t.Run("then a good request still works", func(t *testing.T) {
		c := decodeCompletion(t, do(h, "POST", cmpl, `{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}`))
		assert.Equal(t, 8, c.Usage.CompletionTokens)
		assert.NotEmpty(t, c.text(t))
	})
}

// TestTypeErrorMessages: a value of the wrong type is named as a JSON
// client thinks of it, and a number out of its field's range says so.
func TestTypeErrorMessages(t *testing.T) {
	h := newHandler(t, Options{})
	for body, want := range map[string]string{
		`{"prompt": "x", "max_tokens": 1.5}`:                  "max_tokens must be an integer, got 1.5",
		`{"prompt": "x", "max_tokens": 1e30}`:                 "max_tokens must be an integer that fits in 64 bits, got 1e30",
		`{"prompt": "x", "max_tokens": 99999999999999999999}`: "max_tokens must be an integer that fits in 64 bits, got 99999999999999999999",
		`{"prompt": "x", "temperature": 1e400}`:               "temperature must be a number that fits in 64 bits, got 1e400",
		`{"prompt": "x", "temperature": "hot"}`:               "temperature must be a number, got a string",
		`{"prompt": "x", "model": 5}`:                         "model must be a string, got a number",
		`{"prompt": "x", "stream": 1}`:                        "stream must be a boolean, got a number",
		`{"prompt": "x", "logit_bias": [1]}`:                  "logit_bias must be an object, got an array",
		`{"prompt": "x", "top_k": true}`:                      "top_k must be an integer, got a boolean",
		`[1]`:                                                 "the request body must be a JSON object, got an array",
		`"x"`:                                                 "the request body must be a JSON object, got a string",
	} {
		w := do(h, "POST", "/v1/completions", body)
		require.Equal(t, http.StatusBadRequest, w.Code, body)
		assert.Equal(t, want, apiErrorOf(t, w.Body.Bytes()).Message, body)
	}
}

func assertNullable(t *testing.T, want string, got *string, field string) {
	t.Helper()
	if want == "" {
		assert.Nil(t, got, "%s should be null", field)
		return
	}
	if assert.NotNil(t, got, "%s should be %q", field, want) {
		assert.Equal(t, want, *got, field)
	}
}

// TestResponseShape: a non-streamed response carries OpenAI's fields, echoes
// the loaded model's name whatever the request asked for, and counts usage.
func TestResponseShape(t *testing.T) {
	h := newHandler(t, Options{})
	before := time.Now().Unix()
	for _, tc := range []struct {
		path, body, object, idPrefix string
	}{
		{"/v1/completions", `{"model": "gpt-3.5-turbo-instruct", "prompt": "Once upon a time", "max_tokens": 3}`, "text_completion", "cmpl-"},
		{"/v1/chat/completions", `{"model": "gpt-4o", "messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 3}`, "chat.completion", "chatcmpl-"},
	} {
		t.Run(tc.object, func(t *testing.T) {
			w := do(h, "POST", tc.path, tc.body)
			c := decodeCompletion(t, w)
			assert.True(t, strings.HasPrefix(c.ID, tc.idPrefix), c.ID)
			assert.Equal(t, tc.object, c.Object)
			assert.Equal(t, "stories260K", c.Model)
			assert.GreaterOrEqual(t, c.Created, before)
			require.Len(t, c.Choices, 1)
			assert.Equal(t, 0, c.Choices[0].Index)
			assert.Equal(t, "length", c.Choices[0].FinishReason)
			assert.Equal(t, 5, c.Usage.PromptTokens) // BOS + "Once upon a time" (4 tokens)
			assert.Equal(t, 3, c.Usage.CompletionTokens)
			assert.Equal(t, 8, c.Usage.TotalTokens)
			if tc.object == "chat.completion" {
				assert.Equal(t, "assistant", c.Choices[0].Message.Role)
			}
			var raw map[string]any
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &raw))
			choice := raw["choices"].([]any)[0].(map[string]any)
			assert.Contains(t, choice, "logprobs")
			assert.Nil(t, choice["logprobs"])
		})
	}
}

// TestMaxTokensDefaults: without max_tokens a text completion stops after
// 16 tokens (OpenAI's documented default for /v1/completions) and a chat
// completion runs until the context is full or the model stops.
func TestMaxTokensDefaults(t *testing.T) {
	h := newHandler(t, Options{ContextLength: 64})
	c := decodeCompletion(t, do(h, "POST", "/v1/completions", `{"prompt": "Once upon a time", "temperature": 0}`))
	assert.Equal(t, 16, c.Usage.CompletionTokens)
	assert.Equal(t, "length", c.Choices[0].FinishReason)

	c = decodeCompletion(t, do(h, "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0}`))
	if c.Choices[0].FinishReason == "length" {
		assert.Equal(t, 64, c.Usage.TotalTokens, "a length stop without max_tokens fills the context")
	}
}

// TestModelsHealthTokenize covers the small endpoints.
func TestModelsHealthTokenize(t *testing.T) {
	h := newHandler(t, Options{})
	g := golden.RuncStories260K(t)

	w := do(h, "GET", "/health", "")
	require.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, `{"status":"ok"}`, w.Body.String())

	w = do(h, "GET", "/v1/models", "")
	require.Equal(t, http.StatusOK, w.Code)
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
			Meta   struct {
				ContextLength int   `json:"context_length"`
				VocabSize     int   `json:"vocab_size"`
				SIMD          *bool `json:"simd"`
				Threads       int   `json:"threads"`
			} `json:"meta"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &list))
	assert.Equal(t, "list", list.Object)
	require.Len(t, list.Data, 1)
	assert.Equal(t, "stories260K", list.Data[0].ID)
	assert.Equal(t, "model", list.Data[0].Object)
	assert.Equal(t, 512, list.Data[0].Meta.ContextLength) // models.Default's documented context
	assert.Equal(t, 512, list.Data[0].Meta.VocabSize)
	require.NotNil(t, list.Data[0].Meta.SIMD, "meta.simd")
	assert.Equal(t, tensor.SIMD() || tensor.NativeSIMD(), *list.Data[0].Meta.SIMD)
	assert.Positive(t, list.Data[0].Meta.Threads, "meta.threads")

	w = do(h, "GET", "/v1/models/stories260K", "")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())

	for _, run := range g.Runs {
		w = do(h, "POST", "/tokenize", mustJSON(t, map[string]any{"content": run.Prompt, "add_special": true}))
		require.Equal(t, http.StatusOK, w.Code)
		assert.JSONEq(t, mustJSON(t, map[string]any{"tokens": run.PromptIDs}), w.Body.String(), "run.c's prompt ids")

		w = do(h, "POST", "/detokenize", mustJSON(t, map[string]any{"tokens": run.IDs}))
		require.Equal(t, http.StatusOK, w.Code)
		assert.JSONEq(t, mustJSON(t, map[string]any{"content": run.Text}), w.Body.String(), "run.c's text")
	}
	// llama.cpp's defaults: no BOS, special-token text parsed ("<s>" is BOS, id 1).
	w = do(h, "POST", "/tokenize", `{"content": "<s>"}`)
	assert.JSONEq(t, `{"tokens":[1]}`, w.Body.String())
	w = do(h, "POST", "/tokenize", `{"content": "", "add_special": false}`)
	assert.JSONEq(t, `{"tokens":[]}`, w.Body.String())
}

// TestCORSAndFallback: with AllowOrigin the API answers preflights and tags
// responses; paths outside the API go to NotFound, but never /v1/ paths.
func TestCORSAndFallback(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := w.Write([]byte("page"))
		assert.NoError(t, err)
	})
	h := newHandler(t, Options{AllowOrigin: "*", NotFound: page})

	w := do(h, "OPTIONS", "/v1/chat/completions", "")
	assert.Equal(t, http.StatusNoContent, w.Code)
	assert.Equal(t, "*", w.Header().Get("Access-Control-Allow-Origin"))
	assert.Contains(t, w.Header().Get("Access-Control-Allow-Methods"), "POST")

	w = do(h, "GET", "/health", "")
	assert.Equal(t, "*", w.Header().Get("Access-Control-Allow-Origin"))

	w = do(h, "GET", "/index.html", "")
	assert.Equal(t, "page", w.Body.String())
	w = do(h, "GET", "/v1/nothing", "")
	assert.Equal(t, http.StatusNotFound, w.Code)
	apiErrorOf(t, w.Body.Bytes())
}

// sdkHeaders are the request headers the openai npm SDK (6.x) asks a
// preflight for when it runs in a browser.
const sdkHeaders = "authorization,content-type,x-stainless-arch,x-stainless-lang,x-stainless-os," +
	"x-stainless-package-version,x-stainless-retry-count,x-stainless-runtime,x-stainless-runtime-version,x-stainless-timeout"

// preflightFrom sends the CORS preflight a browser sends before a page of
// origin POSTs to path with the openai SDK.
func preflightFrom(h http.Handler, origin, path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("OPTIONS", path, nil)
	r.Header.Set("Origin", origin)
	r.Header.Set("Access-Control-Request-Method", "POST")
	r.Header.Set("Access-Control-Request-Headers", sdkHeaders)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestCORSPreflightAllowsTheHeadersAsked: an allowed
// origin's preflight is answered with every header it asks for, so the
// openai SDK's X-Stainless-* headers pass; with one allowed origin, another
// origin gets no CORS headers, and the answer varies by Origin.
func TestCORSPreflightAllowsTheHeadersAsked(t *testing.T) {
	const path = "/v1/chat/completions"
	w := preflightFrom(newHandler(t, Options{AllowOrigin: "*"}), "http://page.example", path)
	assert.Equal(t, http.StatusNoContent, w.Code)
	assert.Equal(t, "*", w.Header().Get("Access-Control-Allow-Origin"))
	assert.Equal(t, sdkHeaders, w.Header().Get("Access-Control-Allow-Headers"))
	assert.Equal(t, "POST, OPTIONS", w.Header().Get("Access-Control-Allow-Methods"))
	assert.Equal(t, []string{"Access-Control-Request-Headers"}, w.Header().Values("Vary"), "* does not vary by Origin")

	h := newHandler(t, Options{AllowOrigin: "http://page.example"})
	w = preflightFrom(h, "http://page.example", path)
	assert.Equal(t, "http://page.example", w.Header().Get("Access-Control-Allow-Origin"))
	assert.Equal(t, sdkHeaders, w.Header().Get("Access-Control-Allow-Headers"))
	assert.Equal(t, []string{"Origin", "Access-Control-Request-Headers"}, w.Header().Values("Vary"))

	w = preflightFrom(h, "http://other.example", path)
	assert.Equal(t, http.StatusNoContent, w.Code)
	assert.Empty(t, w.Header().Get("Access-Control-Allow-Origin"), "another origin is not allowed")
	assert.Empty(t, w.Header().Get("Access-Control-Allow-Headers"))
	assert.Equal(t, []string{"Origin"}, w.Header().Values("Vary"))

	r := httptest.NewRequest("OPTIONS", path, nil)
	r.Header.Set("Origin", "http://page.example")
	r.Header.Set("Access-Control-Request-Method", "POST")
	r.Header.Set("Access-Control-Request-Private-Network", "true")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assert.Equal(t, "true", w.Header().Get("Access-Control-Allow-Private-Network"), "Chromium's Private Network Access")
	assert.Empty(t, w.Header().Get("Access-Control-Allow-Headers"), "none asked for")

	r = httptest.NewRequest("GET", "/health", nil)
	r.Header.Set("Origin", "http://page.example")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assert.Equal(t, "http://page.example", w.Header().Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "Retry-After, Retry-After-Ms", w.Header().Get("Access-Control-Expose-Headers"))

	w = preflightFrom(newHandler(t, Options{}), "http://page.example", path)
	assert.Equal(t, http.StatusNoContent, w.Code)
	assert.Empty(t, w.Header().Get("Access-Control-Allow-Origin"), "no AllowOrigin: no CORS")
	assert.Empty(t, w.Header().Values("Vary"))
}

// TestPanicBecomes500: a panic anywhere under ServeHTTP is answered with an
// OpenAI error object, not a dead process.
func TestPanicBecomes500(t *testing.T) {
	boom := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	h := newHandler(t, Options{NotFound: boom})
	w := do(h, "GET", "/page", "")
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	e := apiErrorOf(t, w.Body.Bytes())
	assert.Equal(t, typeServer, e.Type)
	assert.Contains(t, e.Message, "boom")

	// A panic inside the engine (here: in the token callback it calls).
	h = newHandler(t, Options{})
	h.generate = func(ctx context.Context, s *engine.Session, p engine.Prompt, o engine.GenerateOptions, _ engine.TokenFunc) (engine.Result, error) {
		return runSession(ctx, s, p, o, func(engine.Token) error { panic("engine boom") })
	}
	w = do(h, "POST", "/v1/completions", `{"prompt": "x", "max_tokens": 3}`)
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Contains(t, apiErrorOf(t, w.Body.Bytes()).Message, "engine boom")
	// The session survived: the next request generates.
	h.generate = runSession
	decodeCompletion(t, do(h, "POST", "/v1/completions", `{"prompt": "x", "max_tokens": 3}`))
}

func TestNewRejectsBadOptions(t *testing.T) {
	m := loadDefault(t)
	for _, opts := range []Options{{Slots: -1}, {MaxTokens: -1}, {MaxBodyBytes: -1}, {WriteTimeout: -1}, {MaxTokens: 513}, {ContextLength: engine.MaxContextLength + 1}, {ContextShift: true, NKeep: -2}} {
		_, err := New(m, opts)
		assert.ErrorIs(t, err, ErrInvalidOptions, "%+v", opts)
	}
	_, err := New(nil, Options{})
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

// TestContextBeyondTraining: a context longer than the model was trained
// for (stories260K: 512) is allowed, as llama.cpp allows it (the host
// warns: engine.Model.ContextWarning), and holds a prompt the trained
// context could not.
func TestContextBeyondTraining(t *testing.T) {
	h := newHandler(t, Options{ContextLength: 1024, MaxTokens: 1024})
	assert.Equal(t, 1024, h.ContextLength())
	var models struct {
		Data []struct {
			Meta struct {
				ContextLength        int `json:"context_length"`
				TrainedContextLength int `json:"n_ctx_train"`
			} `json:"meta"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(do(h, "GET", "/v1/models", "").Body.Bytes(), &models))
	require.Len(t, models.Data, 1)
	assert.Equal(t, 1024, models.Data[0].Meta.ContextLength, "the sessions' context")
	assert.Equal(t, 512, models.Data[0].Meta.TrainedContextLength, "the file's, as llama.cpp's meta.n_ctx_train")
	w := do(h, "POST", "/v1/completions", mustJSON(t, map[string]any{"prompt": strings.Repeat("once upon a time ", 150), "max_tokens": 4}))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Greater(t, decodeCompletion(t, w).Usage.PromptTokens, 512)
}

// TestPostNeedsJSON: a POST whose body is not declared
// JSON — what a page of another site can send without a CORS preflight — is
// refused with 415 before anything runs; JSON with parameters is fine.
func TestPostNeedsJSON(t *testing.T) {
	h := newHandler(t, Options{})
	h.generate = func(context.Context, *engine.Session, engine.Prompt, engine.GenerateOptions, engine.TokenFunc) (engine.Result, error) {
		t.Error("a refused request generated")
		return engine.Result{}, nil
	}
	post := func(path, contentType string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", path, strings.NewReader(`{"prompt": "x", "content": "x", "tokens": [1]}`))
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"} {
		for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "", "application/x-www-form-urlencoded",
			"multipart/form-data; boundary=x", "application/jsonl", "application/json-seq"} {
			w := post(path, ct)
			require.Equal(t, http.StatusUnsupportedMediaType, w.Code, "%s %q", path, ct)
			e := apiErrorOf(t, w.Body.Bytes())
			assert.Equal(t, typeInvalidRequest, e.Type)
			assertNullable(t, "unsupported_media_type", e.Code, "code")
			assert.Contains(t, e.Message, "Content-Type: application/json")
		}
	}
	for _, ct := range []string{"application/json; charset=utf-8", "Application/JSON"} {
		w := post("/tokenize", ct)
		assert.Equal(t, http.StatusOK, w.Code, "%q: %s", ct, w.Body)
	}
	assert.Contains(t, post("/tokenize", "").Body.String(), "got none")
}

// TestHostAllowList: with AllowHost, a request for a
// name it refuses gets 403 whatever its route; without it, any name passes.
func TestHostAllowList(t *testing.T) {
	var asked []string
	h := newHandler(t, Options{AllowHost: func(name string) bool {
		asked = append(asked, name)
		return name == "localhost"
	}})
	get := func(h http.Handler, host string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/health", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	assert.Equal(t, http.StatusOK, get(h, "LocalHost.:8080").Code)
	w := get(h, "rebound.example:8080")
	require.Equal(t, http.StatusForbidden, w.Code)
	e := apiErrorOf(t, w.Body.Bytes())
	assertNullable(t, "host_not_allowed", e.Code, "code")
	assert.Contains(t, e.Message, `"rebound.example"`)
	assert.Equal(t, []string{"localhost", "rebound.example"}, asked)

	assert.Equal(t, http.StatusOK, get(newHandler(t, Options{}), "rebound.example:8080").Code, "no AllowHost: every name")

	for host, name := range map[string]string{"127.0.0.1:8080": "127.0.0.1", "[::1]:80": "::1", "[::1]": "::1", "Example.COM": "example.com", "": ""} {
		assert.Equal(t, name, HostName(host), host)
	}
}

// TestDeveloperRole: a "developer" message is accepted as a "system" one,
// and its prompt counts the tokens the system message's does (openai's
// TestDeveloperRoleIsSystem compares the prompts).
func TestDeveloperRole(t *testing.T) {
	h := newHandler(t, Options{})
	promptTokens := func(role string) int {
		c := decodeCompletion(t, do(h, "POST", "/v1/chat/completions",
			`{"messages": [{"role": "`+role+`", "content": "Be brief."}, {"role": "user", "content": "hi"}], "max_tokens": 1}`))
		return c.Usage.PromptTokens
	}
	assert.Equal(t, promptTokens("system"), promptTokens("developer"))
}
