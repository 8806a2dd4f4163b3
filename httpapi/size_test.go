package httpapi

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The size attacks of the issue 11 review: requests within the body limit
// whose preparation would take far more memory than their bodies. Each is
// refused (or served) taking a small multiple of its body.

// allocated is the memory the process allocates while fn runs (this
// package's tests do not run in parallel).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// sizeAttackBody is about the largest body the default limit lets in.
const sizeAttackBody = 1_000_000

// sizeAttackAlloc bounds what one such request may allocate: its body is
// read, decoded and copied a few times over. Tokenizing a megabyte of text
// allocates about 60 MB; decoding 524,000 token ids into []int, 8 MB and
// more as the slice grows.
const sizeAttackAlloc = 12 << 20

// TestLongTextRefusedUntokenized (issue 11 review, item 1b): a prompt, or
// messages, with more bytes than the context's tokens can hold is refused
// as context_length_exceeded before it is tokenized; a shorter text that
// has too many tokens is refused after, with the exact count.
func TestLongTextRefusedUntokenized(t *testing.T) {
	h := newHandler(t, Options{})
	per := h.model.MaxTokenBytes()
	huge := strings.Repeat("a", sizeAttackBody)
	for _, tc := range []struct {
		path, body, param, want string
	}{
		{"/v1/completions", mustJSON(t, map[string]any{"prompt": huge}), "prompt", "and the prompt is at least"},
		{"/v1/chat/completions", mustJSON(t, map[string]any{"messages": []map[string]string{{"role": "user", "content": huge}}}), "messages", "and the messages are at least"},
	} {
		var w *httptest.ResponseRecorder
		n := allocated(func() { w = do(h, "POST", tc.path, tc.body) })
		require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
		e := apiErrorOf(t, w.Body.Bytes())
		assert.Equal(t, "context_length_exceeded", *e.Code)
		assert.Equal(t, tc.param, *e.Param)
		assert.Contains(t, e.Message, tc.want)
		assert.Less(t, n, uint64(sizeAttackAlloc), "%s: allocated %d bytes", tc.path, n)
		t.Logf("%s, %d bytes of text: %.1f MiB allocated", tc.path, sizeAttackBody, float64(n)/(1<<20))
	}

	// Under the bound in bytes, over the context in tokens: counted.
	short := strings.Repeat("a", (h.context-1)*per)
	w := do(h, "POST", "/v1/chat/completions", mustJSON(t, map[string]any{"messages": []map[string]string{{"role": "user", "content": short}}}))
	require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
	e := apiErrorOf(t, w.Body.Bytes())
	assert.Equal(t, "context_length_exceeded", *e.Code)
	assert.Regexp(t, `and the messages are \d+ tokens: no room`, e.Message)
}
