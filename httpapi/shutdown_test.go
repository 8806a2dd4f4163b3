package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
)

// post sends a JSON POST to srv and returns the response (the caller reads
// and closes it).
func post(t *testing.T, srv *httptest.Server, path, body string) *http.Response {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	return resp
}

// refusedShuttingDown checks a 503 server_shutting_down with Retry-After.
func refusedShuttingDown(t *testing.T, resp *http.Response) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", b)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, "server_shutting_down", *apiErrorOf(t, b).Code)
}

// TestShutdownEndsStreamsCleanly: once Shutdown begins,
// new requests and those waiting for a slot get 503; a stream still running
// when the grace period ends stops with an error event (code
// server_shutting_down) and no [DONE]; Shutdown then returns.
func TestShutdownEndsStreamsCleanly(t *testing.T) {
	done := make(completions, 4)
	h := newHandler(t, Options{Slots: 1, QueueSize: 2, OnCompletion: done.report})
	h.generate = pacedTokens(100_000, 5*time.Millisecond, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()

	stream := post(t, srv, "/v1/completions", `{"prompt": "x", "stream": true}`)
	defer stream.Body.Close()
	rd := bufio.NewReader(stream.Body)
	first, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(first, "data: "), first)

	waiting := make(chan *http.Response, 1)
	go func() { waiting <- post(t, srv, "/v1/completions", `{"prompt": "x"}`) }()
	require.Eventually(t, func() bool { return h.sched.queued() == 1 }, liveness, time.Millisecond)

	const grace = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- h.Shutdown(ctx) }()

	refusedShuttingDown(t, <-waiting)
	assert.ErrorIs(t, done.next(t).Err, ErrShuttingDown, "the waiting request")
	refusedShuttingDown(t, post(t, srv, "/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}]}`))
	assert.ErrorIs(t, done.next(t).Err, ErrShuttingDown, "a new request")

	rest, err := io.ReadAll(rd)
	require.NoError(t, err)
	events := parseSSE(t, first+string(rest))
	last := events[len(events)-1]
	assert.Equal(t, "error", last.name, "the stream ends with an error event")
	e := apiErrorOf(t, []byte(last.data))
	assert.Equal(t, "server_shutting_down", *e.Code)
	assert.Equal(t, typeServer, e.Type)
	for _, ev := range events {
		assert.NotEqual(t, "[DONE]", ev.data)
	}
	assert.Greater(t, len(events), 2, "tokens kept coming during the grace period")
	assert.ErrorIs(t, <-shut, context.DeadlineExceeded)
	c := done.next(t)
	assert.ErrorIs(t, c.Err, ErrShuttingDown, "the stopped stream")
	assert.Equal(t, engine.FinishAbort, c.FinishReason)
}

// TestShutdownLetsGenerationsFinish: generations that end within the grace
// period end as usual ([DONE], a 200), and Shutdown returns nil; a
// non-streamed generation still running when it ends gets the 503.
func TestShutdownLetsGenerationsFinish(t *testing.T) {
	h := newHandler(t, Options{Slots: 2})
	h.generate = pacedTokens(10, 20*time.Millisecond, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	stream := post(t, srv, "/v1/completions", `{"prompt": "x", "stream": true}`)
	defer stream.Body.Close()
	require.Equal(t, http.StatusOK, stream.StatusCode)
	plain := make(chan *http.Response, 1)
	go func() { plain <- post(t, srv, "/v1/completions", `{"prompt": "x"}`) }()
	require.Eventually(t, func() bool { return h.sched.idle() == 0 }, liveness, time.Millisecond)

	require.NoError(t, h.Shutdown(context.Background()))
	b, err := io.ReadAll(stream.Body)
	require.NoError(t, err)
	events := parseSSE(t, string(b))
	assert.Equal(t, "[DONE]", events[len(events)-1].data)
	resp := <-plain
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	h = newHandler(t, Options{})
	h.generate = pacedTokens(100_000, 5*time.Millisecond, nil)
	srv2 := httptest.NewServer(h)
	defer srv2.Close()
	go func() { plain <- post(t, srv2, "/v1/completions", `{"prompt": "x"}`) }()
	require.Eventually(t, func() bool { return h.sched.idle() == 0 }, liveness, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, h.Shutdown(ctx), context.DeadlineExceeded)
	refusedShuttingDown(t, <-plain)
}

// TestShutdownMessageCountsChunks: the error event that ends a stream
// Shutdown stopped says how many tokens were generated and how many chunks
// the client got, each exactly, though the two differ: a chat's role
// chunk, tokens whose text is held back (part of a character), and the
// held-back text the generation releases when it stops.
func TestShutdownMessageCountsChunks(t *testing.T) {
	// Like the engine: the odd tokens' text is held back, and a cancelled
	// generation releases what it holds as a last token (id -1). Six
	// tokens, then it waits for the end.
	holdingBack := func(ctx context.Context, _ *engine.Session, prompt engine.Prompt, _ engine.GenerateOptions, onToken engine.TokenFunc) (engine.Result, error) {
		res := engine.Result{PromptTokens: prompt.Tokens, FinishReason: engine.FinishAbort}
		for i := range 6 {
			res.Tokens = append(res.Tokens, i)
			text := fmt.Sprintf("tok%d", i)
			if i%2 == 1 {
				text = ""
			}
			if err := onToken(engine.Token{ID: i, Text: text}); err != nil {
				return res, err
			}
		}
		<-ctx.Done()
		return res, onToken(engine.Token{ID: -1, Text: "\uFFFD"})
	}
	tests := []struct{ name, path, body string }{
		{"completion", "/v1/completions", `{"prompt": "x", "stream": true}`},
		{"chat", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}], "stream": true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(completions, 1)
			h := newHandler(t, Options{Slots: 1, OnCompletion: done.report})
			h.generate = holdingBack
			srv := httptest.NewServer(h)
			defer srv.Close()
			stream := post(t, srv, tt.path, tt.body)
			defer stream.Body.Close()
			rd := bufio.NewReader(stream.Body)
			first, err := rd.ReadString('\n')
			require.NoError(t, err)

			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			assert.ErrorIs(t, h.Shutdown(ctx), context.DeadlineExceeded)
			rest, err := io.ReadAll(rd)
			require.NoError(t, err)
			events := parseSSE(t, first+string(rest))
			last := events[len(events)-1]
			require.Equal(t, "error", last.name)
			chunks := len(events) - 1
			for _, ev := range events[:chunks] {
				require.Empty(t, ev.name, "every event before the error is a chunk")
			}
			tokens := done.next(t).CompletionTokens
			assert.NotEqual(t, tokens, chunks, "the case counts chunks that are not tokens")
			want := fmt.Sprintf("The server is shutting down: the generation was stopped after %d tokens, sent in %d chunks. Retry later.", tokens, chunks)
			assert.Equal(t, want, apiErrorOf(t, []byte(last.data)).Message)
		})
	}
}
