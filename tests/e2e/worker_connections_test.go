//go:build !js

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// workerdIdleClose is how long workerd keeps an idle keep-alive connection
// open before it closes it (measured: 5 s, whatever the worker).
const workerdIdleClose = 5 * time.Second

// longChat is a non-streamed chat of 200 tokens, BOS and EOS banned so
// that none stops early.
const longChat = `{"messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0, "max_tokens": 200, "logit_bias": {"1": -100, "2": -100}}`

// TestWorkerReadsRequestsWhileItGenerates: a request sent on a kept-alive
// connection while the worker works through a queue of non-streamed chats
// is read and answered. workerd closes a connection idle for 5 s, and when
// the isolate's thread is held past that moment, it closes it with the
// request sent meanwhile unread, and the client sees the connection reset.
// A connection is opened and left idle; just before its 5 s run out, 20
// long chats are sent from other connections, and a GET /health on the idle
// one. (Before the worker handed control back to workerd during and between
// generations, one call into Go ran the whole queue, a second and more of
// holding the thread, and that GET got no answer.)
func TestWorkerReadsRequestsWhileItGenerates(t *testing.T) {
	mf := serveMiniflare(t, edgeWorker(t).build, nil)
	u, err := url.Parse(mf.url)
	require.NoError(t, err)
	idle, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer idle.Close()
	r := bufio.NewReader(idle)
	getHealth := func() (*http.Response, error) {
		if _, err := fmt.Fprintf(idle, "GET /health HTTP/1.1\r\nHost: %s\r\n\r\n", u.Host); err != nil {
			return nil, err
		}
		resp, err := http.ReadResponse(r, nil)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	resp, err := getHealth()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	answered := time.Now()

	time.Sleep(time.Until(answered.Add(workerdIdleClose - 700*time.Millisecond)))
	const n = 20
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequest("POST", mf.url+"/v1/chat/completions", strings.NewReader(longChat))
			if !assert.NoError(t, err) {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("CF-Connecting-IP", fmt.Sprintf("203.0.113.%d", i+1)) // a client each: none is refused its share
			resp, err := noKeepAlive.Do(req)
			if !assert.NoError(t, err, "chat %d", i) {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	time.Sleep(time.Until(answered.Add(workerdIdleClose - 200*time.Millisecond)))
	require.NoError(t, idle.SetDeadline(time.Now().Add(time.Minute)))
	resp, err = getHealth()
	require.NoError(t, err, "the GET sent on the kept-alive connection while the worker generates was not answered")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	wg.Wait()
	close(statuses)
	for s := range statuses {
		assert.Equal(t, http.StatusOK, s)
	}
}

// noKeepAlive is a client that opens a connection for each request.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Minute}

// TestWorkerConcurrentConnections: 100 non-streamed chats sent at once,
// three times over the same kept-alive connections, a client each (the
// CF-Connecting-IP header), are each answered: 200, or 503 where the queue
// (1 generating, 64 waiting) is full. No connection is reset.
func TestWorkerConcurrentConnections(t *testing.T) {
	mf := serveMiniflare(t, edgeWorker(t).build, nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}, Timeout: time.Minute}
	const n = 100
	for round := range 3 {
		counts := map[string]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				outcome := "error"
				defer func() {
					mu.Lock()
					counts[outcome]++
					mu.Unlock()
				}()
				req, err := http.NewRequest("POST", mf.url+"/v1/chat/completions",
					strings.NewReader(`{"messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0, "max_tokens": 20}`))
				if !assert.NoError(t, err) {
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("CF-Connecting-IP", fmt.Sprintf("198.51.100.%d", i+1))
				resp, err := client.Do(req)
				if !assert.NoError(t, err, "round %d, request %d", round, i) {
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if assert.NoError(t, err, "round %d, request %d", round, i) {
					outcome = fmt.Sprint(resp.StatusCode)
				}
			})
		}
		wg.Wait()
		t.Logf("round %d: %v", round, counts)
		assert.Zero(t, counts["error"], "round %d: requests failed", round)
		assert.Equal(t, n, counts["200"]+counts["503"], "round %d: every request is answered 200, or 503 when the queue is full", round)
		assert.GreaterOrEqual(t, counts["200"], 65, "round %d: the queue's 65 places serve", round)
	}
}
