package edgelimit

import (
	"context"
	"fmt"
	"syscall/js"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/cmd/internal/jspromise"
	"github.com/wasmlm/wasmlm/httpapi"
)

// globalName is a fresh globalThis name for one test's Map.
func globalName(t *testing.T) string {
	name := "wasmlmTest" + t.Name()
	t.Cleanup(func() { js.Global().Delete(name) })
	return name
}

// TestStoreOutlivesTheGoSide: what one Store holds, another Store of the
// same global reads (as the next request's Go program will), exactly;
// Sweep drops what drop says, and what is not a usage; Len counts.
func TestStoreOutlivesTheGoSide(t *testing.T) {
	name := globalName(t)
	at := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)
	first := NewStore(name)
	first.Store("key:a", httpapi.Usage{Requests: 2.5, Tokens: -120.25, At: at})
	first.Store("addr:192.0.2.1", httpapi.Usage{Requests: 60, Tokens: 1000, At: at})
	require.True(t, js.Global().Get(name).InstanceOf(js.Global().Get("Map")), "a Map on globalThis")

	second := NewStore(name)
	assert.Equal(t, 2, second.Len())
	u, ok := second.Load("key:a")
	require.True(t, ok)
	assert.Equal(t, 2.5, u.Requests)
	assert.Equal(t, -120.25, u.Tokens)
	assert.True(t, u.At.Equal(at), "at %v", u.At)
	_, ok = second.Load("key:b")
	assert.False(t, ok)
	js.Global().Get(name).Call("set", "key:junk", "not a usage")
	_, ok = second.Load("key:junk")
	assert.False(t, ok, "what is not a usage is not held")
	assert.Equal(t, 3, second.Len())

	second.Sweep(func(u httpapi.Usage) bool { return u.Requests == 60 })
	assert.Equal(t, 1, first.Len(), "the full one and the junk dropped")
	_, ok = first.Load("addr:192.0.2.1")
	assert.False(t, ok)
	_, ok = first.Load("key:a")
	assert.True(t, ok)
}

// TestLimiterAcrossGoPrograms: limiters made afresh over the same global,
// as each request's Go program makes its own, count together.
func TestLimiterAcrossGoPrograms(t *testing.T) {
	name := globalName(t)
	ctx := context.Background()
	request := func(client string) *httpapi.LimitExceeded {
		l, err := httpapi.NewLimiter(httpapi.Limits{RequestsPerMinute: 2, TokensPerMinute: 100}, NewStore(name))
		require.NoError(t, err)
		return l.Allow(ctx, client)
	}
	assert.Nil(t, request("key:a"))
	assert.Nil(t, request("key:a"))
	x := request("key:a")
	require.NotNil(t, x, "the third request in a minute, from a third Go program")
	assert.Equal(t, "requests", x.Limit)
	assert.Nil(t, request("key:b"))

	tokens := func() httpapi.Limiter {
		l, err := httpapi.NewLimiter(httpapi.Limits{TokensPerMinute: 100}, NewStore(name))
		require.NoError(t, err)
		return l
	}
	assert.Nil(t, tokens().Reserve("key:b", 500))
	x = tokens().Allow(ctx, "key:b")
	require.NotNil(t, x, "tokens reserved by an earlier Go program")
	assert.Equal(t, "tokens", x.Limit)
	require.NotNil(t, tokens().Reserve("key:b", 1), "nor may it reserve more")
	tokens().Refund("key:b", 450)
	assert.Nil(t, tokens().Allow(ctx, "key:b"), "refunded by a later Go program: 50 left")
	assert.Nil(t, tokens().Reserve("key:b", 60))
	assert.NotNil(t, tokens().Reserve("key:b", 1), "10 beyond")
	u, ok := NewStore(name).Load("key:b")
	require.True(t, ok)
	assert.InDelta(t, -10, u.Tokens, 0.1, "what the isolate holds (time refills a little)")
}

// fakeBinding plays Cloudflare's Rate Limiting binding: limit({key})
// returns a promise of {success}, success for the first allow calls of each
// key; it records the keys.
type fakeBinding struct {
	obj   js.Value
	keys  []string
	calls map[string]int
}

func newFakeBinding(t *testing.T, allow int) *fakeBinding {
	b := &fakeBinding{obj: js.Global().Get("Object").New(), calls: map[string]int{}}
	limit := js.FuncOf(func(_ js.Value, args []js.Value) any {
		key := args[0].Get("key").String()
		b.keys = append(b.keys, key)
		b.calls[key]++
		outcome := js.Global().Get("Object").New()
		outcome.Set("success", b.calls[key] <= allow)
		return js.Global().Get("Promise").Call("resolve", outcome)
	})
	t.Cleanup(limit.Release)
	b.obj.Set("limit", limit)
	return b
}

