package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// TestPreparationPlaces: requests are prepared
// (decoded, tokenized) in one of Slots places, after their bodies are read
// and in the order they came; a place is left before the request waits for
// a slot; /tokenize and /detokenize take one too; a request whose client
// leaves while it waits for a place is dropped without being prepared.
func TestPreparationPlaces(t *testing.T) {
	done := make(completions, 8)
	// The test's requests all come from one client: it may fill the queue.
	h := newHandler(t, Options{Slots: 1, QueueSize: 8, ClientQueue: 8, OnCompletion: done.report})
	started := make(chan int, 8)
	release := make(chan struct{})
	h.generate = func(ctx context.Context, _ *engine.Session, prompt engine.Prompt, _ engine.GenerateOptions, _ engine.TokenFunc) (engine.Result, error) {
		started <- prompt.Tokens[0]
		<-release
		return engine.Result{PromptTokens: prompt.Tokens, Tokens: []int{7}, FinishReason: engine.FinishLength}, nil
	}
	send := func(ctx context.Context, path, body string) chan *httptest.ResponseRecorder {
		ch := make(chan *httptest.ResponseRecorder, 1)
		r := httptest.NewRequest("POST", path, strings.NewReader(body)).WithContext(ctx)
		r.Header.Set("Content-Type", "application/json")
		go func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			ch <- w
		}()
		return ch
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		require.Eventually(t, cond, liveness, time.Millisecond, what)
	}

	// The test holds the only place: what comes waits for it, its body read.
	_, err := h.preparing.take(context.Background(), "test")
	require.NoError(t, err)
	var waiting []chan *httptest.ResponseRecorder
	for i := range 3 {
		waiting = append(waiting, send(context.Background(), "/v1/completions", fmt.Sprintf(`{"prompt": [%d]}`, 10+i)))
		waitFor("waiting to be prepared", func() bool { return h.preparing.queued() == i+1 })
	}
	leaving, leave := context.WithCancel(context.Background())
	left := send(leaving, "/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}]}`)
	waitFor("waiting to be prepared", func() bool { return h.preparing.queued() == 4 })
	tokenized := send(context.Background(), "/tokenize", `{"content": "Once upon a time"}`)
	waitFor("waiting to be prepared", func() bool { return h.preparing.queued() == 5 })
	detokenized := send(context.Background(), "/detokenize", `{"tokens": [403]}`)
	waitFor("waiting to be prepared", func() bool { return h.preparing.queued() == 6 })
	select {
	case <-tokenized:
		t.Fatal("/tokenize was answered while every place was taken")
	case <-time.After(50 * time.Millisecond):
	}

	leave()
	waitFor("the leaving client's request left the line", func() bool { return h.preparing.queued() == 5 })
	c := done.next(t)
	assert.True(t, c.Dropped)
	assert.Equal(t, "/v1/chat/completions", c.Endpoint)
	assert.Equal(t, http.StatusOK, (<-left).Code, "nothing was written: its client is gone")

	h.preparing.put(struct{}{}, "test")
	// Prepared in turn, the first generates and the other two wait for the
	// slot, their places left; tokenize and detokenize are answered.
	assert.Equal(t, 10, <-started)
	waitFor("two waiting for the slot", func() bool { return h.sched.queued() == 2 })
	ids, err := h.model.Tokenizer().Encode("Once upon a time", tokenizer.EncodeOptions{ParseSpecial: true})
	require.NoError(t, err)
	w := <-tokenized
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, mustJSON(t, map[string][]int{"tokens": ids}), w.Body.String())
	text, err := tokenizer.Decode(h.model.Tokenizer(), []int{403})
	require.NoError(t, err)
	w = <-detokenized
	assert.Equal(t, http.StatusOK, w.Code)
	assert.JSONEq(t, mustJSON(t, map[string]string{"content": text}), w.Body.String())
	assert.Equal(t, 1, h.preparing.idle(), "the place is free while two wait for the slot")
	assert.Equal(t, 2, h.sched.queued())

	close(release)
	for i, ch := range waiting {
		assert.Equal(t, http.StatusOK, (<-ch).Code)
		if i > 0 {
			assert.Equal(t, 10+i, <-started, "in the order they came")
		}
	}
}
