package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// FuzzRequest: whatever body a client sends to a completion endpoint, the
// handler answers (never panics) with 200 and a completion or a stream, or
// with a 4xx and an OpenAI error object. The seed corpus is in
// testdata/fuzz/FuzzRequest.
func FuzzRequest(f *testing.F) {
	h, err := New(loadDefault(f), Options{ContextLength: 64, MaxTokens: 8, MaxBodyBytes: 4096, QueueSize: -1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, chat bool, body []byte) {
		path := "/v1/completions"
		if chat {
			path = "/v1/chat/completions"
		}
		w := do(h, "POST", path, string(body))
		switch {
		case w.Code == http.StatusOK && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream"):
			events := parseSSE(t, w.Body.String())
			if last := events[len(events)-1]; last.data != "[DONE]" && last.name != "error" {
				t.Fatalf("stream ends with %q", last.data)
			}
		case w.Code == http.StatusOK:
			var c completionResponse
			if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil || len(c.Choices) != 1 {
				t.Fatalf("bad completion %s: %v", w.Body, err)
			}
		case w.Code >= 400 && w.Code < 500:
			apiErrorOf(t, w.Body.Bytes())
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	})
}
