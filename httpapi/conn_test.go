package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
)

// The tests of what the handler does about connections run it behind a real
// listener (httptest.NewServer), where deadlines work. Their time limits are
// short here and the checks generous: they prove that a connection is cut,
// not how fast.

// liveness bounds how long a test waits for something that a deadline of a
// fraction of a second must bring about.
const liveness = 10 * time.Second

// rawConn is a client connection driven by hand, to send part of a request
// and stall.
type rawConn struct {
	t *testing.T
	net.Conn
	rd *bufio.Reader
}

func dial(t *testing.T, srv *httptest.Server) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, Conn: c, rd: bufio.NewReader(c)}
}

// startPost sends the headers of a JSON POST declaring length bytes of body,
// and then part of the body.
func (c *rawConn) startPost(path string, length int, part string) {
	c.t.Helper()
	_, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, length, part)
	require.NoError(c.t, err)
}

// response reads the server's answer, waiting at most liveness.
func (c *rawConn) response() *http.Response {
	c.t.Helper()
	require.NoError(c.t, c.SetReadDeadline(time.Now().Add(liveness)))
	resp, err := http.ReadResponse(c.rd, nil)
	require.NoError(c.t, err, "the server answered within %v", liveness)
	return resp
}

// closedByServer waits (at most liveness) for the server to close the
// connection.
func (c *rawConn) closedByServer() {
	c.t.Helper()
	require.NoError(c.t, c.SetReadDeadline(time.Now().Add(liveness)))
	_, err := io.Copy(io.Discard, c.rd)
	require.NoError(c.t, err, "the server closed the connection within %v", liveness)
}

// TestBodiesCountAgainstTheQueue: a request takes its
// place before its body is read, so with one slot and one place in the
// queue, two clients stalled half-way through their bodies leave no room:
// a third request is refused with 503 without a byte of its body read.
func TestBodiesCountAgainstTheQueue(t *testing.T) {
	done := make(completions, 4)
	h := newHandler(t, Options{Slots: 1, QueueSize: 1, OnCompletion: done.report})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // after the connections dialled, which Cleanup closes first
	for range 2 {
		dial(t, srv).startPost("/v1/completions", 1000, `{"prompt": "`)
	}
	require.Eventually(t, func() bool { return h.sched.admittedNow() == 2 }, liveness, time.Millisecond)

	body := &countingReader{r: strings.NewReader(`{"prompt": "x"}`)}
	r := httptest.NewRequest("POST", "/v1/completions", body)
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
	assert.Equal(t, "server_overloaded", *apiErrorOf(t, w.Body.Bytes()).Code)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	assert.Zero(t, body.reads, "the refused request's body was not read")
	assert.ErrorIs(t, done.next(t).Err, ErrQueueFull)

	// /tokenize holds a body too, and is refused alike.
	w = do(h, "POST", "/tokenize", `{"content": "x"}`)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
}

type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// TestBodyDeadline: under a server with a
// ReadTimeout, as wasmlm serve sets it, a body that stalls, or trickles in a
// byte at a time, is cut when the timeout runs out — 408 and the connection
// closed — and its place is free again.
func TestBodyDeadline(t *testing.T) {
	h := newHandler(t, Options{Slots: 1, QueueSize: -1})
	h.generate = fakeTokens(3, nil)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close) // after the connections dialled, which Cleanup closes first

	stalled := dial(t, srv)
	stalled.startPost("/v1/completions", 1000, `{"prompt": "`)
	require.Eventually(t, func() bool { return h.sched.admittedNow() == 1 }, liveness, time.Millisecond)
	resp, err := srv.Client().Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "x"}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the stalled body holds the only place")

	resp = stalled.response()
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "request_timeout", *apiErrorOf(t, b).Code)
	stalled.closedByServer()

	trickle := dial(t, srv)
	trickle.startPost("/tokenize", 1000, `{`)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				if _, err := trickle.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	assert.Equal(t, http.StatusRequestTimeout, trickle.response().StatusCode, "the deadline is for the whole body, not each read")

	require.Eventually(t, func() bool { return h.sched.admittedNow() == 0 }, liveness, time.Millisecond)
	resp, err = srv.Client().Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "x"}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the place is free again")
}

// TestSlowReaderIsCut: a streaming client that stops
// reading is cut once a write has waited WriteTimeout, which ends its
// generation and frees the slot.
func TestSlowReaderIsCut(t *testing.T) {
	done := make(completions, 2)
	h := newHandler(t, Options{Slots: 1, QueueSize: -1, WriteTimeout: 300 * time.Millisecond, OnCompletion: done.report})
	big := strings.Repeat("x", 64<<10)
	h.generate = func(ctx context.Context, _ *engine.Session, prompt engine.Prompt, _ engine.GenerateOptions, onToken engine.TokenFunc) (engine.Result, error) {
		res := engine.Result{PromptTokens: prompt.Tokens}
		for ctx.Err() == nil { // until the client is gone: far more than any socket buffer holds
			res.Tokens = append(res.Tokens, 0)
			if err := onToken(engine.Token{Text: big}); err != nil {
				res.FinishReason = engine.FinishAbort
				return res, err
			}
		}
		res.FinishReason = engine.FinishAbort
		return res, nil
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close) // after the connections dialled, which Cleanup closes first
	c := dial(t, srv)
	c.startPost("/v1/completions", len(`{"prompt": "x", "stream": true}`), `{"prompt": "x", "stream": true}`)
	assert.Equal(t, http.StatusOK, c.response().StatusCode) // and then read no more

	got := done.next(t)
	assert.Equal(t, engine.FinishAbort, got.FinishReason, "the generation ended when its client was cut")
	assert.Equal(t, 1, h.sched.idle(), "the slot is free")
}

// TestTimeoutsSpareLongStreams: a stream that outlasts
// the server's ReadTimeout and WriteTimeout many times over, with pauses
// longer than either between its tokens, arrives whole: net/http lifts the
// read deadline once the body is in, and each write has its own.
func TestTimeoutsSpareLongStreams(t *testing.T) {
	const pause, timeout = 250 * time.Millisecond, 100 * time.Millisecond
	h := newHandler(t, Options{WriteTimeout: timeout})
	h.generate = pacedTokens(4, pause, nil)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadTimeout = timeout
	srv.Start()
	defer srv.Close()
	for range 2 { // the second request on the same kept-alive connection
		resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"messages": [{"role": "user", "content": "x"}], "stream": true}`))
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		events := parseSSE(t, string(b))
		require.Len(t, events, 7, "role, 4 tokens, finish, [DONE]: %s", b)
		assert.Equal(t, "[DONE]", events[6].data)
	}
}
