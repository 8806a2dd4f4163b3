package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
)

// tokensLeft is what client has left of l's token allowance now.
func tokensLeft(l *bucketLimiter, client string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refill(client, l.now()).Tokens
}

// TestTokenLimitBoundsABurst: 30 completions of 60 tokens (prompt and
// max_tokens) sent at once by one client under a limit of 200 tokens a
// minute, over a real connection, with the limiter's clock stopped: each
// reserves its 60 tokens before it waits for a slot, so those admitted use
// at most the allowance and one request more, the rest are refused 429
// with Retry-After, and what the admitted did not use is refunded exactly.
func TestTokenLimitBoundsABurst(t *testing.T) {
	const (
		allowance = 200
		cost      = 60
		clients   = 30
	)
	limiter, _ := newTestLimiter(t, Limits{TokensPerMinute: allowance})
	h := newHandler(t, Options{Slots: 2, ClientQueue: DefaultQueueSize, Limiter: limiter}) // no cap on the client's requests but its tokens
	srv := httptest.NewServer(h)
	defer srv.Close()
	prompt, err := h.model.TextPrompt("Once upon a time", false)
	require.NoError(t, err)
	body := mustJSON(t, map[string]any{"prompt": "Once upon a time", "max_tokens": cost - len(prompt.Tokens)})

	type answer struct {
		status     int
		used       int
		retryAfter string
		typ        string
	}
	answers := make(chan answer, clients)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			<-start
			resp, err := srv.Client().Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
			if !assert.NoError(t, err) {
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			a := answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
			if a.status == http.StatusOK {
				var c completionResponse
				require.NoError(t, json.Unmarshal(b, &c))
				a.used = c.Usage.PromptTokens + c.Usage.CompletionTokens
			} else {
				a.typ = apiErrorOf(t, b).Type
			}
			answers <- a
		})
	}
	close(start)
	wg.Wait()
	close(answers)
	admitted, refused, used := 0, 0, 0
	for a := range answers {
		switch a.status {
		case http.StatusOK:
			admitted++
			used += a.used
		case http.StatusTooManyRequests:
			refused++
			assert.Equal(t, "tokens", a.typ)
			assert.NotEmpty(t, a.retryAfter)
		default:
			t.Errorf("status %d", a.status)
		}
	}
	t.Logf("%d admitted (%d tokens used), %d refused", admitted, used, refused)
	assert.Equal(t, clients, admitted+refused)
	assert.GreaterOrEqual(t, admitted, 4, "200, 140, 80 and 20 tokens left: the first four are admitted")
	assert.LessOrEqual(t, used, allowance+cost, "at most the allowance and one request")
	assert.Positive(t, refused)
	assert.Equal(t, float64(allowance-used), tokensLeft(limiter, "addr:127.0.0.1"), "charged what was used, no more")
}

// TestUnusedTokensRefunded: a completion reserves its prompt and
// max_tokens (a chat without max_tokens: the whole context) while it runs,
// and is charged, once it ends, its prompt and the tokens it generated.
func TestUnusedTokensRefunded(t *testing.T) {
	const allowance = 10_000
	for _, tc := range []struct {
		name      string
		path      string
		body      string
		generated int
		maxTokens int // 0: none asked; the context's room is reserved
	}{
		{"stopped early", "/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 100}`, 3, 100},
		{"every token asked for", "/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 100}`, 100, 100},
		{"streamed, stopped early", "/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 100, "stream": true}`, 7, 100},
		{"a chat without max_tokens", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "Hi"}]}`, 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limiter, _ := newTestLimiter(t, Limits{TokensPerMinute: allowance})
			done := make(completions, 1)
			h := newHandler(t, Options{Limiter: limiter, OnCompletion: done.report})
			var whileRunning float64
			generate := fakeTokens(tc.generated, nil)
			h.generate = func(ctx context.Context, s *engine.Session, p engine.Prompt, o engine.GenerateOptions, onToken engine.TokenFunc) (engine.Result, error) {
				whileRunning = tokensLeft(limiter, "addr:192.0.2.1")
				return generate(ctx, s, p, o, onToken)
			}
			w := do(h, "POST", tc.path, tc.body)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			c := done.next(t)
			require.Equal(t, tc.generated, c.CompletionTokens)
			reserved := c.PromptTokens + tc.maxTokens
			if tc.maxTokens == 0 {
				reserved = h.ContextLength()
			}
			assert.Equal(t, float64(allowance-reserved), whileRunning, "reserved while it runs")
			assert.Equal(t, float64(allowance-c.PromptTokens-c.CompletionTokens), tokensLeft(limiter, "addr:192.0.2.1"), "charged what it used")
		})
	}
}

// TestRefusedRequestsAreRefunded: a request that leaves while it waits for
// a slot gets its reservation back; one refused its reservation (429) is
// charged nothing.
func TestRefusedRequestsAreRefunded(t *testing.T) {
	const allowance = 500
	limiter, _ := newTestLimiter(t, Limits{TokensPerMinute: allowance})
	h := newHandler(t, Options{QueueSize: 1, Limiter: limiter}) // one slot, one place to wait
	running, finish := make(chan struct{}), make(chan struct{})
	generate := fakeTokens(10, nil)
	h.generate = func(ctx context.Context, s *engine.Session, p engine.Prompt, o engine.GenerateOptions, onToken engine.TokenFunc) (engine.Result, error) {
		close(running)
		<-finish
		return generate(ctx, s, p, o, onToken)
	}
	const client = "addr:192.0.2.1"
	first := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- do(h, "POST", "/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 300}`) }()
	select {
	case <-running:
	case w := <-first:
		t.Fatalf("the first request did not run: %d %s", w.Code, w.Body)
	}
	held := tokensLeft(limiter, client)
	require.Less(t, held, float64(allowance-300))

	ctx, leave := context.WithCancel(context.Background())
	waited := make(chan int, 1)
	go func() {
		r := httptest.NewRequestWithContext(ctx, "POST", "/v1/completions", strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 100}`))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		waited <- w.Code
	}()
	require.Eventually(t, func() bool { return h.sched.queued() == 1 }, liveness, time.Millisecond)
	assert.Less(t, tokensLeft(limiter, client), held, "reserved while it waits")
	leave()
	<-waited
	assert.Equal(t, held, tokensLeft(limiter, client), "the request that left got its reservation back")

	limiter.Reserve(client, allowance) // beyond: the next reservation is refused
	beyond := tokensLeft(limiter, client)
	w := do(h, "POST", "/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 10}`)
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	assert.Equal(t, beyond, tokensLeft(limiter, client), "a 429 is charged nothing")
	close(finish)
	require.Equal(t, http.StatusOK, (<-first).Code)
}
