//go:build !js

package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stallBound is the longest the worker may go without sending anything to
// any of the streams it has open: far above what a chunk takes (well under
// a second on a loaded machine), far below the 15 s after which the
// instance gives up on a resume that never came.
const stallBound = 5 * time.Second

// TestWorkerStreamsNeverStall: rounds of concurrent streamed chats, a
// client each, all complete with data: [DONE], and while any of a round's streams is open
// the worker never goes stallBound without a chunk (or a head) reaching one
// of them. The instance hands control back to workerd between tokens and
// waits to be resumed from the request's own context; a resume that never
// came (a wake-up run in another request's context, where the request's
// timer dies with that request) stalled the queue until the instance's
// 15 s net ended the request.
func TestWorkerStreamsNeverStall(t *testing.T) {
	mf := serveMiniflare(t, edgeWorker(t).build, nil)
	// Rounds of the queue's whole capacity (1 generating, 64 waiting), each
	// on connections of its own, closed after it, for stallRounds (at least
	// minRounds): a local workerd was seen to start running wake-ups in
	// other requests' contexts after some hundreds to a few thousand such
	// requests, most often as a round's new connections came after the last
	// round's had closed.
	const n, minRounds = 64, 3
	const stallRounds = 20 * time.Second
	began := time.Now()
	body := `{"messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0, "max_tokens": 16, "stream": true}`
	for round := 0; round < minRounds || time.Since(began) < stallRounds; round++ {
		transport := &http.Transport{MaxIdleConnsPerHost: n}
		client := &http.Client{Transport: transport, Timeout: time.Minute}
		var mu sync.Mutex
		var times []time.Time // every head and chunk of the round, as it arrived
		note := func() {
			mu.Lock()
			times = append(times, time.Now())
			mu.Unlock()
		}
		start := time.Now()
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				req, err := http.NewRequest("POST", mf.url+"/v1/chat/completions", strings.NewReader(body))
				if !assert.NoError(t, err) {
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("CF-Connecting-IP", fmt.Sprintf("192.0.2.%d", i+1))
				resp, err := client.Do(req)
				if !assert.NoError(t, err, "round %d, stream %d", round, i) {
					return
				}
				defer resp.Body.Close()
				note()
				if !assert.Equal(t, http.StatusOK, resp.StatusCode, "round %d, stream %d", round, i) {
					return
				}
				done := false
				lines := bufio.NewScanner(resp.Body)
				for lines.Scan() {
					if line := lines.Text(); line != "" {
						note()
						done = done || line == "data: [DONE]"
					}
				}
				assert.NoError(t, lines.Err(), "round %d, stream %d", round, i)
				assert.True(t, done, "round %d, stream %d ended without data: [DONE]", round, i)
			})
		}
		wg.Wait()
		transport.CloseIdleConnections()
		require.NotEmpty(t, times)
		slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
		worst, last := times[0].Sub(start), times[0]
		for _, at := range times[1:] {
			worst = max(worst, at.Sub(last))
			last = at
		}
		t.Logf("round %d: %d streams in %v, longest silence %v", round, n, time.Since(start).Round(time.Millisecond), worst.Round(time.Millisecond))
		assert.Less(t, worst, stallBound, "round %d: the worker sent nothing to any of its open streams for %v", round, worst)
	}
}
