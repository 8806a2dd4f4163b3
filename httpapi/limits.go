package httpapi

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Limits are the requests and tokens a client may use per minute
// (Options.Limiter, NewLimiter). A client is an API key when the handler
// has keys, else the client's address. Zero means no limit.
type Limits struct {
	// RequestsPerMinute bounds the POSTs a client makes (completions,
	// tokenize, detokenize): up to this many at once, then one every
	// minute / RequestsPerMinute.
	RequestsPerMinute int
	// TokensPerMinute bounds the tokens a client's completions use (prompt
	// and completion): a request is refused while the client has used more
	// than the minute's allowance, until time has paid for the excess.
	TokensPerMinute int
}

// Limiter decides whether a client may make a request now, and hears how
// many tokens each of its requests used. It must be safe for concurrent
// use. NewLimiter makes the in-memory one; the edge worker adds
// Cloudflare's Rate Limiting binding in front of it.
type Limiter interface {
	// Allow counts a request of client and returns nil, or, when client
	// must wait, why and for how long; the request is then answered 429.
	Allow(ctx context.Context, client string) *LimitExceeded
	// Spend charges client with the tokens one of its requests used.
	Spend(client string, tokens int)
}

// LimitExceeded is a Limiter's refusal.
type LimitExceeded struct {
	Limit      string        // "requests" or "tokens": OpenAI's error type
	PerMinute  int           // the limit; 0 if the Limiter cannot say (Cloudflare's binding does not)
	RetryAfter time.Duration // when the request would be allowed
}

// Usage is what a client has left of its limits, as of At: token buckets,
// refilled continuously at a minute's allowance per minute up to it.
type Usage struct {
	Requests, Tokens float64 // left to use; Tokens may be negative (spent beyond)
	At               time.Time
}

// LimitStore holds the clients' Usage for a Limiter (the in-memory map by
// default; the edge worker keeps it in the isolate, across its Go
// instances). The Limiter serialises its calls.
type LimitStore interface {
	Load(client string) (Usage, bool)
	Store(client string, u Usage)
	// Sweep deletes the clients for which drop reports true.
	Sweep(drop func(Usage) bool)
	// Len is the number of clients held.
	Len() int
}

// NewLimiter returns a Limiter enforcing limits per client with token
// buckets kept in store (nil: in memory). A client whose buckets are full
// again is forgotten when the store grows, so clients that come and go do
// not add up.
func NewLimiter(limits Limits, store LimitStore) (Limiter, error) {
	if limits.RequestsPerMinute < 0 || limits.TokensPerMinute < 0 {
		return nil, fmt.Errorf("%w: limits must be >= 0", ErrInvalidOptions)
	}
	if store == nil {
		store = mapStore{}
	}
	return &bucketLimiter{limits: limits, store: store, now: time.Now, sweepAt: sweepMin}, nil
}

// sweepMin is how many clients a store holds before the limiter first
// forgets the full ones; then twice what was left.
const sweepMin = 1024

type bucketLimiter struct {
	limits  Limits
	now     func() time.Time
	mu      sync.Mutex
	store   LimitStore
	sweepAt int
}

// refill returns client's usage now.
func (l *bucketLimiter) refill(client string, now time.Time) Usage {
	u, ok := l.store.Load(client)
	if !ok {
		return Usage{Requests: float64(l.limits.RequestsPerMinute), Tokens: float64(l.limits.TokensPerMinute), At: now}
	}
	return l.refillFrom(u, now)
}

func (l *bucketLimiter) Allow(_ context.Context, client string) *LimitExceeded {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	u := l.refill(client, now)
	if rpm := l.limits.RequestsPerMinute; rpm > 0 && u.Requests < 1 {
		return &LimitExceeded{Limit: "requests", PerMinute: rpm, RetryAfter: minutesToWait(1-u.Requests, rpm)}
	}
	if tpm := l.limits.TokensPerMinute; tpm > 0 && u.Tokens < 0 {
		return &LimitExceeded{Limit: "tokens", PerMinute: tpm, RetryAfter: minutesToWait(-u.Tokens, tpm)}
	}
	u.Requests--
	l.put(client, u)
	return nil
}

