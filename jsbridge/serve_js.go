//go:build wasmlm_serve

// The page's OpenAI endpoint, only in builds with the tag wasmlm_serve
// (make wasm's wasmlm-serve.wasm): httpapi brings net/http, some 2.8 MB of
// the binary (0.8 MB gzipped), which the page's default build does without
// (serve_off_js.go).

package jsbridge

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall/js"
	"time"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/jsbridge/jshttp"
)

// serveFields are the keys of serveHTTP's options: contextShift and nKeep
// are load's contextShift default, context_shift and n_keep for a
// completion that omits them, as chat's are.
var serveFields = []string{"modelName", "signal", "contextShift", "nKeep"}

// served is the OpenAI-compatible API over the loaded model: httpapi's
// handler, made when the first request comes (serveHTTP), and again when
// the model, its name or the shift's defaults change.
type served struct {
	model   *engine.Model
	name    string
	shift   shiftDefault
	handler *httpapi.Handler
}

// shiftDefault is the served API's context_shift and n_keep for a request
// that omits them (httpapi.Options.ContextShift, NKeep).
type shiftDefault struct {
	on   bool
	keep int
}

// parseServeHTTP: serveHTTP({method, url, headers, body}, {modelName,
// signal, contextShift, nKeep}, onResponse). It serves one HTTP request with httpapi's handler
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
		var ok bool
		if body, size, ok = jshttp.Body(bv, httpapi.DefaultMaxBodyBytes); !ok {
			return nil, invalid("request.body", "must be a Uint8Array or an ArrayBuffer, got %s", b.describe(bv))
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
	var shift shiftDefault
	if shift.on, err = f.boolean("contextShift", false); err != nil {
		return nil, err
	}
	if shift.keep, err = f.integer("nKeep", 0, -1, maxInt32, ">= -1 (-1: the whole prompt)"); err != nil {
		return nil, err
	}
	if typeOf(onResponse) != js.TypeFunction {
		return nil, invalid("onResponse", "must be a function, got %s", b.describe(onResponse))
	}
	return func() (any, error) {
		h, err := b.httpHandler(name, shift)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		unwatch := b.watchAbort(signal, cancel)
		defer unwatch()
		r, err := jshttp.NewRequest(ctx, method, "http://localhost"+url, header, body, size)
		if err != nil {
			return nil, invalid("request", "is not an HTTP request: %v", err)
		}
		return nil, jshttp.Serve(h, r, func(part js.Value) error {
			return b.recovered("serveHTTP onResponse", func() error { onResponse.Invoke(part); return nil })
		})
	}, nil
}

// httpHandler returns the API over the loaded model, named name, shifting
// the context by default as shift says.
func (b *Binding) httpHandler(name string, shift shiftDefault) (*httpapi.Handler, error) {
	m, _, err := b.currentModel()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	s := b.served
	b.mu.Unlock()
	if s != nil && s.model == m && s.name == name && s.shift == shift {
		return s.handler, nil
	}
	// Every request comes from the page (one client, the same address): it
	// may use the whole queue, as the page's own calls may.
	h, err := httpapi.New(m, httpapi.Options{ModelName: name, ClientQueue: httpapi.DefaultQueueSize, Sessions: &servedSessions{b: b, model: m},
		ContextShift: shift.on, NKeep: shift.keep, ContextHint: contextHint})
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.served = &served{model: m, name: name, shift: shift, handler: h}
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
