package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock is a settable time for a limiter under test.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestLimiter(t *testing.T, limits Limits) (*bucketLimiter, *clock) {
	t.Helper()
	l, err := NewLimiter(limits, nil)
	require.NoError(t, err)
	c := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	bl := l.(*bucketLimiter)
	bl.now = c.now
	return bl, c
}

// TestRequestsPerMinute: a client may make the minute's
// requests at once, then one every minute / limit; the refusal says when;
// other clients are counted apart.
func TestRequestsPerMinute(t *testing.T) {
	l, c := newTestLimiter(t, Limits{RequestsPerMinute: 3})
	ctx := context.Background()
	for i := range 3 {
		assert.Nil(t, l.Allow(ctx, "a"), "request %d", i)
	}
	x := l.Allow(ctx, "a")
	require.NotNil(t, x)
	assert.Equal(t, LimitExceeded{Limit: "requests", PerMinute: 3, RetryAfter: 20 * time.Second}, *x)
	assert.Nil(t, l.Allow(ctx, "b"), "another client")

	c.advance(19 * time.Second)
	x = l.Allow(ctx, "a")
	require.NotNil(t, x)
	assert.Equal(t, time.Second, x.RetryAfter)
	c.advance(time.Second)
	assert.Nil(t, l.Allow(ctx, "a"), "one more after 20 s")
	assert.NotNil(t, l.Allow(ctx, "a"))

	c.advance(time.Hour)
	for i := range 3 {
		assert.Nil(t, l.Allow(ctx, "a"), "request %d: the bucket holds a minute's, no more", i)
	}
	assert.NotNil(t, l.Allow(ctx, "a"))
	assert.Nil(t, l.Reserve("a", 1000), "no token limit: nothing to count")
	c.advance(20 * time.Second)
	assert.Nil(t, l.Allow(ctx, "a"))
}

// TestTokensPerMinute: a client may start requests and reserve their
// tokens while it has tokens left, beyond the allowance with the last one,
// and time pays the excess back before the next request.
func TestTokensPerMinute(t *testing.T) {
	l, c := newTestLimiter(t, Limits{TokensPerMinute: 600})
	ctx := context.Background()
	assert.Nil(t, l.Allow(ctx, "a"))
	assert.Nil(t, l.Reserve("a", 500))
	assert.Nil(t, l.Allow(ctx, "a"), "100 left")
	assert.Nil(t, l.Reserve("a", 400)) // 300 beyond
	x := l.Allow(ctx, "a")
	require.NotNil(t, x)
	assert.Equal(t, LimitExceeded{Limit: "tokens", PerMinute: 600, RetryAfter: 30 * time.Second}, *x)
	assert.Equal(t, x, l.Reserve("a", 1), "a reservation is refused alike")
	assert.Nil(t, l.Allow(ctx, "b"))

	c.advance(29 * time.Second)
	x = l.Allow(ctx, "a")
	require.NotNil(t, x, "10 tokens beyond")
	assert.Equal(t, time.Second, x.RetryAfter)
	c.advance(time.Second)
	assert.Nil(t, l.Allow(ctx, "a"), "paid back")
}

// TestBothLimits: the requests limit is checked first; a request refused
// by either is not counted.
func TestBothLimits(t *testing.T) {
	l, c := newTestLimiter(t, Limits{RequestsPerMinute: 2, TokensPerMinute: 60})
	ctx := context.Background()
	assert.Nil(t, l.Allow(ctx, "a"))
	assert.Nil(t, l.Reserve("a", 90))
	x := l.Allow(ctx, "a")
	require.NotNil(t, x)
	assert.Equal(t, "tokens", x.Limit)
	assert.Equal(t, 30*time.Second, x.RetryAfter)
	c.advance(31 * time.Second) // one request regained too, though the refused one took none
	assert.Nil(t, l.Allow(ctx, "a"))
	assert.Nil(t, l.Allow(ctx, "a"))
	x = l.Allow(ctx, "a")
	require.NotNil(t, x)
	assert.Equal(t, "requests", x.Limit)
}