func (l *bucketLimiter) Spend(client string, tokens int) {
	if l.limits.TokensPerMinute == 0 || tokens <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.refill(client, l.now())
	u.Tokens -= float64(tokens)
	l.put(client, u)
}

// put stores u, first forgetting the clients whose buckets are full by now
// when the store has grown to sweepAt.
func (l *bucketLimiter) put(client string, u Usage) {
	if l.store.Len() >= l.sweepAt {
		l.store.Sweep(func(old Usage) bool {
			full := l.refillFrom(old, u.At)
			return full.Requests >= float64(l.limits.RequestsPerMinute) && full.Tokens >= float64(l.limits.TokensPerMinute)
		})
		l.sweepAt = max(sweepMin, 2*l.store.Len())
	}
	l.store.Store(client, u)
}

// refillFrom is u refilled up to now.
func (l *bucketLimiter) refillFrom(u Usage, now time.Time) Usage {
	rpm, tpm := float64(l.limits.RequestsPerMinute), float64(l.limits.TokensPerMinute)
	minutes := max(now.Sub(u.At).Minutes(), 0)
	u.Requests = min(rpm, u.Requests+minutes*rpm)
	u.Tokens = min(tpm, u.Tokens+minutes*tpm)
	u.At = now
	return u
}

// minutesToWait is how long a bucket refilled at perMinute takes to gain
// missing, rounded up to a millisecond.
func minutesToWait(missing float64, perMinute int) time.Duration {
	ms := math.Ceil(missing/float64(perMinute)*60_000 - 1e-6) // not a millisecond more for a rounding error
	return time.Duration(max(ms, 1)) * time.Millisecond
}

// mapStore is the in-memory LimitStore.
type mapStore map[string]Usage

func (m mapStore) Load(client string) (Usage, bool) { u, ok := m[client]; return u, ok }
func (m mapStore) Store(client string, u Usage)     { m[client] = u }
func (m mapStore) Len() int                         { return len(m) }
func (m mapStore) Sweep(drop func(Usage) bool) {
	for c, u := range m {
		if drop(u) {
			delete(m, c)
		}
	}
}

// clientKey is the request-context key of the client a request is counted
// under (see authenticate).
type clientKey struct{}

// limit asks the Limiter, if any, whether r's client may make a request
// now; a refusal is the 429 to answer.
func (h *Handler) limit(r *http.Request) *apiError {
	if h.opts.Limiter == nil {
		return nil
	}
	client, _ := r.Context().Value(clientKey{}).(string)
	x := h.opts.Limiter.Allow(r.Context(), client)
	if x == nil {
		return nil
	}
	secs := int(math.Ceil(x.RetryAfter.Seconds()))
	what := map[string]string{"requests": "requests per min (RPM)", "tokens": "tokens per min (TPM)"}[x.Limit]
	if x.PerMinute > 0 {
		what += fmt.Sprintf(": limit %d", x.PerMinute)
	} else {
		what = x.Limit
	}
	return &apiError{
		status: http.StatusTooManyRequests, typ: x.Limit, code: "rate_limit_exceeded",
		message: fmt.Sprintf("Rate limit reached on %s. Please try again in %s.", what, x.RetryAfter.Round(time.Millisecond)),
		header: http.Header{
			"Retry-After":    {strconv.Itoa(max(secs, 1))},
			"Retry-After-Ms": {strconv.FormatInt(x.RetryAfter.Milliseconds(), 10)},
		},
	}
}

// spend charges r's client with the tokens its request used.
func (h *Handler) spend(r *http.Request, tokens int) {
	if h.opts.Limiter == nil {
		return
	}
	client, _ := r.Context().Value(clientKey{}).(string)
	h.opts.Limiter.Spend(client, tokens)
}
