//go:build js && wasm

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"syscall/js"
	"time"

	"github.com/wasmlm/wasmlm/cmd/worker/internal/modelsource"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/jsbridge/jshttp"
)

// instance is the isolate's Go instance: the env it read once when it
// started, the API over the loaded model, and the counts GET /health
// reports of it.
type instance struct {
	ordinal int        // the how-many-th Go instance of the isolate (1 for the first)
	live    int        // the isolate's live instances when it started, itself included
	cfg     edgeConfig // the env, read once
	limiter httpapi.Limiter
	memory  js.Value     // worker.mjs's memory(): the isolate's memory as /health reports it
	broken  http.Handler // the env is misconfigured: it answers every request

	mu       sync.Mutex   // held while the model loads, so that it loads once
	api      http.Handler // nil until a load succeeds
	loads    int          // the model loads that succeeded
	notice   string       // what of the env the loaded model is not served as asked (GET /health's "notice")
	ended    completions  // the requests of the API that ended, by how
	requests int          // the requests this instance was given, the current one included
	inFlight int          // the requests other than GET /health it is serving (waiting, preparing, running)
}

// newInstance reads the env through getenv, once: an isolate's env does
// not change (a changed secret or variable is a new deployment, with new
// isolates).
func newInstance(ordinal int, getenv func(string) (string, error)) *instance {
	in := &instance{ordinal: ordinal}
	cfg, err := readConfig(getenv)
	if err == nil {
		in.cfg = cfg
		in.limiter, err = newLimiter(cfg)
	}
	if err != nil {
		in.broken = failure(err)
	}
	return in
}

// handler is the API, loading the model if no load has succeeded yet: a
// failed load is not kept, so the next request tries again (a fixed
// object heals the worker without a new isolate), and meanwhile the
// failure answers.
func (in *instance) handler() http.Handler {
	if in.broken != nil {
		return in.broken
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.api != nil {
		return in.api
	}
	h, notice, err := newHandler(in.cfg, in.limiter, in.ended.add)
	if err != nil {
		return failure(err)
	}
	if notice != "" {
		fmt.Fprintln(os.Stderr, "wasmlm:", notice) // once per load: workerd's log
	}
	in.api, in.notice = h, notice
	in.loads++
	return h
}

// completions counts the completion, embeddings and rerank requests that
// ended (httpapi.Options.OnCompletion), for GET /health's
// "completions": {"done": D, "dropped": Q, "aborted": A, "failed": F,
// "generated_tokens": T}. D were answered; Q were dropped because their
// client left while they waited (for a place to be prepared or for the
// slot), so that they cost no generation; A were stopped in the slot
// because their client left; F failed or were refused (503, 429); T is the
// tokens every completion generated.
type completions struct {
	mu                                     sync.Mutex
	done, dropped, aborted, failed, tokens int
}

func (c *completions) add(r httpapi.Completion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case r.Dropped:
		c.dropped++
	case r.Err != nil:
		c.failed++
	case r.FinishReason == engine.FinishAbort:
		c.aborted++
	default:
		c.done++
	}
	c.tokens += r.CompletionTokens
}

func (c *completions) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return map[string]int{"done": c.done, "dropped": c.dropped, "aborted": c.aborted, "failed": c.failed, "generated_tokens": c.tokens}
}

// testRoutes are handlers the instance serves ahead of the API, by path:
// none in the worker; a build with the tag wasmlm_testhooks adds its own.
var testRoutes map[string]http.HandlerFunc

// testHealth, set in a build with the tag wasmlm_testhooks, adds to the
// instance object of GET /health.
var testHealth func(in *instance, health map[string]any)

// ServeHTTP serves a request: a test route, or the API, whose GET /health
// answer gains the instance's counts, "instance": {"ordinal": N,
// "requests": R, "loads": L} (see the package doc).
func (in *instance) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in.requests++
	if h, ok := testRoutes[r.URL.Path]; ok {
		h(w, r)
		return
	}
	h := in.handler()
	if r.URL.Path != "/health" || r.Method != http.MethodGet {
		in.inFlight++
		defer func() { in.inFlight-- }()
		h.ServeHTTP(w, r)
		return
	}
	rec := &recorder{header: w.Header()}
	h.ServeHTTP(rec, r)
	body := rec.body.Bytes()
	var health map[string]any
	if rec.status == http.StatusOK && json.Unmarshal(body, &health) == nil {
		inst := map[string]any{"ordinal": in.ordinal, "requests": in.requests, "loads": in.loads, "in_flight": in.inFlight}
		if in.notice != "" {
			inst["notice"] = in.notice
		}
		inst["completions"] = in.ended.snapshot()
		if in.memory.Type() == js.TypeFunction {
			m := in.memory.Invoke()
			mem := map[string]any{"wasm_bytes": m.Get("wasm_bytes").Int(), "js_heap_bytes": nil, "budget_bytes": modelsource.DefaultBudget}
			if h := m.Get("js_heap_bytes"); h.Type() == js.TypeNumber {
				mem["js_heap_bytes"] = h.Int()
			}
			inst["memory"] = mem
		}
		if testHealth != nil {
			testHealth(in, inst)
		}
		health["instance"] = inst
		if b, err := json.Marshal(health); err == nil {
			body = append(b, '\n')
		}
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(statusOr200(rec.status))
	_, _ = w.Write(body)
}