// TestTokenReservations: what a client's reservations and refunds leave
// it, step by step (a step refused charges nothing).
func TestTokenReservations(t *testing.T) {
	type step struct {
		advance time.Duration
		reserve int  // tokens to reserve, if not 0
		refund  int  // tokens to refund, if not 0
		refused bool // the reservation is refused
	}
	burst := make([]step, 30) // 30 requests of 60 tokens at once
	for i := range burst {
		burst[i] = step{reserve: 60, refused: i >= 4}
	}
	for _, tc := range []struct {
		name  string
		tpm   int
		steps []step
		left  float64
	}{
		{"a reservation, then what it did not use", 600, []step{{reserve: 500}, {refund: 300}}, 400},
		{"more than the allowance, when the bucket is full", 600, []step{{reserve: 1000}}, -400},
		{"none while beyond the allowance", 600, []step{{reserve: 700}, {reserve: 50, refused: true}, {refund: 50}}, -50},
		{"again once time has paid the excess", 600, []step{{reserve: 700}, {advance: 10 * time.Second, reserve: 50}}, -50},
		{"a refund fills the bucket no more than full", 600, []step{{reserve: 500}, {advance: time.Minute, refund: 500}}, 600},
		{"the burst: 4 of 30 reserved, 40 tokens beyond 200", 200, burst, -40},
		{"nothing to reserve or refund", 600, []step{{reserve: -5}, {refund: -5}}, 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, c := newTestLimiter(t, Limits{TokensPerMinute: tc.tpm})
			for i, s := range tc.steps {
				c.advance(s.advance)
				if s.reserve != 0 {
					x := l.Reserve("a", s.reserve)
					assert.Equal(t, s.refused, x != nil, "step %d", i)
				}
				if s.refund != 0 {
					l.Refund("a", s.refund)
				}
			}
			u, ok := l.store.Load("a")
			if !ok {
				u.Tokens = float64(tc.tpm)
			}
			assert.Equal(t, tc.left, u.Tokens)
		})
	}
	l, _ := newTestLimiter(t, Limits{RequestsPerMinute: 5})
	assert.Nil(t, l.Reserve("a", 1_000_000), "no token limit")
	l.Refund("a", 1_000_000)
	_, ok := l.store.Load("a")
	assert.False(t, ok, "nothing held")
}

