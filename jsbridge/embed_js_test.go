package jsbridge

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/internal/golden"
)

// embedTexts are texts of a few tokens each for the default model.
var embedTexts = []string{"Once upon a time", "The cat sat on the mat.", "Lily liked to play in the park with her dog."}

// vectors decodes embed's result: its Uint8Array of little-endian float32
// values, dimensions a vector.
func vectors(t *testing.T, res js.Value) [][]float32 {
	t.Helper()
	dim := res.Get("dimensions").Int()
	raw := make([]byte, res.Get("vectors").Length())
	js.CopyBytesToGo(raw, res.Get("vectors"))
	require.Zero(t, len(raw)%(4*dim), "whole vectors")
	out := make([][]float32, len(raw)/(4*dim))
	for i := range out {
		out[i] = make([]float32, dim)
		for j := range dim {
			out[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(i*dim+j):]))
		}
	}
	return out
}

// nativeEmbeddings are the engine's embeddings of texts with the default
// model: what the bridge must return, bit for bit.
func nativeEmbeddings(t *testing.T, texts []string, opts engine.EmbedOptions) []engine.Embedding {
	t.Helper()
	m := nativeModel(t)
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	embs, err := s.Embed(context.Background(), texts, opts)
	require.NoError(t, err)
	return embs
}

// TestEmbedMatchesEngine: embed of a string and of a list gives the
// engine's vectors bit for bit, normalised or raw, with each input's token
// count and the usage; info says what the model does.
func TestEmbedMatchesEngine(t *testing.T) {
	b := newLoaded(t)
	info := mustCall(t, b, "info")
	assert.True(t, info.Get("generates").Bool())
	assert.False(t, info.Get("reranks").Bool())
	assert.Equal(t, "mean", info.Get("pooling").String())
	dim := info.Get("embeddingLength").Int()
	require.Positive(t, dim)

	for _, raw := range []bool{false, true} {
		want := nativeEmbeddings(t, embedTexts, engine.EmbedOptions{Raw: raw})
		res := mustCall(t, b, "embed", js.ValueOf(toAny(embedTexts)), obj(map[string]any{"normalize": !raw}))
		assert.Equal(t, dim, res.Get("dimensions").Int())
		got := vectors(t, res)
		require.Len(t, got, len(embedTexts))
		total := 0
		for i, w := range want {
			assert.Equal(t, w.Vector, got[i], "input %d, raw %v", i, raw)
			assert.Equal(t, w.Tokens, res.Get("tokens").Index(i).Int())
			assert.False(t, res.Get("truncated").Index(i).Bool())
			total += w.Tokens
		}
		assert.Equal(t, total, res.Get("usage").Get("promptTokens").Int())
		assert.Equal(t, total, res.Get("usage").Get("totalTokens").Int())
		if !raw {
			assert.InDelta(t, 1, norm(got[0]), 1e-6, "normalised")
		}
	}

	// One string is one input.
	want := nativeEmbeddings(t, embedTexts[:1], engine.EmbedOptions{})
	res := mustCall(t, b, "embed", embedTexts[0])
	assert.Equal(t, [][]float32{want[0].Vector}, vectors(t, res))
	assert.GreaterOrEqual(t, res.Get("yieldMs").Float(), 0.0)

	// The session still generates llama2.c's tokens afterwards.
	run := golden.RuncStories260K(t).Runs[0]
	gen := mustCall(t, b, "generate", "", greedy(len(run.GeneratedIDs)))
	assert.Equal(t, run.GeneratedIDs, ints(gen.Get("tokens")))
}

