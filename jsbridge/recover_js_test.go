package jsbridge

import (
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/models"
)

// TestPanicsAreRecovered: a getter that throws, an onToken that throws and a
// Go panic in the middle of a generation each reject the call with an Error
// saying what happened; the runtime and the model keep working, and the next
// generation reproduces the golden tokens.
func TestPanicsAreRecovered(t *testing.T) {
	run := golden.RuncStories260K(t).Runs[0]
	b := newLoaded(t)
	check := func(t *testing.T) {
		t.Helper()
		res := mustCall(t, b, "generate", "", greedy(30))
		assert.Equal(t, run.GeneratedIDs[:30], ints(res.Get("tokens")))
	}

	t.Run("throwing getter", func(t *testing.T) {
		opts := js.Global().Get("Object").New()
		js.Global().Get("Object").Call("defineProperty", opts, "temperature", obj(map[string]any{
			"get": jsFunction("", "throw new Error('getter says no')"), "enumerable": true,
		}))
		_, err := call(t, b, "generate", "Once", opts)
		require.Equal(t, &jsError{Code: "js_exception", Message: "wasmlm: JavaScript threw in generate: Error: getter says no"}, err)
		check(t)
	})
	t.Run("throwing proxy", func(t *testing.T) {
		handler := obj(map[string]any{"ownKeys": jsFunction("", "throw new TypeError('no keys')")})
		opts := js.Global().Get("Proxy").New(obj(map[string]any{}), handler)
		_, err := call(t, b, "generate", "Once", opts)
		require.Equal(t, &jsError{Code: "js_exception", Message: "wasmlm: JavaScript threw in generate: TypeError: no keys"}, err)
		check(t)
	})
	t.Run("throwing onToken", func(t *testing.T) {
		onToken := jsFunction("chunk", "if (chunk.token === 407) throw new RangeError('I dislike token ' + chunk.token)")
		_, err := call(t, b, "stream", "", greedy(50), onToken)
		require.Equal(t, &jsError{Code: "js_exception",
			Message: "token callback: wasmlm: JavaScript threw in stream onToken: RangeError: I dislike token 407"}, err)
		check(t)
	})
	t.Run("Go panic mid-generation", func(t *testing.T) {
		b.tokenHook = func(n int) {
			if n == 3 {
				panic("injected failure")
			}
		}
		_, err := call(t, b, "generate", "", greedy(50))
		b.tokenHook = nil
		require.Equal(t, &jsError{Code: "internal", Message: "wasmlm: internal error in generate: injected failure"}, err)
		check(t)
		_, err = call(t, b, "generate", "Once upon a time", greedy(5))
		require.NoError(t, err, "later calls do not wait for the failed one")
	})
}

// TestFuncsReleased: after every kind of call — successful, rejected,
// aborted, queued; generations and embeddings — only the methods
// hold js.Funcs, and Release frees those and removes the methods.
func TestFuncsReleased(t *testing.T) {
	b := New()
	const methods = 25
	assert.Equal(t, methods, b.LiveFuncs())
	mustCall(t, b, "load", jsBytes(models.Default()))
	log := newChunkLog(t)
	mustCall(t, b, "stream", "", greedy(10), log.fn)
	ac := js.Global().Get("AbortController").New()
	opts := obj(map[string]any{"temperature": 0, "maxTokens": 10, "signal": ac.Get("signal")})
	running := b.Value().Call("stream", "", opts, log.fn)
	queued := b.Value().Call("generate", "", opts)
	ac.Call("abort")
	_, err := await(t, running)
	require.NoError(t, err)
	_, err = await(t, queued)
	require.NoError(t, err)
	_, err = call(t, b, "generate", 1)
	require.Error(t, err)
	_, err = call(t, b, "stream", "", greedy(5), jsFunction("", "throw new Error('x')"))
	require.Error(t, err)
	ac = js.Global().Get("AbortController").New()
	running = b.Value().Call("stream", "", greedy(10), log.fn)
	queued = b.Value().Call("embed", "a", obj(map[string]any{"signal": ac.Get("signal")}))
	queued.Call("catch", jsFunction("", "")) // it rejects before await looks: not unhandled
	ac.Call("abort")
	_, err = await(t, running)
	require.NoError(t, err)
	_, err = await(t, queued)
	require.Error(t, err)
	mustCall(t, b, "embed", js.ValueOf([]any{"a", "b"}))
	_, err = call(t, b, "embed", "")
	require.Error(t, err)
	assert.Equal(t, methods, b.LiveFuncs())
	assert.Zero(t, b.queue.length())

	kept := b.Value().Get("generate")
	b.Release()
	assert.Zero(t, b.LiveFuncs())
	for _, m := range []string{"load", "info", "tokenize", "detokenize", "generate", "stream", "chat", "embed", "rerank", "split", "shard", "follow"} {
		assert.True(t, b.Value().Get(m).IsUndefined(), m)
	}
	assert.Equal(t, js.TypeFunction, kept.Type())
}