// statusOr200 is status, or 200 when the handler wrote none.
func statusOr200(status int) int {
	if status == 0 {
		return http.StatusOK
	}
	return status
}

// recorder keeps a response (GET /health's, small) to extend it.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

// resumeTimeout is how long a request's work waits for worker.mjs to
// resume it (after a part, or a turn) before it takes the request's
// context in workerd to be gone and ends the request, freeing the slot.
// worker.mjs resumes from a timer set in the request's own context, or at
// the latest from the request's own next wake, so this is only a net: it
// fires if workerd stops running the request's context without aborting
// its request.signal. The Go timer fires when the instance next runs, at
// the latest with the next request.
const resumeTimeout = 15 * time.Second

// errClientGone is what a write returns once worker.mjs says the
// response's stream is gone (the client left).
var errClientGone = errors.New("the client closed the response")

// serveJS is the entry point worker.mjs calls for each request:
// serve({method, url, headers, body}, onResponse, done, signal). url is
// the request's URL, headers an array of [name, value] pairs, body a
// Uint8Array or undefined. onResponse(part, resume) takes the response a
// part at a time (jshttp.Serve); the instance waits until worker.mjs calls
// resume(ok), ok false once the client is gone. onResponse(null, resume)
// is a turn (see turningContext): the request's work waits for resume(). done() is called when the
// response is complete, done(message) when it failed. Aborting signal (the
// client left) ends the request's context, and with it its generation or
// its wait in the queue.
//
// worker.mjs handles each part, and resumes the instance, from the
// request's own context and in a task of its own: so each flushed chunk
// reaches the client as it is written, requests that arrive meanwhile join
// the queue, and the JavaScript objects of a request (its Response, its
// stream) are only ever touched by that request, as workerd requires.
func (in *instance) serveJS(_ js.Value, args []js.Value) any {
	req, onResponse, done, signal := args[0], args[1], args[2], args[3]
	go func() {
		if err := in.serve(req, onResponse, signal); err != nil {
			done.Invoke(err.Error())
			return
		}
		done.Invoke()
	}()
	return nil
}

// serve runs one request of serveJS.
func (in *instance) serve(req, onResponse, signal js.Value) error {
	header, body, size := jshttp.Parts(req, httpapi.DefaultMaxBodyBytes)
	// The turns' callback is released after the context ends (defers run
	// last first), so that no turn can be asked for once it is gone.
	turned := make(chan struct{}, 1)
	onTurn := js.FuncOf(func(js.Value, []js.Value) any {
		select {
		case turned <- struct{}{}:
		default:
		}
		return nil
	})
	defer onTurn.Release()
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := &turningContext{Context: base, turn: func() {
		onResponse.Invoke(js.Null(), onTurn)
		select {
		case <-turned:
		case <-base.Done():
		case <-time.After(resumeTimeout):
			cancel() // the request's context in workerd runs no more: end its work
		}
	}}
	onAbort := js.FuncOf(func(js.Value, []js.Value) any { cancel(); return nil })
	defer onAbort.Release()
	signal.Call("addEventListener", "abort", onAbort)
	defer signal.Call("removeEventListener", "abort", onAbort)
	if signal.Get("aborted").Truthy() { // before this goroutine ran
		cancel()
	}
	r, err := jshttp.NewRequest(ctx, req.Get("method").String(), req.Get("url").String(), header, body, size)
	if err != nil {
		return err
	}
	// The client's address, for limits without keys (Cloudflare sets the
	// header; a local workerd does not).
	r.RemoteAddr = header.Get("CF-Connecting-IP")
	resumed := make(chan bool, 1)
	resume := js.FuncOf(func(_ js.Value, args []js.Value) any {
		resumed <- len(args) == 0 || args[0].Truthy()
		return nil
	})
	defer resume.Release()
	return jshttp.Serve(in, r, func(part js.Value) error {
		onResponse.Invoke(part, resume)
		// A request whose client left may never resume: its context in
		// workerd is gone, and the part with it. Its abort ends the wait.
		select {
		case ok := <-resumed:
			if !ok {
				return errClientGone
			}
			return nil
		case <-base.Done():
			return errClientGone
		case <-time.After(resumeTimeout):
			return errClientGone
		}
	})
}

// turningContext is a request's context whose Err hands control to the
// JavaScript event loop (turn) each time it is asked before it answers:
// the engine asks once per generated token, prompt block (32 tokens) and
// embedding pass. A call from JavaScript into Go returns only once every
// goroutine waits, so between two turns the instance holds the isolate's
// thread: without turns, the request a finished one hands the slot to
// would generate within the same call, and so would the next, the whole
// queue holding the thread for as long; workerd meanwhile reads no
// request, writes no response, and closes the keep-alive connections whose
// 5 s idle time ran out, with the requests sent on them unread (the client
// sees them reset). Another request needs a few turns to be read, served
// and written (each JavaScript call into Go runs the request's work on to
// its next turn), so a turn at every ask, not every few, is what lets
// /health through during one long prompt or one large embeddings request:
// a turn costs tens of microseconds, little beside a token of any but the
// tiniest model. Time cannot space the turns: workerd
// does not advance the clock while code runs. turn waits for the request's
// own context in workerd to resume it, so its work runs there.
type turningContext struct {
	context.Context
	turn func()
	mu   sync.Mutex // held while turning: a concurrent Err does not turn again
}

func (c *turningContext) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.mu.TryLock() {
		c.turn()
		c.mu.Unlock()
	}
	return c.Context.Err()
}
