//go:build !js

package httpapi

import (
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

// Embeddings stopped half-way, natively only: in js/wasm one thread runs
// every goroutine and a long computation is not preempted, so the big
// embedding these tests stop would run to its end before the test could
// see it start, let alone cancel it. (The edge worker serves one request
// per Go instance, and its clients cannot abort: see httpapi/README.md,
// "Limits at the edge".)

// bigEmbedding is a request that takes seconds with the default model:
// 2048 texts, a pass each.
func bigEmbedding(t testing.TB) string {
	in := make([]string, engine.MaxEmbedInputs)
	for i := range in {
		in[i] = fmt.Sprintf("Once upon a time there was a little girl named Lily %d", i)
	}
	return mustJSON(t, map[string]any{"input": in})
}

// sendEmbedding posts an embeddings request to srv in ctx, which may end
// it, and returns the client's error.
func sendEmbedding(t *testing.T, ctx context.Context, srv *httptest.Server, body string) error {
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/embeddings", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// TestEmbeddingClientLeaves: a client that hangs up stops its embedding
// between the engine's passes, long before its end, and frees the slot; one
// that leaves while it waits is dropped without running.
func TestEmbeddingClientLeaves(t *testing.T) {
	done := make(completions, 4)
	h := newHandler(t, Options{Slots: 1, MaxEmbedTokens: -1, OnCompletion: done.report}) // bigEmbedding is beyond the default cap
	srv := httptest.NewServer(h)
	defer srv.Close()
	big := bigEmbedding(t)

	send := func(ctx context.Context, body string) error { return sendEmbedding(t, ctx, srv, body) }
	ctx, cancel := context.WithCancel(context.Background())
	running := make(chan error, 1)
	go func() { running <- send(ctx, big) }()
	waitCtx, cancelWait := context.WithCancel(context.Background())
	waiting := make(chan error, 1)
	require.Eventually(t, func() bool { return h.sched.idle() == 0 }, liveness, time.Millisecond, "the first takes the slot")
	go func() { waiting <- send(waitCtx, `{"input": "waits"}`) }()
	require.Eventually(t, func() bool { return h.sched.queued() == 1 }, liveness, time.Millisecond)

	cancelWait()
	require.Error(t, <-waiting)
	left := done.next(t)
	assert.True(t, left.Dropped, "the waiting request never ran")
	assert.Equal(t, 1, left.Inputs)

	cancel()
	require.Error(t, <-running)
	stopped := done.next(t)
	// The engine looks at the context before each text only: an embedding
	// that ran to its end would be answered, "stop".
	assert.Equal(t, engine.FinishAbort, stopped.FinishReason, "stopped between passes, not run to its end")
	assert.NoError(t, stopped.Err)

	w := do(h, "POST", "/v1/embeddings", `{"input": "after"}`)
	decodeEmbeddings(t, w)
}

// TestEmbeddingQueueFullAndShutdown: a request that finds the slot busy
// and no room to wait gets 503; Shutdown stops a running embedding when its
// grace ends, answered 503 server_shutting_down.
func TestEmbeddingQueueFullAndShutdown(t *testing.T) {
	done := make(completions, 4)
	h := newHandler(t, Options{Slots: 1, QueueSize: -1, MaxEmbedTokens: -1, OnCompletion: done.report})
	srv := httptest.NewServer(h)
	defer srv.Close()
	running := make(chan *http.Response, 1)
	go func() { running <- post(t, srv, "/v1/embeddings", bigEmbedding(t)) }()
	require.Eventually(t, func() bool { return h.sched.idle() == 0 }, liveness, time.Millisecond)

	full := post(t, srv, "/v1/embeddings", `{"input": "no room"}`)
	b, err := io.ReadAll(full.Body)
	full.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, full.StatusCode, "%s", b)
	assert.Equal(t, "server_overloaded", *apiErrorOf(t, b).Code)
	assert.ErrorIs(t, done.next(t).Err, ErrQueueFull)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, h.Shutdown(ctx), context.DeadlineExceeded)
	refusedShuttingDown(t, <-running)
	assert.ErrorIs(t, done.next(t).Err, ErrShuttingDown)
}
