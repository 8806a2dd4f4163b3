package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
)

// fakeTokens is a stand-in generation: it emits "tok0", "tok1", ... until n
// tokens, ctx's end, or the callback fails, then fails with err if given. It
// does not touch the session.
func fakeTokens(n int, err error) generateFunc { return pacedTokens(n, 0, err) }

// pacedTokens is fakeTokens emitting a token every tick.
func pacedTokens(n int, tick time.Duration, err error) generateFunc {
	return func(ctx context.Context, _ *engine.Session, prompt engine.Prompt, _ engine.GenerateOptions, onToken engine.TokenFunc) (engine.Result, error) {
		res := engine.Result{PromptTokens: prompt.Tokens, FinishReason: engine.FinishLength}
		for i := range n {
			if tick > 0 {
				select {
				case <-time.After(tick):
				case <-ctx.Done():
				}
			}
			if ctx.Err() != nil {
				res.FinishReason = engine.FinishAbort
				return res, nil
			}
			res.Tokens = append(res.Tokens, i)
			if onToken != nil {
				if e := onToken(engine.Token{ID: i, Text: fmt.Sprintf("tok%d", i)}); e != nil {
					res.FinishReason = engine.FinishAbort
					return res, e
				}
			}
		}
		return res, err
	}
}

// TestStreamErrorEvent: an error after the stream started is sent as an
// "error" event with an OpenAI error object, and the stream ends without
// [DONE]; the same error before any token is an ordinary error response.
func TestStreamErrorEvent(t *testing.T) {
	h := newHandler(t, Options{})
	h.generate = fakeTokens(2, errors.New("the engine broke"))
	for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
		body := `{"prompt": "x", "messages": [{"role": "user", "content": "x"}], "stream": true}`
		w := do(h, "POST", path, body)
		require.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
		events := parseSSE(t, w.Body.String())
		last := events[len(events)-1]
		assert.Equal(t, "error", last.name)
		e := apiErrorOf(t, []byte(last.data))
		assert.Equal(t, typeServer, e.Type)
		assert.Contains(t, e.Message, "the engine broke")
		for _, ev := range events[:len(events)-1] {
			assert.Empty(t, ev.name)
			assert.NotEqual(t, "[DONE]", ev.data)
		}
		assert.Contains(t, events[len(events)-2].data, "tok1", "the tokens before the error were sent")
	}

	h.generate = fakeTokens(0, &engine.OptionError{Field: "stop[0]", Problem: "is bad"})
	w := do(h, "POST", "/v1/completions", `{"prompt": "x", "stream": true}`)
	require.Equal(t, http.StatusBadRequest, w.Code)
	e := apiErrorOf(t, w.Body.Bytes())
	assert.Equal(t, "stop[0]", *e.Param, "the engine's field, whole")
}

// TestStreamPanicMidway: a panic in the engine after the first token ends
// the stream with an error event; the session stays usable.
func TestStreamPanicMidway(t *testing.T) {
	h := newHandler(t, Options{})
	h.generate = func(ctx context.Context, s *engine.Session, p engine.Prompt, o engine.GenerateOptions, onToken engine.TokenFunc) (engine.Result, error) {
		n := 0
		return runSession(ctx, s, p, o, func(tok engine.Token) error {
			if n++; n == 3 {
				panic("engine boom")
			}
			return onToken(tok)
		})
	}
	w := do(h, "POST", "/v1/completions", `{"prompt": "Once upon a time", "stream": true, "max_tokens": 10, "temperature": 0}`)
	events := parseSSE(t, w.Body.String())
	require.Len(t, events, 3, "two tokens, then the error")
	assert.Equal(t, "error", events[2].name)
	assert.Contains(t, apiErrorOf(t, []byte(events[2].data)).Message, "engine boom")

	h.generate = runSession
	c := decodeCompletion(t, do(h, "POST", "/v1/completions", `{"prompt": "x", "max_tokens": 3}`))
	assert.Equal(t, 3, c.Usage.CompletionTokens)
}

// completions collects Options.OnCompletion reports.
type completions chan Completion

func (c completions) report(x Completion) { c <- x }

func (c completions) next(t *testing.T) Completion {
	t.Helper()
	select {
	case x := <-c:
		return x
	case <-time.After(10 * time.Second):
		t.Fatal("no completion reported")
		return Completion{}
	}
}

// TestClientDisconnectCancels: a client that hangs up mid-stream ends its
// generation (finish reason "abort") and frees its slot for the next request,
// over a real connection.
func TestClientDisconnectCancels(t *testing.T) {
	done := make(completions, 4)
	h := newHandler(t, Options{QueueSize: -1, OnCompletion: done.report}) // one slot, no queue: a held slot means 503
	// The real engine, slowed to a token a millisecond so that the
	// generation is still running when the client leaves.
	h.generate = func(ctx context.Context, s *engine.Session, p engine.Prompt, o engine.GenerateOptions, onToken engine.TokenFunc) (engine.Result, error) {
		return runSession(ctx, s, p, o, func(tok engine.Token) error {
			time.Sleep(time.Millisecond)
			return onToken(tok)
		})
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	const maxTokens = 500
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions",
		strings.NewReader(fmt.Sprintf(`{"messages": [{"role": "user", "content": "Once"}], "stream": true, "temperature": 0, "max_tokens": %d}`, maxTokens)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(line, "data: "), line)
	cancel()
	resp.Body.Close()

	c := done.next(t)
	assert.Equal(t, engine.FinishAbort, c.FinishReason)
	assert.Less(t, c.CompletionTokens, maxTokens)
	assert.False(t, c.Dropped)
	assert.NoError(t, c.Err, "a client leaving is not a failure")

	// The request is reported before its handler returns and gives back
	// its admission: wait for that, not for a timing.
	require.Eventually(t, func() bool { return h.sched.admittedNow() == 0 }, liveness, time.Millisecond)
	h.generate = fakeTokens(3, nil)
	resp, err = srv.Client().Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "x"}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the slot was freed")
}

