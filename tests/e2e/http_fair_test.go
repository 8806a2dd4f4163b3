//go:build !js

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two keys, one bursting: key A sends more requests at once than one slot
// and the default queue of 64 hold, key B then sends one.
const (
	fairBurst       = 66 // A's requests at once: 1 slot + the queue of 64, and one more
	fairClientQueue = 4  // -client-queue: A may have 1 + 4 requests in the server
	fairTokens      = 64 // max_tokens of every request, on the slow model
)

// fairStream is what one streamed completion of the fairness test got:
// its status, and the place of its first chunk among every stream's.
type fairStream struct {
	status  int
	first   int64   // 0: none
	queueMS float64 // the server's timings.queue_ms
	err     error
}

// TestHTTPServeKeysDoNotStarveEachOther: against `wasmlm serve -slots 1
// -client-queue 4` (the default queue of 64) with two keys, key A bursts
// 66 streamed completions at once: 5 are admitted, the other 61 get 429
// rate_limit_exceeded with Retry-After at once. Key B's one request, sent
// once A's first one generates, is admitted (200) and generates next,
// before A's 4 waiting ones: it waits for the generation running when it
// came, not for A's burst. (With one FIFO queue, A's burst filled it and
// B got 503, or waited behind all of A's.)
//
// The verdict is an order, not a time: B's first chunk came before the
// first chunks of A's waiting requests. One of them is allowed before it:
// if the machine stalls the test for a whole generation between A's first
// chunk and B's request, the A request that was running is over and the
// next one began before B came.
func TestHTTPServeKeysDoNotStarveEachOther(t *testing.T) {
	p := startServe(t, "-m", slowModel(t), "-slots", "1", "-client-queue", fmt.Sprint(fairClientQueue),
		"-api-key", "sk-a", "-api-key", "sk-b")
	client := &http.Client{Timeout: 2 * time.Minute}
	var chunks atomic.Int64
	firstA := make(chan struct{})
	var firstOnce sync.Once
	stream := func(key string, onFirst func()) fairStream {
		body := fmt.Sprintf(`{"prompt": "Once upon a time", "max_tokens": %d, "stream": true, "stream_options": {"include_usage": true}}`, fairTokens)
		req, err := http.NewRequest("POST", p.url+"/v1/completions", strings.NewReader(body))
		if err != nil {
			return fairStream{err: err}
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			return fairStream{err: err}
		}
		defer resp.Body.Close()
		r := fairStream{status: resp.StatusCode}
		if resp.StatusCode != http.StatusOK {
			var e struct {
				Error errorObject `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				r.err = err
			} else if code := deref(e.Error.Code); code != "rate_limit_exceeded" || resp.Header.Get("Retry-After") != "1" {
				r.err = fmt.Errorf("%d %s, Retry-After %q", resp.StatusCode, code, resp.Header.Get("Retry-After"))
			}
			return r
		}
		rd := newSSEReader(resp.Body)
		for {
			ev, ok, err := rd.read()
			switch {
			case err != nil:
				r.err = err
				return r
			case !ok:
				return r
			case r.first == 0:
				r.first = chunks.Add(1)
				onFirst()
			}
			var c struct {
				Timings *struct {
					QueueMS float64 `json:"queue_ms"`
				} `json:"timings"`
			}
			if ev.data != "[DONE]" && json.Unmarshal([]byte(ev.data), &c) == nil && c.Timings != nil {
				r.queueMS = c.Timings.QueueMS
			}
		}
	}

	results := make(chan fairStream, fairBurst)
	for range fairBurst {
		go func() { results <- stream("sk-a", func() { firstOnce.Do(func() { close(firstA) }) }) }()
	}
	var a []fairStream
	refused := fairBurst - (1 + fairClientQueue)
	for len(a) < refused {
		r := <-results
		require.NoError(t, r.err)
		require.Equal(t, http.StatusTooManyRequests, r.status, "only A's requests beyond 1 + %d are refused, at once", fairClientQueue)
		a = append(a, r)
	}
	<-firstA
	b := stream("sk-b", func() {})
	require.NoError(t, b.err)
	require.Equal(t, http.StatusOK, b.status, "B's request is admitted: the queue has room for it")
	for len(a) < fairBurst {
		r := <-results
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusOK, r.status)
		a = append(a, r)
	}
	var before []int64
	for _, r := range a {
		if r.first != 0 && r.first < b.first {
			before = append(before, r.first)
		}
	}
	t.Logf("A: %d refused (429), %d served; B's request waited %.0f ms, its first chunk after %d of A's", refused, fairBurst-refused, b.queueMS, len(before))
	assert.LessOrEqual(t, len(before), 2, "B's request generated after the A request running when it came, not after A's %d waiting", fairClientQueue)
}
