package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The size attacks: requests within the body limit
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

// TestLongTextRefusedUntokenized: a prompt, or
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

// TestLargeArraysRefusedWhileDecoding: token
// ids beyond the context, logit_bias entries beyond the vocabulary and
// stop strings beyond 4 are refused as the decoder meets the first one too
// many, without a slice or map of them all; within those bounds each works.
func TestLargeArraysRefusedWhileDecoding(t *testing.T) {
	h := newHandler(t, Options{})
	vocab := h.model.Config().VocabSize
	ids := "[" + strings.Repeat("1,", sizeAttackBody/2-1) + "1]"
	entries := make([]string, 80_000)
	for i := range entries {
		entries[i] = fmt.Sprintf(`"%d": 1`, i)
	}
	bias := "{" + strings.Join(entries, ", ") + "}"
	stops := mustJSON(t, slices.Repeat([]string{"x"}, sizeAttackBody/6))
	for _, tc := range []struct {
		name, body, param, code, want string
	}{
		{"token ids", `{"prompt": ` + ids + `}`, "prompt", "context_length_exceeded", "the prompt is more than 512 token ids"},
		{"one batch of token ids", `{"prompt": [` + ids + `]}`, "prompt", "context_length_exceeded", "the prompt is more than 512 token ids"},
		{"logit_bias entries", `{"prompt": "x", "logit_bias": ` + bias + `}`, "logit_bias", "invalid_value", "more than 512 entries"},
		{"stop strings", `{"prompt": "x", "stop": ` + stops + `}`, "stop", "invalid_value", "at most 4 stop sequences"},
	} {
		require.Less(t, len(tc.body), DefaultMaxBodyBytes, tc.name)
		var w *httptest.ResponseRecorder
		n := allocated(func() { w = do(h, "POST", "/v1/completions", tc.body) })
		require.Equal(t, http.StatusBadRequest, w.Code, "%s: %.300s", tc.name, w.Body.String())
		e := apiErrorOf(t, w.Body.Bytes())
		assert.Equal(t, tc.code, *e.Code, tc.name)
		assert.Equal(t, tc.param, *e.Param, tc.name)
		assert.Contains(t, e.Message, tc.want, tc.name)
		assert.Less(t, n, uint64(sizeAttackAlloc), "%s: allocated %d bytes", tc.name, n)
		t.Logf("%s, %d bytes: %.1f MiB allocated", tc.name, len(tc.body), float64(n)/(1<<20))
	}

	// Within the bounds: the context's worth of ids less one, an entry for
	// every token, 4 stop strings.
	w := do(h, "POST", "/v1/completions", `{"prompt": [`+strings.Repeat("1,", h.context-2)+`1], "max_tokens": 1}`)
	assert.Equal(t, 511, decodeCompletion(t, w).Usage.PromptTokens)
	greedy := decodeCompletion(t, do(h, "POST", "/v1/completions", `{"prompt": [1, 403], "max_tokens": 1, "temperature": 0}`))
	first := greedy.text(t)
	everyID := make([]string, vocab)
	for i := range everyID {
		everyID[i] = fmt.Sprintf(`"%d": 0`, i)
	}
	everyID[1] = fmt.Sprintf(`"%d": 0, "0%d": 0`, 1, 1) // the same id twice: one entry too many
	w = do(h, "POST", "/v1/completions", `{"prompt": "x", "logit_bias": {`+strings.Join(everyID, ", ")+`}}`)
	assert.Equal(t, http.StatusBadRequest, w.Code, "vocabulary + 1 entries")
	everyID[1] = `"1": 0`
	for _, b := range []string{`, "logit_bias": {` + strings.Join(everyID, ", ") + `}`, `, "stop": ["a", "b", "c", "d"]`} {
		c := decodeCompletion(t, do(h, "POST", "/v1/completions", `{"prompt": [1, 403], "max_tokens": 1, "temperature": 0`+b+`}`))
		assert.Equal(t, first, c.text(t), "a bias of 0 everywhere, and stop strings, change nothing here")
	}
}
