package httpapi

import (
	"context"
	"fmt"

	"github.com/wasmlm/wasmlm/engine"
)

// SessionLender lends a Handler the session it runs requests on, in place
// of Slots sessions of the Handler's own (Options.Sessions). A host that
// runs other work on a session of its own — the page's Web Worker, whose
// JS API generates on it (package jsbridge) — lends it, so that the API's
// requests and that work take turns in one queue, with one KV cache.
type SessionLender interface {
	// Borrow waits for the session, in the order asked, and returns it
	// with the context the request's work is to run in: ctx, or a
	// context that wraps it (the engine asks its Err between tokens, prompt
	// blocks and passes, where a host can act: the page's worker hands
	// control to its event loop there). When ctx ends first, Borrow
	// returns ctx's error.
	Borrow(ctx context.Context) (context.Context, *engine.Session, error)
	// Return gives back the session Borrow lent, once the work is over.
	Return(*engine.Session)
}

// lentSession is what New learns from a lender's session: its context
// length, KV cache type and threads, which /v1/models reports and requests
// are checked against. The session is borrowed once, for that.
func lentSession(l SessionLender) (*engine.Session, error) {
	_, s, err := l.Borrow(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%w: the session lender lends none: %w", ErrInvalidOptions, err)
	}
	l.Return(s)
	return s, nil
}
