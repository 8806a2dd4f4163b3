//go:build wasmlm_serve

// The page's OpenAI endpoint, only in builds with the tag wasmlm_serve
// (make wasm's wasmlm-serve.wasm): httpapi brings net/http, some 2.8 MB of
// the binary (0.8 MB gzipped), which the page's default build does without
// (serve_off_js.go).

package jsbridge

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall/js"
	"time"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
)

// serveFields are the keys of serveHTTP's options.
var serveFields = []string{"modelName", "signal"}

// served is the OpenAI-compatible API over the loaded model: httpapi's
// handler, made when the first request comes (serveHTTP), and again when
// the model or its name changes.
type served struct {
	model   *engine.Model
	name    string
	handler *httpapi.Handler
}

// parseServeHTTP: serveHTTP({method, url, headers, body}, {modelName,
// signal}, onResponse). It serves one HTTP request with httpapi's handler
// over the loaded model — the page's own OpenAI endpoint (web/serve.js and
// its Service Worker bring the page's fetches here) — and resolves once the
// response is complete. url is the request's path and query ("/v1/models");
// headers an array of [name, value] pairs; body a Uint8Array, an
// ArrayBuffer or undefined. onResponse({status, headers, body}) is called
// when the response starts, then onResponse({body}) each time the handler
// flushes (a Server-Sent Event: each token's chunk as it is sampled), body
// a Uint8Array; the last call may come when the Promise resolves. Aborting
// signal is the client leaving: the request's context ends, and with it its
// generation (or its wait for its turn). A generation takes its turn in the
// queue of generate, stream and chat (the handler borrows the binding's
// session: servedSessions), so a page's calls and its served requests run
// one at a time, in the order they reach the session.
func (b *Binding) parseServeHTTP(args []js.Value) (work, error) {
	req, onResponse := arg(args, 0), arg(args, 2)
	rf, err := b.readFields(req, "request", []string{"method", "url", "headers", "body"})
	if err != nil {
		return nil, err
	}
	if isNullish(req) {
		return nil, invalid("request", "must be an object, got %s", b.describe(req))
	}
	method, err := b.str(b.get(req, "method"), "request.method")
	if err != nil {
		return nil, err
	}
	url, err := b.str(b.get(req, "url"), "request.url")
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(url, "/") {
		return nil, invalid("request.url", "must be a path that starts with /, got %q", url)
	}
	header := http.Header{}
	if hv, ok := rf.value("headers"); ok {
		n, err := b.arrayLen(hv, "request.headers", 1024, false)
		if err != nil {
			return nil, err
		}
		for i := range n {
			field := fmt.Sprintf("request.headers[%d]", i)
			pair, err := b.strings(b.get(hv, i), field, 2)
			if err != nil {
				return nil, err
			}
			if len(pair) != 2 {
				return nil, invalid(field, "must be a [name, value] pair")
			}
			header.Add(pair[0], pair[1])
		}
	}
	var body []byte
	size := int64(0)
	if bv, ok := rf.value("body"); ok {
		if body, size, err = b.bodyBytes(bv); err != nil {
			return nil, err
		}
	}
	f, err := b.readFields(arg(args, 1), "options", serveFields)
	if err != nil {
		return nil, err
	}
	name := httpapi.DefaultModelName
	if v, ok := f.value("modelName"); ok {
		if name, err = b.str(v, "modelName"); err != nil {
			return nil, err
		}
	}
	signal, err := f.signal()
	if err != nil {
		return nil, err
	}
	if typeOf(onResponse) != js.TypeFunction {
		return nil, invalid("onResponse", "must be a function, got %s", b.describe(onResponse))
	}
	return func() (any, error) {
		h, err := b.httpHandler(name)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		unwatch := b.watchAbort(signal, cancel)
		defer unwatch()
		r, err := http.NewRequestWithContext(ctx, method, "http://localhost"+url, bytes.NewReader(body))
		if err != nil {
			return nil, invalid("request", "is not an HTTP request: %v", err)
		}
		r.Header, r.ContentLength = header, size
		w := &jsResponse{b: b, onResponse: onResponse, header: http.Header{}}
		h.ServeHTTP(w, r)
		w.send()
		return nil, w.err
	}, nil
}

