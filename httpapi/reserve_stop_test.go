//go:build !js

package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
)

// TestAbortedEmbeddingsAreCharged: an embeddings request whose client
// leaves half-way (natively only: see embeddings_stop_test.go) is charged
// its whole reservation, the tokens it was counted at, since the engine
// does not say how far it got; one that finishes is charged what it used.
func TestAbortedEmbeddingsAreCharged(t *testing.T) {
	const allowance = 1_000_000
	big := bigEmbedding(t)
	counted := decodeCount(t, do(newHandler(t, Options{MaxEmbedTokens: 1}), "POST", "/v1/embeddings", big))
	require.Greater(t, counted, DefaultMaxEmbedTokens)

	limiter, _ := newTestLimiter(t, Limits{TokensPerMinute: allowance})
	done := make(completions, 4)
	h := newHandler(t, Options{Slots: 1, MaxEmbedTokens: -1, Limiter: limiter, OnCompletion: done.report})
	srv := httptest.NewServer(h)
	defer srv.Close()
	const client = "addr:127.0.0.1"
	ctx, cancel := context.WithCancel(context.Background())
	running := make(chan error, 1)
	go func() { running <- sendEmbedding(t, ctx, srv, big) }()
	// Once reserved, it takes the free slot whatever its context says, and
	// the engine sees the cancel between its passes.
	require.Eventually(t, func() bool { return tokensLeft(limiter, client) < allowance }, liveness, time.Millisecond)
	assert.Equal(t, float64(allowance-counted), tokensLeft(limiter, client), "reserved: the tokens counted")
	cancel()
	require.Error(t, <-running)
	require.Equal(t, engine.FinishAbort, done.next(t).FinishReason)
	assert.Equal(t, float64(allowance-counted), tokensLeft(limiter, client), "charged its reservation")

	resp := post(t, srv, "/v1/embeddings", `{"input": "after"}`)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	used := done.next(t).PromptTokens
	assert.Equal(t, float64(allowance-counted-used), tokensLeft(limiter, client), "a finished one: what it used")
}

// decodeCount is the count a max_tokens_per_request refusal gives.
func decodeCount(t *testing.T, w *httptest.ResponseRecorder) int {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
	var n int
	_, err := fmt.Sscanf(apiErrorOf(t, w.Body.Bytes()).Message, "Requested %d tokens", &n)
	require.NoError(t, err)
	return n
}
