//go:build wasmlm_serve

package jsbridge

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/models"
)

// served is one response of serveHTTP, as onResponse delivered it.
type servedResponse struct {
	status int
	header http.Header
	parts  []string // the bodies of the onResponse calls, in order
}

func (r *servedResponse) body() string { return strings.Join(r.parts, "") }

// serve calls serveHTTP and records its response; each onResponse call
// runs after (if not nil) with the number of calls so far.
func serve(t testing.TB, b *Binding, method, url, body string, opts map[string]any, after func(n int)) (*servedResponse, error) {
	t.Helper()
	resp := &servedResponse{header: http.Header{}}
	onResponse := js.FuncOf(func(_ js.Value, a []js.Value) any {
		part := a[0]
		if s := part.Get("status"); !s.IsUndefined() {
			resp.status = s.Int()
			hs := part.Get("headers")
			for i := range hs.Length() {
				resp.header.Add(hs.Index(i).Index(0).String(), hs.Index(i).Index(1).String())
			}
		}
		u8 := part.Get("body")
		buf := make([]byte, u8.Length())
		js.CopyBytesToGo(buf, u8)
		resp.parts = append(resp.parts, string(buf))
		if after != nil {
			after(len(resp.parts))
		}
		return nil
	})
	defer onResponse.Release()
	req := map[string]any{"method": method, "url": url, "headers": []any{[]any{"Content-Type", "application/json"}}}
	if body != "" {
		req["body"] = jsBytes([]byte(body))
	}
	if opts == nil {
		opts = map[string]any{"modelName": models.DefaultName}
	}
	_, err := call(t, b, "serveHTTP", obj(req), obj(opts), onResponse)
	return resp, err
}

