package edgelimit

import (
	"context"
	"errors"
	"fmt"
	"syscall/js"
	"time"

	"github.com/wasmlm/wasmlm/cmd/internal/jspromise"
	"github.com/wasmlm/wasmlm/httpapi"
)

// Binding is an httpapi.Limiter that asks Cloudflare's Rate Limiting
// binding first: `await binding.limit({key: client})` resolves to
// {success}, and a request it refuses is refused for the binding's period
// (the worker cannot read the period from the binding; it is told). A
// request the binding allows is then Next's to allow or refuse. The tokens
// a request reserves and gets back are Next's to count: the binding counts
// calls, not tokens.
//
// The binding counts per Cloudflare location, across its isolates, and
// Cloudflare documents it as permissive (eventually consistent): it is
// there to stop abuse, not to bill. Should a call fail, the request is
// allowed (Next still applies) and the failure logged: an outage of the
// limiter does not take the API down.
type Binding struct {
	limiter js.Value         // the binding: an object with limit({key}) → Promise<{success}>
	period  time.Duration    // the binding's period: a refusal's RetryAfter
	next    httpapi.Limiter  // nil: the binding alone
	log     func(msg string) // where a failed call is reported
}

var _ httpapi.Limiter = (*Binding)(nil)

// NewBinding returns a Limiter asking binding, whose period is period, and
// then next (nil: none). binding must have a limit method.
func NewBinding(binding js.Value, period time.Duration, next httpapi.Limiter) (*Binding, error) {
	if binding.Type() != js.TypeObject || binding.Get("limit").Type() != js.TypeFunction {
		return nil, errors.New("not a Rate Limiting binding: it has no limit method")
	}
	if period <= 0 {
		return nil, fmt.Errorf("period %v: must be positive", period)
	}
	console := js.Global().Get("console")
	return &Binding{limiter: binding, period: period, next: next, log: func(msg string) { console.Call("error", msg) }}, nil
}

// Allow asks the binding, then Next.
func (b *Binding) Allow(ctx context.Context, client string) *httpapi.LimitExceeded {
	ok, err := b.limit(ctx, client)
	switch {
	case ctx.Err() != nil:
		return nil // the client left: nothing will be served
	case err != nil:
		b.log(fmt.Sprintf("wasmlm: the rate limiter failed, request allowed: %v", err))
	case !ok:
		return &httpapi.LimitExceeded{Limit: "requests", RetryAfter: b.period}
	}
	if b.next == nil {
		return nil
	}
	return b.next.Allow(ctx, client)
}

// Reserve is Next's (nil: nothing to reserve).
func (b *Binding) Reserve(client string, tokens int) *httpapi.LimitExceeded {
	if b.next == nil {
		return nil
	}
	return b.next.Reserve(client, tokens)
}

// Refund is Next's.
func (b *Binding) Refund(client string, tokens int) {
	if b.next != nil {
		b.next.Refund(client, tokens)
	}
}

// limit calls the binding's limit({key}) and waits for its outcome.
func (b *Binding) limit(ctx context.Context, key string) (success bool, err error) {
	opts := js.Global().Get("Object").New()
	opts.Set("key", key)
	p, err := jspromise.Call(b.limiter, "limit", opts)
	if err != nil {
		return false, err
	}
	outcome, err := jspromise.Await(ctx, p)
	if err != nil {
		return false, err
	}
	if outcome.Type() != js.TypeObject || outcome.Get("success").Type() != js.TypeBoolean {
		return false, fmt.Errorf("limit() resolved to %s, not {success: boolean}", jspromise.Describe(outcome))
	}
	return outcome.Get("success").Bool(), nil
}
