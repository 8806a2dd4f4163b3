//go:build !js

package e2e

import (
	"bufio"
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

// TestWorkerWhileItWorks: what the worker's one instance does for other
// requests while it works, in the test binary's workerd serving the
// embedded model: it answers /health during a long non-streamed
// completion; a queued request whose client leaves is stopped (dropped
// from the queue where request.signal aborts; locally, where it does not,
// by its first write), and nothing whose client left is generated to its
// end; 25 embeddings requests at once are all answered, or refused 503 by
// the queue's design, none reset.
func TestWorkerWhileItWorks(t *testing.T) {
	mf := edgeWorker(t)

	t.Run("health during a non-streamed completion", func(t *testing.T) {
		before := health(t, mf.url)
		ended := make(chan edgeAnswer, 1)
		go func() { // 480 tokens, BOS and EOS banned so that it cannot stop early
			ended <- send(t, "POST", mf.url+"/v1/completions", `{"prompt": "Once upon a time", "temperature": 0, "max_tokens": 480, "logit_bias": {"1": -100, "2": -100}}`)
		}()
		// /health is answered while the completion is in the instance (it
		// is serving it, and it has not ended), not only after.
		for answered := false; !answered; {
			select {
			case a := <-ended:
				t.Fatalf("the completion ended (%d) before /health was answered while it ran", a.status)
			default:
			}
			h := health(t, mf.url)
			answered = h.InFlight == 1 && h.Completions["done"] == before.Completions["done"]
		}
		a := <-ended
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		var c completion
		require.NoError(t, json.Unmarshal(a.body, &c), "%s", a.body)
		assert.Equal(t, 480, c.Usage.CompletionTokens)
	})

	t.Run("a queued client that leaves is stopped by its first write", func(t *testing.T) {
		const long = `{"messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0, "max_tokens": 400, "logit_bias": {"1": -100, "2": -100}, "stream": true}`
		before := health(t, mf.url)
		// The first stream holds the slot until its client leaves.
		first, leaveFirst := context.WithCancel(context.Background())
		defer leaveFirst()
		streaming, firstEnded := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(firstEnded)
			if resp, err := startChat(first, mf.url, "203.0.113.1", long); err == nil {
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "data: ") {
						close(streaming)
						break
					}
				}
				_, _ = io.Copy(io.Discard, resp.Body)
			}
		}()
		<-streaming
		// The second waits in the queue; its client leaves before its turn.
		queued, leaveQueued := context.WithCancel(context.Background())
		go func() {
			if resp, err := startChat(queued, mf.url, "203.0.113.2", long); err == nil {
				resp.Body.Close()
			}
		}()
		for h := health(t, mf.url); h.InFlight < 2; h = health(t, mf.url) {
			time.Sleep(20 * time.Millisecond) // until the instance serves both
		}
		leaveQueued()
		leaveFirst()
		<-firstEnded
		var h instanceState
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			h = health(t, mf.url)
			if h.InFlight == 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "both requests end: %+v", h)
		}
		assert.Equal(t, before.Completions["done"], h.Completions["done"], "neither was generated to its end: %v", h.Completions)
		assert.Equal(t, 2, h.Completions["aborted"]+h.Completions["dropped"]-before.Completions["aborted"]-before.Completions["dropped"], "%v", h.Completions)
		if h.Completions["dropped"] == before.Completions["dropped"] {
			// A local workerd never aborts request.signal for a client that
			// left before the response's head: the request takes the slot,
			// and its first write finds the client gone.
			t.Logf("the queued request was stopped by its first write, not dropped from the queue: %v", h.Completions)
		}
	})

	t.Run("25 embeddings requests at once", func(t *testing.T) {
		texts := make([]string, 32)
		for i := range texts {
			texts[i] = fmt.Sprintf("dog %d", i)
		}
		body := jsonString(t, map[string]any{"input": texts})
		var wg sync.WaitGroup
		statuses, errs := make([]int, 25), make([]error, 25)
		for i := range 25 {
			wg.Go(func() {
				req, err := http.NewRequest("POST", mf.url+"/v1/embeddings", strings.NewReader(body))
				if err != nil {
					errs[i] = err
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("CF-Connecting-IP", fmt.Sprintf("198.51.100.%d", i+1))
				resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
				if err != nil {
					errs[i] = err // a reset connection, an EOF
					return
				}
				defer resp.Body.Close()
				var l embeddingList
				statuses[i] = resp.StatusCode
				if resp.StatusCode == http.StatusOK {
					errs[i] = json.NewDecoder(resp.Body).Decode(&l)
					if errs[i] == nil && len(l.Data) != len(texts) {
						errs[i] = fmt.Errorf("%d vectors for %d texts", len(l.Data), len(texts))
					}
				}
			})
		}
		wg.Wait()
		for i := range 25 {
			if assert.NoError(t, errs[i], "request %d", i) {
				assert.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, statuses[i], "request %d: served, or refused by the queue's design", i)
			}
		}
	})
}

// startChat posts a chat as client, in ctx (cancelling it is
// the client leaving).
func startChat(ctx context.Context, base, client, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("CF-Connecting-IP", client)
	return http.DefaultClient.Do(req)
}
