package jsbridge

import (
	"encoding/json"
	"syscall/js"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/models"
)

// jsBytes copies b into a new Uint8Array.
func jsBytes(b []byte) js.Value {
	u8 := js.Global().Get("Uint8Array").New(len(b))
	js.CopyBytesToJS(u8, b)
	return u8
}

// obj makes a plain JavaScript object (a fake options object, a message).
func obj(fields map[string]any) js.Value { return js.ValueOf(fields) }

// jsFunction makes a JavaScript function from source, for fakes that must
// throw inside JavaScript (a Go callback cannot throw).
func jsFunction(args, body string) js.Value {
	return js.Global().Get("Function").New(args, body)
}

// jsError is a rejected Promise's Error, as Go sees it.
type jsError struct {
	Message, Code string
	Field, Param  string // an invalid option's name, as JavaScript and as OpenAI spell it ("" otherwise)
}

func (e *jsError) Error() string { return e.Code + ": " + e.Message }

// await waits for a Promise; a rejection becomes a *jsError.
func await(t testing.TB, p js.Value) (js.Value, error) {
	t.Helper()
	type outcome struct {
		v        js.Value
		rejected bool
	}
	done := make(chan outcome, 1)
	onResolve := js.FuncOf(func(_ js.Value, a []js.Value) any { done <- outcome{v: a[0]}; return nil })
	onReject := js.FuncOf(func(_ js.Value, a []js.Value) any { done <- outcome{v: a[0], rejected: true}; return nil })
	defer onResolve.Release()
	defer onReject.Release()
	require.Equal(t, "Promise", p.Get("constructor").Get("name").String(), "the method must return a Promise")
	p.Call("then", onResolve, onReject)
	select {
	case o := <-done:
		if !o.rejected {
			return o.v, nil
		}
		require.True(t, o.v.InstanceOf(js.Global().Get("Error")), "rejections must be Errors")
		e := &jsError{Message: o.v.Get("message").String(), Code: o.v.Get("code").String()}
		if f := o.v.Get("field"); f.Type() == js.TypeString {
			e.Field, e.Param = f.String(), o.v.Get("param").String()
		}
		return js.Undefined(), e
	case <-time.After(60 * time.Second):
		t.Fatal("the Promise did not settle within 60 s")
		return js.Undefined(), nil
	}
}

// call invokes a binding method and waits for its Promise.
func call(t testing.TB, b *Binding, method string, args ...any) (js.Value, error) {
	t.Helper()
	return await(t, b.Value().Call(method, args...))
}

// mustCall is call for calls that must succeed.
func mustCall(t testing.TB, b *Binding, method string, args ...any) js.Value {
	t.Helper()
	v, err := call(t, b, method, args...)
	require.NoError(t, err, "%s", method)
	return v
}

// newLoaded returns a binding with the default model loaded; the test
// releases it and checks that every function was released.
func newLoaded(t testing.TB) *Binding {
	t.Helper()
	b := New()
	t.Cleanup(func() {
		b.Release()
		require.Zero(t, b.LiveFuncs(), "js.Funcs left unreleased")
	})
	mustCall(t, b, "load", jsBytes(models.Default()))
	return b
}

// nativeModel loads the default model with the engine directly: the
// reference the bridge must agree with.
func nativeModel(t testing.TB) *engine.Model {
	t.Helper()
	m, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	return m
}

// ints converts a JavaScript array of numbers.
func ints(v js.Value) []int {
	out := make([]int, v.Length())
	for i := range out {
		out[i] = v.Index(i).Int()
	}
	return out
}

// chunkLog records what a stream's onToken receives.
type chunkLog struct {
	fn     js.Func
	texts  []string
	tokens []int
	traces []js.Value
	// onChunk, when set, runs after a chunk is recorded, with its 1-based index.
	onChunk func(n int)
}

// newChunkLog returns a recorder whose fn is passed as onToken.
func newChunkLog(t testing.TB) *chunkLog {
	l := &chunkLog{}
	l.fn = js.FuncOf(func(_ js.Value, a []js.Value) any {
		c := a[0]
		l.texts = append(l.texts, c.Get("text").String())
		l.tokens = append(l.tokens, c.Get("token").Int())
		l.traces = append(l.traces, c.Get("trace"))
		if l.onChunk != nil {
			l.onChunk(len(l.tokens))
		}
		return nil
	})
	t.Cleanup(l.fn.Release)
	return l
}

// joined is the text of all chunks.
func (l *chunkLog) joined() string {
	s := ""
	for _, t := range l.texts {
		s += t
	}
	return s
}

// chatRequest is a chat's request as chat.completions.create sends it:
// fields (OpenAI's request body) as JSON.
func chatRequest(t testing.TB, fields map[string]any) js.Value {
	t.Helper()
	raw, err := json.Marshal(fields)
	require.NoError(t, err)
	return js.ValueOf(string(raw))
}

// userSays is the messages of a conversation of one user message.
func userSays(text string) []any {
	return []any{map[string]any{"role": "user", "content": text}}
}

// greedyChat is a chat request for greedy decoding of n tokens in reply to
// msgs.
func greedyChat(t testing.TB, msgs any, n int) js.Value {
	return chatRequest(t, map[string]any{"messages": msgs, "temperature": 0, "max_tokens": n})
}

// greedy is options for greedy decoding of n tokens.
func greedy(n int) js.Value {
	return obj(map[string]any{"temperature": 0, "maxTokens": n})
}
