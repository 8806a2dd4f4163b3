package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
)

// TestAPIKeys: with keys, every /v1/*, /tokenize and
// /detokenize request needs one, as a bearer token or x-api-key; a missing
// or wrong key gets 401 invalid_api_key before anything is admitted or
// generated, a key revoked by Set stops working at once, and /health and
// CORS preflights stay open.
func TestAPIKeys(t *testing.T) {
	keys, err := NewKeyRing("sk-first", "sk-second")
	require.NoError(t, err)
	var generated, completed atomic.Int32
	h := newHandler(t, Options{Keys: keys, AllowOrigin: "*", OnCompletion: func(Completion) { completed.Add(1) }})
	run := h.generate
	h.generate = func(ctx context.Context, s *engine.Session, p engine.Prompt, o engine.GenerateOptions, f engine.TokenFunc) (engine.Result, error) {
		generated.Add(1)
		return run(ctx, s, p, o, f)
	}
	completion := `{"prompt": "Once", "max_tokens": 2}`
	send := func(method, path, body string, header ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		for i := 0; i < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	refused := []struct {
		name, method, path, body string
		header                   []string
	}{
		{"no key", "POST", "/v1/completions", completion, nil},
		{"a wrong key", "POST", "/v1/completions", completion, []string{"Authorization", "Bearer sk-third"}},
		{"a key's prefix", "POST", "/v1/completions", completion, []string{"Authorization", "Bearer sk-firs"}},
		{"a key with more", "POST", "/v1/completions", completion, []string{"Authorization", "Bearer sk-first2"}},
		{"another scheme", "POST", "/v1/completions", completion, []string{"Authorization", "Basic sk-first"}},
		{"the bare key", "POST", "/v1/completions", completion, []string{"Authorization", "sk-first"}},
		{"an empty bearer", "POST", "/v1/completions", completion, []string{"Authorization", "Bearer "}},
		{"a wrong x-api-key", "POST", "/v1/completions", completion, []string{"X-Api-Key", "sk-third"}},
		{"chat", "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]}`, nil},
		{"tokenize", "POST", "/tokenize", `{"content": "hi"}`, nil},
		{"detokenize", "POST", "/detokenize", `{"tokens": [1]}`, nil},
		{"embeddings", "POST", "/v1/embeddings", `{"input": "hi"}`, nil},
		{"rerank", "POST", "/v1/rerank", `{"query": "q", "documents": ["d"]}`, nil},
		{"llama.cpp's /rerank", "POST", "/rerank", `{"query": "q", "documents": ["d"]}`, nil},
		{"llama.cpp's /reranking", "POST", "/reranking", `{"query": "q", "documents": ["d"]}`, []string{"Authorization", "Bearer sk-third"}},
		{"models", "GET", "/v1/models", "", nil},
		{"a model", "GET", "/v1/models/stories260K", "", nil},
		{"an unknown API path", "GET", "/v1/nothing", "", nil},
		{"a wrong method", "GET", "/v1/completions", "", nil},
		{"a body that is not JSON", "POST", "/v1/completions", "{", nil},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			w := send(tc.method, tc.path, tc.body, tc.header...)
			require.Equal(t, http.StatusUnauthorized, w.Code, w.Body.String())
			e := apiErrorOf(t, w.Body.Bytes())
			assert.Equal(t, "invalid_api_key", *e.Code)
			assert.Equal(t, "invalid_request_error", e.Type)
			assert.Equal(t, `Bearer realm="wasmlm"`, w.Header().Get("WWW-Authenticate"))
			assert.Equal(t, "*", w.Header().Get("Access-Control-Allow-Origin"), "a page can read why")
		})
	}
	assert.Zero(t, generated.Load(), "nothing generated")
	assert.Zero(t, completed.Load(), "nothing admitted")

	for _, header := range [][]string{
		{"Authorization", "Bearer sk-first"},
		{"Authorization", "bearer   sk-second "},
		{"X-Api-Key", "sk-second"},
	} {
		w := send("POST", "/v1/completions", completion, header...)
		assert.Equal(t, http.StatusOK, w.Code, "%v: %s", header, w.Body.String())
		w = send("GET", "/v1/models", "", header...)
		assert.Equal(t, http.StatusOK, w.Code, "%v: %s", header, w.Body.String())
		w = send("POST", "/v1/embeddings", `{"input": "hi"}`, header...)
		assert.Equal(t, http.StatusOK, w.Code, "%v: %s", header, w.Body.String())
	}
	assert.Equal(t, int32(3), generated.Load())

	// Open whatever the key: /health, and preflights (a browser sends no
	// Authorization with them).
	assert.Equal(t, http.StatusOK, send("GET", "/health", "").Code)
	w := send("OPTIONS", "/v1/chat/completions", "", "Origin", "http://page.example",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
	assert.Equal(t, http.StatusNoContent, w.Code)
	assert.Equal(t, "authorization, content-type", w.Header().Get("Access-Control-Allow-Headers"))

	// Revoked: the second key stops working, the first goes on; no keys
	// left refuses everyone, not no one.
	require.NoError(t, keys.Set([]string{"sk-first"}))
	assert.Equal(t, http.StatusUnauthorized, send("POST", "/v1/completions", completion, "Authorization", "Bearer sk-second").Code)
	assert.Equal(t, http.StatusOK, send("POST", "/v1/completions", completion, "Authorization", "Bearer sk-first").Code)
	require.NoError(t, keys.Set(nil))
	assert.Equal(t, http.StatusUnauthorized, send("POST", "/v1/completions", completion, "Authorization", "Bearer sk-first").Code)
	assert.Equal(t, http.StatusUnauthorized, send("POST", "/v1/completions", completion).Code)
}

// TestKeyRingRefusesUnusableKeys: a key a header cannot carry is an
// error, and a failed Set keeps the keys there were.
func TestKeyRingRefusesUnusableKeys(t *testing.T) {
	keys, err := NewKeyRing("sk-ok")
	require.NoError(t, err)
	for _, bad := range []string{"", "sk two", "sk\tx", "sk-é", "sk\x7f"} {
		assert.ErrorIs(t, keys.Set([]string{"sk-new", bad}), ErrInvalidOptions, "%q", bad)
		_, err := NewKeyRing(bad)
		assert.ErrorIs(t, err, ErrInvalidOptions, "%q", bad)
	}
	assert.Equal(t, 1, keys.Len())
	_, ok := keys.match("sk-ok")
	assert.True(t, ok, "the old key still works")
	_, ok = keys.match("sk-new")
	assert.False(t, ok)
}

// TestReadKeys: a key file holds one key per line; blank lines and
// comments are skipped; a line a header cannot carry is an error naming it.
func TestReadKeys(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		keys       []string
		err        string
	}{
		{"empty", "", nil, ""},
		{"one", "sk-a\n", []string{"sk-a"}, ""},
		{"no final newline", "sk-a\nsk-b", []string{"sk-a", "sk-b"}, ""},
		{"comments and blanks", "# team A\nsk-a\n\n   \n  sk-b  \n#sk-c\n", []string{"sk-a", "sk-b"}, ""},
		{"CRLF", "sk-a\r\nsk-b\r\n", []string{"sk-a", "sk-b"}, ""},
		{"a space inside", "sk-a\nsk b\n", nil, "line 2"},
		{"not ASCII", "sk-ä\n", nil, "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := ReadKeys(strings.NewReader(tc.file))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.keys, keys)
		})
	}
}

// TestKeysNameClientsWithoutRevealingThem: the limits count a request
// under a digest of its key, one per key, never the key; without keys,
// under the client's address, with or without a port.
func TestKeysNameClientsWithoutRevealingThem(t *testing.T) {
	keys, err := NewKeyRing("sk-first", "sk-second")
	require.NoError(t, err)
	a, ok := keys.match("sk-first")
	require.True(t, ok)
	b, ok := keys.match("sk-second")
	require.True(t, ok)
	assert.NotEqual(t, a, b)
	assert.NotContains(t, a, "sk-first")
	again, _ := keys.match("sk-first")
	assert.Equal(t, a, again)

	h := newHandler(t, Options{})
	for addr, want := range map[string]string{"192.0.2.7:5000": "addr:192.0.2.7", "[2001:db8::1]:443": "addr:2001:db8::1", "pipe": "addr:pipe",
		"192.0.2.8": "addr:192.0.2.8", "2001:db8::2": "addr:2001:db8::2", "[2001:db8::3]": "addr:2001:db8::3"} {
		r := httptest.NewRequest("GET", "/v1/models", nil)
		r.RemoteAddr = addr
		client, e := h.authenticate(r)
		require.Nil(t, e)
		assert.Equal(t, want, client)
	}
}
