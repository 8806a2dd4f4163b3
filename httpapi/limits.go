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
	// TokensPerMinute bounds the tokens a client's requests use: a
	// completion's prompt and completion, an embeddings or rerank request's
	// tokens evaluated. A request reserves the most it can use (a
	// completion: its prompt and max_tokens; embeddings and reranks: their
	// tokens) before it waits for a slot, and gets back what it did not use
	// when it ends. A reservation is refused while the client is beyond the
	// minute's allowance, until time has paid for the excess, so requests
	// sent at once spend at most the allowance and one request more.
	TokensPerMinute int
}

// Limiter decides whether a client may make a request now, and what its
// requests may cost. It must be safe for concurrent use. NewLimiter makes
// the in-memory one; the edge worker adds Cloudflare's Rate Limiting
// binding in front of it.
//
// The handler asks Allow before it reads a request's body; once the body
// says what the request may cost, and before the request waits for a slot,
// it Reserves that many tokens; when the request ends it Refunds what the
// request did not use. A refusal of either is answered 429.
type Limiter interface {
	// Allow counts a request of client and returns nil, or, when client
	// must wait, why and for how long.
	Allow(ctx context.Context, client string) *LimitExceeded
	// Reserve charges client with tokens, the most one of its requests
	// can use, and returns nil, or refuses (charging nothing) when client
	// must wait.
	Reserve(client string, tokens int) *LimitExceeded
	// Refund gives client back tokens of a reservation that its request
	// did not use.
	Refund(client string, tokens int)
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
	Requests, Tokens float64 // left to use; Tokens may be negative (reserved beyond)
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

// Reserve charges tokens while client has tokens left (none spent beyond
// the allowance), however many: a request that costs more than a minute's
// allowance is served when the client's bucket is full, and the client
// then waits for the excess. So the tokens reserved at once are at most
// the allowance and one request's.
func (l *bucketLimiter) Reserve(client string, tokens int) *LimitExceeded {
	tpm := l.limits.TokensPerMinute
	if tpm == 0 || tokens <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.refill(client, l.now())
	if u.Tokens < 0 {
		return &LimitExceeded{Limit: "tokens", PerMinute: tpm, RetryAfter: minutesToWait(-u.Tokens, tpm)}
	}
	u.Tokens -= float64(tokens)
	l.put(client, u)
	return nil
}

// Refund gives tokens back, up to a full bucket: what time has refilled
// meanwhile is not given twice.
func (l *bucketLimiter) Refund(client string, tokens int) {
	tpm := l.limits.TokensPerMinute
	if tpm == 0 || tokens <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.refill(client, l.now())
	u.Tokens = min(float64(tpm), u.Tokens+float64(tokens))
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
	return rateLimited(h.opts.Limiter.Allow(r.Context(), clientOf(r.Context())))
}

// reservation is what a request holds of its client's tokens (a
// Limiter's Reserve), until settle.
type reservation struct {
	limiter Limiter // nil: no Limiter, nothing held
	client  string
	tokens  int
}

// reserve charges r's client with cost tokens, the most r's request can
// use, before it waits for a slot; a refusal is the 429 to answer.
func (h *Handler) reserve(r *http.Request, cost int) (reservation, *apiError) {
	if h.opts.Limiter == nil {
		return reservation{}, nil
	}
	client := clientOf(r.Context())
	if e := rateLimited(h.opts.Limiter.Reserve(client, cost)); e != nil {
		return reservation{}, e
	}
	return reservation{limiter: h.opts.Limiter, client: client, tokens: cost}, nil
}

// settle ends the reservation of a request that used used tokens: what it
// did not use is refunded.
func (res reservation) settle(used int) {
	if res.limiter != nil && used < res.tokens {
		res.limiter.Refund(res.client, res.tokens-max(used, 0))
	}
}

// rateLimited is the 429 of a Limiter's refusal x (nil: none).
func rateLimited(x *LimitExceeded) *apiError {
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