// TestEmbedTruncate: a text longer than the context fails with
// prompt_too_long, unless truncate, which cuts it to the context.
func TestEmbedTruncate(t *testing.T) {
	b := newLoaded(t)
	ctxLen := mustCall(t, b, "info").Get("sessionContextLength").Int()
	long := strings.Repeat("Once upon a time ", ctxLen)
	_, err := call(t, b, "embed", js.ValueOf([]any{"short", long}))
	requireField(t, err, "prompt_too_long", "")
	assert.Contains(t, err.Error(), "input[1]")

	res := mustCall(t, b, "embed", js.ValueOf([]any{"short", long}), obj(map[string]any{"truncate": true}))
	assert.False(t, res.Get("truncated").Index(0).Bool())
	assert.True(t, res.Get("truncated").Index(1).Bool())
	assert.Equal(t, ctxLen, res.Get("tokens").Index(1).Int())
	want := nativeEmbeddings(t, []string{long}, engine.EmbedOptions{Truncate: true})
	assert.Equal(t, want[0].Vector, vectors(t, res)[1])
}

// TestEmbedInvalid: wrong inputs and options reject with invalid_argument
// and the field as JavaScript wrote it.
func TestEmbedInvalid(t *testing.T) {
	b := newLoaded(t)
	many := make([]any, engine.MaxEmbedInputs+1)
	for i := range many {
		many[i] = "a"
	}
	cases := []struct {
		input, opts any
		want, field string
	}{
		{5, nil, "input must be a string or an array of strings, got 5", "input"},
		{js.Undefined(), nil, "input must be a string or an array of strings, got undefined", "input"},
		{[]any{}, nil, "input must not be empty", "input"},
		{"", nil, "input must not be an empty string", "input"},
		{[]any{""}, nil, "input[0] must not be an empty string", "input[0]"},
		{[]any{"a", ""}, nil, "input[1] must not be an empty string", "input[1]"},
		{[]any{"a", 5}, nil, "input[1] must be a string, got 5", "input[1]"},
		{many, nil, fmt.Sprintf("input must have at most %d elements, got %d", engine.MaxEmbedInputs, len(many)), "input"},
		{"a", 5, "options must be an object, got 5", "options"},
		{"a", map[string]any{"normalize": 1}, "normalize must be a boolean, got 1", "normalize"},
		{"a", map[string]any{"truncate": "yes"}, `truncate must be a boolean, got string "yes"`, "truncate"},
		{"a", map[string]any{"signal": map[string]any{}}, "signal must be an AbortSignal, got an object", "signal"},
		{"a", map[string]any{"dimensions": 8}, `unknown option "dimensions" in options (known: truncate, normalize, signal, session)`, ""},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			args := []any{c.input}
			if c.opts != nil {
				args = append(args, c.opts)
			}
			_, err := call(t, b, "embed", args...)
			requireField(t, err, "invalid_argument", c.field)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// TestRerankUnsupported: the default model does not rerank: rerank
// rejects with unsupported_model, after checking its arguments.
func TestRerankUnsupported(t *testing.T) {
	b := newLoaded(t)
	_, err := call(t, b, "rerank", "a query", js.ValueOf([]any{"a", "b"}))
	requireField(t, err, "unsupported_model", "")
	assert.Contains(t, err.Error(), "does not rerank")
	for _, c := range []struct {
		args        []any
		want, field string
	}{
		{[]any{5, js.ValueOf([]any{"a"})}, "query must be a string, got 5", "query"},
		{[]any{"q", "a"}, `documents must be an array, got string "a"`, "documents"},
		{[]any{"q", js.ValueOf([]any{"a", nil})}, "documents[1] must be a string, got null", "documents[1]"},
		{[]any{"q", js.ValueOf([]any{"a"}), obj(map[string]any{"normalize": true})}, `unknown option "normalize" in options (known: truncate, signal, session)`, ""},
	} {
		_, err := call(t, b, "rerank", c.args...)
		requireField(t, err, "invalid_argument", c.field)
		assert.Contains(t, err.Error(), c.want)
	}
}

// TestEmbedAbort: an embed whose signal aborts rejects with code aborted:
// aborted before the call, while it waits behind a generation, and while
// it runs (between the engine's passes: the bridge yields there, so the
// abort arrives long before the work would end). The session works
// afterwards.
func TestEmbedAbort(t *testing.T) {
	b := newLoaded(t)
	ac := js.Global().Get("AbortController").New()
	ac.Call("abort")
	_, err := call(t, b, "embed", "a", obj(map[string]any{"signal": ac.Get("signal")}))
	requireField(t, err, "aborted", "")

	// Behind a stream: the embed waits its turn, and its abort ends it
	// while the stream goes on.
	waiting := js.Global().Get("AbortController").New()
	var queued js.Value
	log := newChunkLog(t)
	log.onChunk = func(n int) {
		switch n {
		case 1:
			queued = b.Value().Call("embed", "a", obj(map[string]any{"signal": waiting.Get("signal")}))
			queued.Call("catch", jsFunction("", "")) // it rejects before await looks: not unhandled
		case 3:
			waiting.Call("abort")
		}
	}
	res := mustCall(t, b, "stream", "", greedy(20), log.fn)
	assert.Equal(t, "length", res.Get("finishReason").String())
	_, err = await(t, queued)
	requireField(t, err, "aborted", "")
	assert.Contains(t, err.Error(), "the signal aborted the embedding before its turn came")

	// While it runs: the bridge yields to the event loop between the
	// engine's passes, where an abort lands. (Node.js delivers a port's
	// messages in batches of up to a thousand, so a timer would wait for
	// the whole call there; the browser tests abort from the page.)
	texts := make([]any, 300)
	for i := range texts {
		texts[i] = fmt.Sprintf("%s %d", embedTexts[i%len(embedTexts)], i)
	}
	running := js.Global().Get("AbortController").New()
	yields := 0
	b.passHook = func(n int) {
		if yields = n; n == 3 {
			running.Call("abort")
		}
	}
	defer func() { b.passHook = nil }()
	_, err = call(t, b, "embed", js.ValueOf(texts), obj(map[string]any{"signal": running.Get("signal")}))
	requireField(t, err, "aborted", "")
	assert.Contains(t, err.Error(), "the signal aborted the embedding while it ran")
	assert.Equal(t, 3, yields, "the abort is seen at the next pass")

	run := golden.RuncStories260K(t).Runs[0]
	gen := mustCall(t, b, "generate", "", greedy(len(run.GeneratedIDs)))
	assert.Equal(t, run.GeneratedIDs, ints(gen.Get("tokens")))
}

// TestEmbedQueues: an embed asked for while a generation runs waits for it
// (no busy error), and a generation asked for after the embed waits for
// the embed: they settle in call order.
func TestEmbedQueues(t *testing.T) {
	b := newLoaded(t)
	var order []string
	note := func(name string) js.Func {
		f := js.FuncOf(func(js.Value, []js.Value) any { order = append(order, name); return nil })
		t.Cleanup(f.Release)
		return f
	}
	var embedP, genP js.Value
	log := newChunkLog(t)
	log.onChunk = func(n int) {
		if n == 1 {
			embedP = b.Value().Call("embed", "a")
			embedP.Call("then", note("embed"))
			genP = b.Value().Call("generate", "", greedy(1))
			genP.Call("then", note("generate"))
		}
	}
	streamP := b.Value().Call("stream", "", greedy(10), log.fn)
	streamP.Call("then", note("stream"))
	_, err := await(t, streamP)
	require.NoError(t, err)
	_, err = await(t, embedP)
	require.NoError(t, err)
	_, err = await(t, genP)
	require.NoError(t, err)
	assert.Equal(t, []string{"stream", "embed", "generate"}, order)
	assert.Zero(t, b.queue.length(), "every call left the queue")
}

// requireField checks that err is a rejection with code and field (""
// for none).
func requireField(t *testing.T, err error, code, field string) {
	t.Helper()
	requireCode(t, err, code, field)
	var e *jsError
	require.ErrorAs(t, err, &e)
	assert.Equal(t, field, e.Field, e.Message)
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}