// TestQueue: with one slot and room for one waiting request, a third
// request is refused with 503 (an OpenAI error object and Retry-After); a
// waiting request whose client leaves is dropped without ever running; the
// next waiting request runs when the slot frees.
func TestQueue(t *testing.T) {
	done := make(completions, 8)
	h := newHandler(t, Options{Slots: 1, QueueSize: 1, OnCompletion: done.report})
	release := make(chan struct{})
	started := make(chan string, 4)
	h.generate = func(ctx context.Context, _ *engine.Session, prompt engine.Prompt, _ engine.GenerateOptions, _ engine.TokenFunc) (engine.Result, error) {
		started <- fmt.Sprint(prompt.Tokens)
		<-release
		return engine.Result{PromptTokens: prompt.Tokens, Tokens: []int{7}, FinishReason: engine.FinishLength}, nil
	}
	serve := func(ctx context.Context, prompt string) chan *httptest.ResponseRecorder {
		ch := make(chan *httptest.ResponseRecorder, 1)
		r := httptest.NewRequest("POST", "/v1/completions", strings.NewReader(`{"prompt": `+prompt+`}`)).WithContext(ctx)
		r.Header.Set("Content-Type", "application/json")
		go func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			ch <- w
		}()
		return ch
	}
	waitQueued := func(n int) {
		require.Eventually(t, func() bool { return h.sched.queued() == n }, 10*time.Second, time.Millisecond)
	}

	a := serve(context.Background(), "[1]")
	assert.Equal(t, "[1]", <-started)
	bctx, leaveB := context.WithCancel(context.Background())
	b := serve(bctx, "[2]")
	waitQueued(1)

	w := do(h, "POST", "/v1/completions", `{"prompt": [3]}`)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	e := apiErrorOf(t, w.Body.Bytes())
	assert.Equal(t, "server_overloaded", *e.Code)
	assert.Equal(t, typeServer, e.Type)
	assert.ErrorIs(t, done.next(t).Err, ErrQueueFull)

	leaveB()
	<-b
	c := done.next(t)
	assert.True(t, c.Dropped)
	waitQueued(0)

	d := serve(context.Background(), "[4]")
	waitQueued(1)
	release <- struct{}{}
	assert.Equal(t, http.StatusOK, (<-a).Code)
	assert.Equal(t, "[4]", <-started, "the dropped request never ran")
	release <- struct{}{}
	assert.Equal(t, http.StatusOK, (<-d).Code)
	assert.Equal(t, engine.FinishLength, done.next(t).FinishReason)
	assert.Equal(t, engine.FinishLength, done.next(t).FinishReason)
}

// TestStreamFlushesEachToken: over a real connection each token's event
// reaches the client before the next token is generated.
func TestStreamFlushesEachToken(t *testing.T) {
	h := newHandler(t, Options{})
	gate := make(chan struct{}, 1)
	gate <- struct{}{} // the response starts with the first token
	h.generate = func(ctx context.Context, _ *engine.Session, prompt engine.Prompt, _ engine.GenerateOptions, onToken engine.TokenFunc) (engine.Result, error) {
		res := engine.Result{PromptTokens: prompt.Tokens, FinishReason: engine.FinishLength}
		for i := range 3 {
			<-gate // the client lets the next token through once it saw the last
			res.Tokens = append(res.Tokens, i)
			if err := onToken(engine.Token{ID: i, Text: fmt.Sprintf("tok%d", i)}); err != nil {
				return res, err
			}
		}
		return res, nil
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "x", "stream": true}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for i := range 3 {
		if i > 0 {
			gate <- struct{}{}
		}
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		var c streamChunk
		require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &c))
		assert.Equal(t, fmt.Sprintf("tok%d", i), *c.Choices[0].Text)
		_, err = rd.ReadString('\n') // the blank line ending the event
		require.NoError(t, err)
	}
}

// TestQueuedClientHangsUp: over a real connection, a client that hangs up
// while its request waits in the queue is noticed (net/http cancels the
// request's context once the body has been read) and its request dropped.
func TestQueuedClientHangsUp(t *testing.T) {
	done := make(completions, 4)
	h := newHandler(t, Options{Slots: 1, QueueSize: 1, OnCompletion: done.report})
	release := make(chan struct{})
	h.generate = func(ctx context.Context, _ *engine.Session, prompt engine.Prompt, _ engine.GenerateOptions, _ engine.TokenFunc) (engine.Result, error) {
		<-release
		return engine.Result{PromptTokens: prompt.Tokens, FinishReason: engine.FinishLength}, nil
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/completions", strings.NewReader(`{"prompt": "x"}`))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	holder := make(chan error, 1)
	go func() { holder <- post(context.Background()) }()
	require.Eventually(t, func() bool { return h.sched.idle() == 0 }, 10*time.Second, time.Millisecond, "the first request holds the slot")

	ctx, hangUp := context.WithCancel(context.Background())
	waiter := make(chan error, 1)
	go func() { waiter <- post(ctx) }()
	require.Eventually(t, func() bool { return h.sched.queued() == 1 }, 10*time.Second, time.Millisecond)
	hangUp()
	assert.Error(t, <-waiter)
	c := done.next(t)
	assert.True(t, c.Dropped, "the queued request was dropped")
	assert.Zero(t, h.sched.queued())

	close(release)
	require.NoError(t, <-holder)
	assert.False(t, done.next(t).Dropped)
}