// native answers the same request with httpapi's handler over the engine.
func native(t testing.TB, method, url, body string) *httptest.ResponseRecorder {
	t.Helper()
	h, err := httpapi.New(nativeModel(t), httpapi.Options{ModelName: models.DefaultName})
	require.NoError(t, err)
	r := httptest.NewRequest(method, url, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// contentOf is a chat completion's text, or a completion's; or, for
// Server-Sent Events, the texts of their chunks joined.
func contentOf(t testing.TB, body string) string {
	t.Helper()
	type choice struct {
		Text    string
		Message struct{ Content string }
		Delta   struct{ Content string }
	}
	var out strings.Builder
	if !strings.HasPrefix(body, "data: ") {
		var resp struct{ Choices []choice }
		require.NoError(t, json.Unmarshal([]byte(body), &resp), body)
		return resp.Choices[0].Text + resp.Choices[0].Message.Content
	}
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct{ Choices []choice }
		require.NoError(t, json.Unmarshal([]byte(data), &c), data)
		if len(c.Choices) > 0 {
			out.WriteString(c.Choices[0].Text + c.Choices[0].Delta.Content)
		}
	}
	return out.String()
}

// TestServeHTTP: serveHTTP answers as httpapi's handler over the engine
// does — the same status, content type and text, the same error objects —
// and streams Server-Sent Events one flush at a time, ending in [DONE].
func TestServeHTTP(t *testing.T) {
	b := newLoaded(t)
	cases := []struct{ name, method, url, body string }{
		{"models", "GET", "/v1/models", ""},
		{"chat", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":30,"temperature":0}`},
		{"chat stream", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":30,"temperature":0,"stream":true}`},
		{"completion stream", "POST", "/v1/completions", `{"prompt":"The dog","max_tokens":20,"temperature":0,"stream":true}`},
		{"bad temperature", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"temperature":-1}`},
		{"too many tokens", "POST", "/v1/completions", `{"prompt":"Hi","max_tokens":100000}`},
		{"no such path", "GET", "/v1/nothing", ""},
		{"wrong method", "GET", "/v1/chat/completions", ""},
		{"malformed", "POST", "/v1/completions", `{"prompt":`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := serve(t, b, c.method, c.url, c.body, nil, nil)
			require.NoError(t, err)
			want := native(t, c.method, c.url, c.body)
			assert.Equal(t, want.Code, got.status)
			assert.Equal(t, want.Header().Get("Content-Type"), got.header.Get("Content-Type"))
			switch {
			case want.Code != http.StatusOK:
				assert.JSONEq(t, want.Body.String(), got.body())
			case c.url == "/v1/models":
				assert.Contains(t, got.body(), `"id":"`+models.DefaultName+`"`)
			default:
				assert.Equal(t, contentOf(t, want.Body.String()), contentOf(t, got.body()))
				assert.NotEmpty(t, contentOf(t, got.body()))
			}
			if strings.Contains(c.body, `"stream":true`) {
				assert.Greater(t, len(got.parts), 10, "one part per event, not one buffered body")
				assert.True(t, strings.HasSuffix(got.body(), "data: [DONE]\n\n"))
			}
		})
	}
}

// TestServeHTTPTakesTurns: a served generation waits for the page's own
// generation to end (they share the session and its queue), and the
// page's next call waits for it.
func TestServeHTTPTakesTurns(t *testing.T) {
	b := newLoaded(t)
	var order []string
	b.tokenHook = func(n int) {
		if n == 1 || n == 40 {
			order = append(order, "page token")
		}
	}
	log := newChunkLog(t)
	first := b.Value().Call("stream", "Once upon a time", greedy(40), log.fn)
	done := make(chan *servedResponse)
	go func() {
		resp, err := serve(t, b, "POST", "/v1/completions", `{"prompt":"The dog","max_tokens":5,"temperature":0}`, nil,
			func(int) { order = append(order, "served") })
		assert.NoError(t, err)
		done <- resp
	}()
	_, err := await(t, first)
	require.NoError(t, err)
	resp := <-done
	assert.Equal(t, http.StatusOK, resp.status)
	assert.Equal(t, []string{"page token", "page token", "served"}, order)
}

// TestServeHTTPAbort: aborting a served stream's signal ends its
// generation (the response stops, the Promise resolves), and the API
// goes on answering; nothing is left running or unreleased.
func TestServeHTTPAbort(t *testing.T) {
	b := newLoaded(t)
	controller := js.Global().Get("AbortController").New()
	body := `{"prompt":"Once upon a time","max_tokens":200,"temperature":0,"stream":true}`
	resp, err := serve(t, b, "POST", "/v1/completions", body,
		map[string]any{"modelName": models.DefaultName, "signal": controller.Get("signal")},
		func(n int) {
			if n == 3 {
				controller.Call("abort")
			}
		})
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.status)
	assert.Less(t, len(resp.parts), 10, "the stream stopped soon after the abort")
	assert.NotContains(t, resp.body(), "[DONE]")

	again, err := serve(t, b, "POST", "/v1/completions", `{"prompt":"The dog","max_tokens":5,"temperature":0}`, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, again.status)
	assert.Zero(t, b.queue.length(), "no turn left held")
}

// TestServeHTTPArguments: wrong arguments reject at once, naming the
// field; a call before load rejects with no_model.
func TestServeHTTPArguments(t *testing.T) {
	b := New()
	defer b.Release()
	noop := js.FuncOf(func(js.Value, []js.Value) any { return nil })
	defer noop.Release()
	req := obj(map[string]any{"method": "GET", "url": "/v1/models"})
	_, err := call(t, b, "serveHTTP", req, js.Undefined(), noop)
	assert.Equal(t, "no_model", err.(*jsError).Code)
	_, err = call(t, b, "serveHTTP", obj(map[string]any{"method": "GET", "url": "v1/models"}), js.Undefined(), noop)
	assert.Equal(t, "request.url", err.(*jsError).Field)
	_, err = call(t, b, "serveHTTP", req, js.Undefined(), "not a function")
	assert.Equal(t, "onResponse", err.(*jsError).Field)
	_, err = call(t, b, "serveHTTP", obj(map[string]any{"method": "GET", "url": "/", "bogus": 1}), js.Undefined(), noop)
	assert.Equal(t, "invalid_argument", err.(*jsError).Code)
}