// bodyBytes copies a request body into Go memory, but not more than the
// handler reads (one byte beyond its limit tells it the body is too
// large); size is the body's whole length.
func (b *Binding) bodyBytes(v js.Value) (data []byte, size int64, err error) {
	var u8 js.Value
	switch {
	case v.InstanceOf(b.uint8Array):
		u8 = v
	case v.InstanceOf(b.arrayBuffer):
		u8 = b.uint8Array.New(v)
	default:
		return nil, 0, invalid("request.body", "must be a Uint8Array or an ArrayBuffer, got %s", b.describe(v))
	}
	n := u8.Length()
	if n > httpapi.DefaultMaxBodyBytes+1 {
		u8 = u8.Call("subarray", 0, httpapi.DefaultMaxBodyBytes+1)
	}
	data = make([]byte, u8.Length())
	js.CopyBytesToGo(data, u8)
	return data, int64(n), nil
}

// httpHandler returns the API over the loaded model, named name.
func (b *Binding) httpHandler(name string) (*httpapi.Handler, error) {
	m, _, err := b.currentModel()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	s := b.served
	b.mu.Unlock()
	if s != nil && s.model == m && s.name == name {
		return s.handler, nil
	}
	// Every request comes from the page (one client, the same address): it
	// may use the whole queue, as the page's own calls may.
	h, err := httpapi.New(m, httpapi.Options{ModelName: name, ClientQueue: httpapi.DefaultQueueSize, Sessions: &servedSessions{b: b, model: m}})
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.served = &served{model: m, name: name, handler: h}
	b.mu.Unlock()
	return h, nil
}

// servedSessions lends the API the binding's session (httpapi.SessionLender):
// a request borrows it by taking a turn in the binding's queue, as generate
// does, and runs in a context that hands control to the worker's event
// loop between tokens and prompt blocks (yieldingContext), so that the
// worker still hears the page (an abort, another call) while it generates.
type servedSessions struct {
	b     *Binding
	model *engine.Model

	mu   sync.Mutex
	turn *ticket  // the turn of the request holding the session
	y    *yielder // its yielder
}

func (l *servedSessions) Borrow(ctx context.Context) (context.Context, *engine.Session, error) {
	turn := l.b.queue.join()
	if !l.b.queue.wait(ctx, turn) {
		l.b.queue.leave(turn)
		return nil, nil, ctx.Err()
	}
	m, s, err := l.b.current()
	if err == nil && m != l.model {
		err = fmt.Errorf("%w: the model this API served was replaced", ErrNoModel)
	}
	if err != nil {
		l.b.queue.leave(turn)
		return nil, nil, err
	}
	y := l.b.newYielder()
	l.mu.Lock()
	l.turn, l.y = turn, y
	l.mu.Unlock()
	return &yieldingContext{Context: ctx, y: y, last: time.Now(), hook: l.b.passHook}, s, nil
}

func (l *servedSessions) Return(*engine.Session) {
	l.mu.Lock()
	turn, y := l.turn, l.y
	l.turn, l.y = nil, nil
	l.mu.Unlock()
	if y != nil {
		y.close()
	}
	if turn != nil {
		l.b.queue.leave(turn)
	}
}

// jsResponse is the http.ResponseWriter of serveHTTP: it keeps what the
// handler writes until the handler flushes (or returns), then hands it to
// onResponse, the status and headers with the first part.
type jsResponse struct {
	b          *Binding
	onResponse js.Value
	header     http.Header
	status     int    // 0 until the handler writes the header (or a byte)
	started    bool   // the head went to onResponse
	buf        []byte // written, not yet sent
	err        error  // onResponse threw: later writes fail
}

func (w *jsResponse) Header() http.Header { return w.header }

func (w *jsResponse) WriteHeader(status int) {
	if w.status == 0 && status >= 200 {
		w.status = status
	}
}

func (w *jsResponse) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.WriteHeader(http.StatusOK)
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// FlushError sends what was written (http.ResponseController.Flush calls
// it): a Server-Sent Event leaves as soon as it is written.
func (w *jsResponse) FlushError() error {
	w.send()
	return w.err
}

// send calls onResponse with what was written since the last call: with
// the status and headers, the first time.
func (w *jsResponse) send() {
	if w.err != nil || (w.started && len(w.buf) == 0) {
		return
	}
	w.WriteHeader(http.StatusOK)
	part := w.b.object.New()
	if !w.started {
		part.Set("status", w.status)
		var pairs []any
		for name, values := range w.header {
			for _, v := range values {
				pairs = append(pairs, []any{name, v})
			}
		}
		part.Set("headers", pairs)
		w.started = true
	}
	body := w.b.uint8Array.New(len(w.buf))
	js.CopyBytesToJS(body, w.buf)
	part.Set("body", body)
	w.buf = w.buf[:0]
	w.err = w.b.recovered("serveHTTP onResponse", func() error { w.onResponse.Invoke(part); return nil })
}