// TestLimiterForgetsIdleClients: clients whose buckets are full again are
// dropped as the store grows, so a stream of one-off clients takes bounded
// memory; those still limited are kept.
func TestLimiterForgetsIdleClients(t *testing.T) {
	l, c := newTestLimiter(t, Limits{RequestsPerMinute: 1})
	ctx := context.Background()
	assert.Nil(t, l.Allow(ctx, "limited"))
	for i := range 10 * sweepMin {
		assert.Nil(t, l.Allow(ctx, fmt.Sprint("one-off ", i)))
		c.advance(time.Second)
		if i == 10 {
			require.NotNil(t, l.Allow(ctx, "limited"), "still within its minute")
		}
	}
	assert.Less(t, l.store.Len(), 2*sweepMin+1)
	_, err := NewLimiter(Limits{RequestsPerMinute: -1}, nil)
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

// TestRateLimitedRequests: over HTTP, a client beyond its limit gets 429
// rate_limit_exceeded with Retry-After (and Retry-After-Ms, which the
// openai clients prefer) before its request is admitted; each key is
// limited apart, and tokens are charged for what a completion used.
func TestRateLimitedRequests(t *testing.T) {
	keys, err := NewKeyRing("sk-a", "sk-b")
	require.NoError(t, err)
	limiter, c := newTestLimiter(t, Limits{RequestsPerMinute: 2, TokensPerMinute: 30})
	done := make(completions, 8)
	h := newHandler(t, Options{Keys: keys, Limiter: limiter, OnCompletion: done.report})
	send := func(key, path, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	completion := `{"prompt": "Once upon a time", "max_tokens": 40}`
	w := send("sk-a", "/v1/completions", completion)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	used := done.next(t)
	spent := used.PromptTokens + used.CompletionTokens
	require.Greater(t, spent, 30, "one completion uses the minute's tokens")

	w = send("sk-a", "/tokenize", `{"content": "x"}`)
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	e := apiErrorOf(t, w.Body.Bytes())
	assert.Equal(t, "rate_limit_exceeded", *e.Code)
	assert.Equal(t, "tokens", e.Type)
	wait := time.Duration(spent-30) * 2 * time.Second // 30 tokens a minute: 2 s each
	assert.Equal(t, fmt.Sprint(int(wait.Seconds())), w.Header().Get("Retry-After"))
	assert.Equal(t, fmt.Sprint(wait.Milliseconds()), w.Header().Get("Retry-After-Ms"))
	assert.Contains(t, e.Message, "tokens per min (TPM): limit 30")

	assert.Equal(t, http.StatusOK, send("sk-b", "/tokenize", `{"content": "x"}`).Code, "another key")
	assert.Equal(t, http.StatusOK, send("sk-b", "/tokenize", `{"content": "x"}`).Code)
	w = send("sk-b", "/tokenize", `{"content": "x"}`)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	e = apiErrorOf(t, w.Body.Bytes())
	assert.Equal(t, "requests", e.Type)
	assert.Equal(t, "30", w.Header().Get("Retry-After"))
	assert.Equal(t, http.StatusUnauthorized, send("sk-c", "/tokenize", `{"content": "x"}`).Code, "the key first")

	c.advance(wait)
	w = send("sk-a", "/v1/completions", completion)
	assert.Equal(t, http.StatusOK, w.Code, "recovered: %s", w.Body.String())
	select {
	case got := <-done:
		assert.Equal(t, used.PromptTokens, got.PromptTokens)
	default:
		t.Error("the recovered request was not reported")
	}
}

// TestEmbeddingTokensAreCounted: an embedding request's tokens (those the
// model evaluated) are charged to its key as a completion's are, and a
// key over its minute's tokens is refused embeddings too.
func TestEmbeddingTokensAreCounted(t *testing.T) {
	keys, err := NewKeyRing("sk-a")
	require.NoError(t, err)
	limiter, c := newTestLimiter(t, Limits{TokensPerMinute: 30})
	done := make(completions, 4)
	h := newHandler(t, Options{Keys: keys, Limiter: limiter, OnCompletion: done.report})
	send := func(body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/v1/embeddings", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer sk-a")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	texts := `{"input": ["Once upon a time there was a little girl", "named Lily. She loved to play outside in the sun."]}`
	w := send(texts)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	spent := done.next(t).PromptTokens
	require.Greater(t, spent, 30)
	assert.Contains(t, w.Body.String(), fmt.Sprintf(`"usage":{"prompt_tokens":%d,"total_tokens":%d}`, spent, spent))

	w = send(`{"input": "x"}`)
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	assert.Equal(t, "tokens", apiErrorOf(t, w.Body.Bytes()).Type)
	c.advance(time.Duration(spent-30) * 2 * time.Second)
	assert.Equal(t, http.StatusOK, send(`{"input": "x"}`).Code, "paid back")
}

// refuseAll is a Limiter that cannot say its limit, as the edge worker's
// Cloudflare binding cannot.
type refuseAll struct{ wait time.Duration }

func (l refuseAll) Allow(context.Context, string) *LimitExceeded {
	return &LimitExceeded{Limit: "requests", RetryAfter: l.wait}
}
func (refuseAll) Reserve(string, int) *LimitExceeded { return nil }
func (refuseAll) Refund(string, int)                 {}

// TestRefusalOfAnUnknownLimit: a refusal without PerMinute is still a 429
// with Retry-After, and its message claims no limit.
func TestRefusalOfAnUnknownLimit(t *testing.T) {
	h := newHandler(t, Options{Limiter: refuseAll{wait: 10 * time.Second}})
	r := httptest.NewRequest("POST", "/tokenize", strings.NewReader(`{"content": "x"}`))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	e := apiErrorOf(t, w.Body.Bytes())
	assert.Equal(t, "rate_limit_exceeded", *e.Code)
	assert.Equal(t, "requests", e.Type)
	assert.Equal(t, "Rate limit reached on requests. Please try again in 10s.", e.Message)
	assert.Equal(t, "10", w.Header().Get("Retry-After"))
	assert.Equal(t, "10000", w.Header().Get("Retry-After-Ms"))
}
