package httpapi

import (
	"context"
	"net/http"
)

// Shutdown stops the handler, for a graceful stop of its server: call it
// beside http.Server.Shutdown, which stops accepting connections and waits
// for the running requests but does not end them. From now on a POST, and a
// request waiting for a slot, is refused with 503 (server_shutting_down,
// Retry-After), which the openai clients retry. Generations already running
// go on until they finish or ctx ends; then each is stopped at its next
// token: a stream ends with an error event (code server_shutting_down) and
// no [DONE], as after any error once a stream has started, so that no
// client takes the cut text for a whole answer; a non-streamed request gets
// the 503. Shutdown returns when no request is left, with ctx's error if it
// had to stop any.
//
// A request stopped this way can only be answered while its connection is
// open: the server's own shutdown must leave it a moment after ctx ends
// (wasmlm serve leaves one second) before it closes what is left.
func (h *Handler) Shutdown(ctx context.Context) error {
	drained := h.sched.close()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
	}
	h.stop(ErrShuttingDown)
	<-drained
	return ctx.Err()
}

// generationContext is the context a request's generation runs in: the
// request's, ended also (with cause ErrShuttingDown) when Shutdown's grace
// is over. stopped reports whether that is why it ended. Its Err asks the
// request's context's Err too, as the engine asks between tokens, prompt
// blocks and passes: a host whose request context acts there (the edge
// worker's hands control to the JavaScript event loop) keeps doing so
// during the generation, as a SessionLender's context does.
func (h *Handler) generationContext(r *http.Request) (ctx context.Context, stopped func() bool, release func()) {
	inner, cancel := context.WithCancelCause(r.Context())
	unhook := context.AfterFunc(h.stopping, func() { cancel(ErrShuttingDown) })
	return askingContext{inner, r.Context()}, func() bool { return context.Cause(inner) == ErrShuttingDown }, func() {
		unhook()
		cancel(nil)
	}
}

// askingContext is a context derived from parent whose Err asks parent's
// Err as well: a derived cancelCtx answers Err from its own state, so a
// parent that acts in Err would otherwise never be asked.
type askingContext struct {
	context.Context
	parent context.Context
}

func (c askingContext) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	return c.parent.Err()
}

// shuttingDown is the 503 of a server that is shutting down.
func shuttingDown(message string) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, typ: typeServer, code: "server_shutting_down",
		message: message, header: http.Header{"Retry-After": {"1"}}}
}
