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
	"github.com/wasmlm/wasmlm/engine"
)

// TestClientsDoNotStarveEachOther: one slot and a queue of 8, so each
// client may have 1 + 2 requests in the server (ClientQueue's default, a
// quarter of the queue). Client A, within any rate limit, sends a burst of
// 6 while its first generates: two wait and the three beyond its bound get
// 429 rate_limit_exceeded with Retry-After, reported as
// ErrClientQueueFull. Client B's one request, sent after the burst, is
// admitted (the queue still has room for it) and generates as soon as A's
// running request ends, before A's waiting ones. Clients are API keys, or
// without keys addresses.
func TestClientsDoNotStarveEachOther(t *testing.T) {
	keys, err := NewKeyRing("sk-a", "sk-b")
	require.NoError(t, err)
	tests := []struct {
		name string
		keys *KeyRing
		as   func(r *http.Request, client string) // makes r client's: "a" or "b"
	}{
		{"keys", keys, func(r *http.Request, client string) {
			r.Header.Set("Authorization", "Bearer sk-"+client)
		}},
		{"addresses", nil, func(r *http.Request, client string) {
			r.RemoteAddr = map[string]string{"a": "192.0.2.1:4000", "b": "[2001:db8::b]:4000"}[client]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(completions, 16)
			h := newHandler(t, Options{Slots: 1, QueueSize: 8, Keys: tt.keys, OnCompletion: done.report})
			started := make(chan int, 8)
			proceed := make(chan struct{})
			h.generate = func(ctx context.Context, _ *engine.Session, prompt engine.Prompt, _ engine.GenerateOptions, _ engine.TokenFunc) (engine.Result, error) {
				started <- prompt.Tokens[0]
				<-proceed
				return engine.Result{PromptTokens: prompt.Tokens, Tokens: []int{7}, FinishReason: engine.FinishLength}, nil
			}
			send := func(client string, token int) chan *httptest.ResponseRecorder {
				ch := make(chan *httptest.ResponseRecorder, 1)
				r := httptest.NewRequest("POST", "/v1/completions", strings.NewReader(fmt.Sprintf(`{"prompt": [%d]}`, token)))
				r.Header.Set("Content-Type", "application/json")
				tt.as(r, client)
				go func() {
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					ch <- w
				}()
				return ch
			}
			waitQueued := func(n int) {
				t.Helper()
				require.Eventually(t, func() bool { return h.sched.queued() == n }, liveness, time.Millisecond)
			}

			// A's burst: 100 generates, 101 and 102 wait, 103–105 are A's too many.
			admitted := []chan *httptest.ResponseRecorder{send("a", 100)}
			require.Equal(t, 100, <-started)
			for i := 1; i <= 2; i++ {
				admitted = append(admitted, send("a", 100+i))
				waitQueued(i)
			}
			for i := 3; i <= 5; i++ {
				w := <-send("a", 100+i)
				assert.Equal(t, http.StatusTooManyRequests, w.Code)
				assert.Equal(t, "1", w.Header().Get("Retry-After"))
				e := apiErrorOf(t, w.Body.Bytes())
				assert.Equal(t, "rate_limit_exceeded", *e.Code)
				assert.Equal(t, "requests", e.Type)
				assert.Contains(t, e.Message, "a client may have 3 at once")
				assert.ErrorIs(t, done.next(t).Err, ErrClientQueueFull)
			}

			// B's one request is admitted and waits; it goes next.
			admitted = append(admitted, send("b", 200))
			waitQueued(3)
			var order []int
			for range 3 {
				proceed <- struct{}{}
				order = append(order, <-started)
			}
			proceed <- struct{}{}
			assert.Equal(t, []int{200, 101, 102}, order, "B's request before A's waiting ones")
			for _, ch := range admitted {
				assert.Equal(t, http.StatusOK, (<-ch).Code)
			}
		})
	}
}

// TestClientQueueOption: what New makes of QueueSize and ClientQueue — the
// most requests admitted at once, and of one client (a bound no lower than
// the server's is none: its client is refused 503 with everyone).
func TestClientQueueOption(t *testing.T) {
	tests := []struct {
		name                   string
		queue, clientQueue     int
		capacity, perClient    int
		oneClientFillsTheQueue bool
	}{
		{"the defaults: a quarter of 64", 0, 0, 1 + 64, 1 + 16, false},
		{"a quarter of 8", 8, 0, 1 + 8, 1 + 2, false},
		{"at least 1", 3, 0, 1 + 3, 1 + 1, false},
		{"a queue of 1: the client may fill it", 1, 0, 1 + 1, 1 + 1, true},
		{"no queue", -1, 0, 1, 1, true},
		{"set", 8, 5, 1 + 8, 1 + 5, false},
		{"negative: the slots only", 8, -1, 1 + 8, 1, false},
		{"the whole queue", 8, 8, 1 + 8, 1 + 8, true},
		{"beyond the queue", 8, 100, 1 + 8, 1 + 100, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHandler(t, Options{QueueSize: tt.queue, ClientQueue: tt.clientQueue})
			assert.Equal(t, tt.capacity, h.sched.capacity)
			assert.Equal(t, tt.perClient, h.sched.perClient)
			if tt.oneClientFillsTheQueue {
				assert.Zero(t, h.ClientLimit(), "no bound of its own")
			} else {
				assert.Equal(t, tt.perClient, h.ClientLimit())
			}
			var err error
			for range tt.capacity {
				if err = h.sched.admit("a"); err != nil {
					break
				}
			}
			if tt.oneClientFillsTheQueue {
				assert.NoError(t, err)
				assert.ErrorIs(t, h.sched.admit("a"), ErrQueueFull)
				assert.ErrorIs(t, h.sched.admit("b"), ErrQueueFull)
			} else {
				assert.ErrorIs(t, err, ErrClientQueueFull)
				assert.NoError(t, h.sched.admit("b"), "another client finds room")
			}
		})
	}
}