// TestBinding: the binding is asked with the client as key, awaited; its
// refusal is a 429's for the period; what it allows the next limiter
// decides, which also counts the tokens.
func TestBinding(t *testing.T) {
	fake := newFakeBinding(t, 2)
	next, err := httpapi.NewLimiter(httpapi.Limits{TokensPerMinute: 100}, NewStore(globalName(t)))
	require.NoError(t, err)
	b, err := NewBinding(fake.obj, 10*time.Second, next)
	require.NoError(t, err)
	ctx := context.Background()

	assert.Nil(t, b.Allow(ctx, "key:a"))
	assert.Nil(t, b.Allow(ctx, "key:a"))
	x := b.Allow(ctx, "key:a")
	require.NotNil(t, x)
	assert.Equal(t, httpapi.LimitExceeded{Limit: "requests", RetryAfter: 10 * time.Second}, *x)
	assert.Equal(t, []string{"key:a", "key:a", "key:a"}, fake.keys)

	assert.Nil(t, b.Allow(ctx, "key:b"))
	assert.Nil(t, b.Reserve("key:b", 500))
	x = b.Allow(ctx, "key:b")
	require.NotNil(t, x, "allowed by the binding, refused by the next limiter")
	assert.Equal(t, "tokens", x.Limit)
	assert.Equal(t, x.Limit, b.Reserve("key:b", 1).Limit, "the next limiter's reservations")
	b.Refund("key:b", 500)
	assert.Nil(t, b.Reserve("key:b", 1), "and refunds")

	alone, err := NewBinding(fake.obj, time.Minute, nil)
	require.NoError(t, err)
	assert.Nil(t, alone.Allow(ctx, "key:c"))
	assert.Nil(t, alone.Reserve("key:c", 1000), "nothing counts tokens")
	alone.Refund("key:c", 1000)
	assert.Nil(t, alone.Allow(ctx, "key:c"))
	require.NotNil(t, alone.Allow(ctx, "key:c"))
	assert.Equal(t, time.Minute, alone.Allow(ctx, "key:c").RetryAfter)
}

// TestBindingFailures: a binding that throws, rejects or answers nonsense
// lets the request through (the next limiter still applies) and is logged;
// what is not a binding is refused at the start.
func TestBindingFailures(t *testing.T) {
	fn := func(body string) js.Value { return js.Global().Get("Function").New(body) }
	for _, tc := range []struct {
		name  string
		limit js.Value
		log   string
	}{
		{"throws", fn(`throw new Error("binding down")`), "limit() threw"},
		{"rejects", fn(`return Promise.reject(new Error("binding down"))`), "rejected: Error: binding down"},
		{"no success", fn(`return Promise.resolve({ ok: true })`), "not {success: boolean}"},
		{"not an object", fn(`return 42`), "resolved to 42"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			binding := js.Global().Get("Object").New()
			binding.Set("limit", tc.limit)
			b, err := NewBinding(binding, time.Minute, nil)
			require.NoError(t, err)
			var logged []string
			b.log = func(msg string) { logged = append(logged, msg) }
			assert.Nil(t, b.Allow(context.Background(), "key:a"))
			require.Len(t, logged, 1)
			assert.Contains(t, logged[0], tc.log)
		})
	}

	for _, v := range []js.Value{js.Undefined(), js.ValueOf("text"), js.Global().Get("Object").New()} {
		_, err := NewBinding(v, time.Minute, nil)
		assert.Error(t, err, "%s", jspromise.Describe(v))
	}
	_, err := NewBinding(newFakeBinding(t, 1).obj, 0, nil)
	assert.Error(t, err)
}

// BenchmarkAllow is what a request's Allow costs (a fresh limiter, as each
// request's Go program makes, over the isolate's store) when the isolate
// holds n clients still within their minute: from sweepMin (1024) of them
// on, every such Allow sweeps them all, since the limiter's sweep threshold
// does not outlive the Go program.
//
//	GOOS=js GOARCH=wasm go test -run '^$' -bench Allow ./cmd/worker/internal/edgelimit/
func BenchmarkAllow(b *testing.B) {
	for _, n := range []int{10, 1000, 2000, 8000} {
		b.Run(fmt.Sprint(n, "-clients"), func(b *testing.B) {
			name := fmt.Sprint("wasmlmBench", n)
			defer js.Global().Delete(name)
			store := NewStore(name)
			now := time.Now()
			for i := range n {
				store.Store(fmt.Sprint("addr:", i), httpapi.Usage{Tokens: 100, At: now}) // far from full: kept
			}
			ctx := context.Background()
			for b.Loop() {
				// No requests limit, so that key:a is never refused (a
				// refusal stores nothing, and sweeps nothing).
				l, err := httpapi.NewLimiter(httpapi.Limits{TokensPerMinute: 20000}, NewStore(name))
				require.NoError(b, err)
				require.Nil(b, l.Allow(ctx, "key:a"))
			}
			require.Equal(b, n+1, store.Len())
		})
	}
}
