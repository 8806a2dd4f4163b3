//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkerFreesRequestsClientsLeft: clients that leave while their
// requests wait in the queue, before any response header came, do not keep
// the worker's one slot. Three long streamed chats from three clients are
// sent together and all three clients leave after 300 ms: the first's
// response stream is cancelled, the other two were still queued, and
// workerd cancels their requests. A short chat sent afterwards, by a client
// that stays, is then served within a minute, by the same instance. (Before
// the worker noticed requests workerd had cancelled, the second took the
// slot when the first left, sent its head into a request no longer there,
// and waited for good: every later request queued behind it or got 503.)
// The worker runs in its own miniflare, so that a lock-up fails this test
// only.
func TestWorkerFreesRequestsClientsLeft(t *testing.T) {
	mf := serveMiniflare(t, edgeWorker(t).build, nil)
	// 200 tokens each, with BOS and EOS banned so that none stops early.
	const long = `{"messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0, "max_tokens": 200, "logit_bias": {"1": -100, "2": -100}, "stream": true}`
	const n = 3
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "POST", mf.url+"/v1/chat/completions", strings.NewReader(long))
			if !assert.NoError(t, err) {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("CF-Connecting-IP", fmt.Sprintf("203.0.113.%d", i+1))
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body) // until the client leaves
				resp.Body.Close()
			}
		})
	}
	wg.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", mf.url+"/v1/chat/completions",
		strings.NewReader(`{"messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0, "max_tokens": 4}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("CF-Connecting-IP", "203.0.113.100")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "a request after the clients left is answered within a minute")
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	var c completion
	require.NoError(t, json.Unmarshal(b, &c), "%s", b)
	assert.Equal(t, 4, c.Usage.CompletionTokens)
	h := health(t, mf.url)
	assert.Equal(t, 1, h.Ordinal, "the same instance")
}
