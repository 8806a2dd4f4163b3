package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// What the handler does about the connection under a request: a time limit
// on each write, and admission before the body is read.

// writer is the ResponseWriter the handler serves through. It remembers
// whether the response has started, so that a recovered panic knows whether
// an error response can still be sent, and gives every write
// Options.WriteTimeout from when it starts.
type writer struct {
	http.ResponseWriter
	rc           *http.ResponseController // the underlying writer's
	writeTimeout time.Duration
	started      bool
}

// newWriter wraps w.
func (h *Handler) newWriter(w http.ResponseWriter) *writer {
	sw := &writer{ResponseWriter: w, rc: http.NewResponseController(w), writeTimeout: h.opts.WriteTimeout}
	sw.extend()
	return sw
}

// extend gives the next write WriteTimeout. Deadlines are per connection, so
// it also bounds what net/http writes itself (a 100 Continue, the end of the
// response), which a deadline left from an earlier request would fail.
func (w *writer) extend() {
	if w.writeTimeout > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.writeTimeout)) // ErrNotSupported: no deadlines here
	}
}

func (w *writer) WriteHeader(status int) {
	w.started = true
	w.ResponseWriter.WriteHeader(status)
}

func (w *writer) Write(b []byte) (int, error) {
	w.started = true
	w.extend()
	return w.ResponseWriter.Write(b)
}

// FlushError flushes, within WriteTimeout (http.ResponseController.Flush
// calls it).
func (w *writer) FlushError() error {
	w.extend()
	return w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the writer's other methods.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// admit serves a POST once it has a place: a slot or a place in the queue,
// taken before its body is read, and kept until it is answered. A request
// that finds none is refused at once, its body unread: 503, or 429 when its
// own client holds all the places one client may.
func (h *Handler) admit(w *writer, r *http.Request, rt route) {
	if e := checkJSONBody(r); e != nil {
		writeError(w, e)
		return
	}
	if e := h.limit(r); e != nil {
		writeError(w, e)
		return
	}
	client := clientOf(r.Context())
	if err := h.sched.admit(client); err != nil {
		writeError(w, h.refusal(err))
		if rt.completion {
			h.onComplete(Completion{Endpoint: r.URL.Path, Err: err})
		}
		return
	}
	defer h.sched.leave(client)
	rt.serve(w, r)
}

// refusal is the answer to a request the scheduler will not take: 503
// (ErrQueueFull, ErrShuttingDown), or 429 when its own client has all the
// places one client may (ErrClientQueueFull): that is the client's doing,
// as a rate limit is, and the server may well have room for others.
func (h *Handler) refusal(err error) *apiError {
	switch {
	case errors.Is(err, ErrShuttingDown):
		return shuttingDown("The server is shutting down. Retry later.")
	case errors.Is(err, ErrClientQueueFull):
		slots := max(h.opts.Slots, 1)
		return &apiError{
			status: http.StatusTooManyRequests, typ: "requests", code: "rate_limit_exceeded",
			message: fmt.Sprintf("Too many of your requests are in the server: a client may have %d at once (%d generating, %d waiting). Retry once one is answered.",
				h.sched.perClient, slots, h.sched.perClient-slots),
			header: http.Header{"Retry-After": {"1"}},
		}
	}
	return &apiError{
		status: http.StatusServiceUnavailable, typ: typeServer, code: "server_overloaded",
		message: fmt.Sprintf("The server is overloaded: all %d slots are generating and the queue is full. Retry later.", max(h.opts.Slots, 1)),
		header:  http.Header{"Retry-After": {"1"}},
	}
}
