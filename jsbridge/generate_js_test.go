package jsbridge

import (
	"context"
	"strings"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/sampling"
)

// TestGreedyMatchesLlama2C: generate with temperature 0 reproduces run.c's
// token ids and text for every golden prompt.
func TestGreedyMatchesLlama2C(t *testing.T) {
	g := golden.RuncStories260K(t)
	b := newLoaded(t)
	for _, run := range g.Runs {
		t.Run(run.Prompt, func(t *testing.T) {
			res := mustCall(t, b, "generate", run.Prompt, greedy(g.Steps+1-len(run.PromptIDs)))
			assert.Equal(t, run.PromptIDs, ints(res.Get("promptTokens")))
			assert.Equal(t, run.GeneratedIDs, ints(res.Get("tokens")))
			assert.Equal(t, run.Text, run.Prompt+res.Get("text").String())
			assert.Equal(t, "length", res.Get("finishReason").String())
			usage := res.Get("usage")
			assert.Equal(t, len(run.PromptIDs), usage.Get("promptTokens").Int())
			assert.Equal(t, len(run.GeneratedIDs), usage.Get("completionTokens").Int())
			assert.Equal(t, len(run.PromptIDs)+len(run.GeneratedIDs), usage.Get("totalTokens").Int())
			timings := res.Get("timings")
			for _, k := range []string{"timeToFirstTokenMs", "prefillMs", "decodeMs", "decodeTokensPerSecond", "yieldMs"} {
				assert.GreaterOrEqual(t, timings.Get(k).Float(), 0.0, k)
			}
			assert.Equal(t, len(run.GeneratedIDs)-1, timings.Get("decodeTokens").Int())
		})
	}
}

// TestStreamDeliversEachToken: stream calls onToken once per generated token,
// in order, with the token's id and text; the chunks make the result.
func TestStreamDeliversEachToken(t *testing.T) {
	run := golden.RuncStories260K(t).Runs[0]
	b := newLoaded(t)
	log := newChunkLog(t)
	res := mustCall(t, b, "stream", "", greedy(len(run.GeneratedIDs)), log.fn)
	assert.Equal(t, run.GeneratedIDs, log.tokens)
	assert.Equal(t, run.Text, log.joined())
	assert.Equal(t, res.Get("text").String(), log.joined())
	for _, tr := range log.traces {
		assert.True(t, tr.IsUndefined(), "no trace unless asked for")
	}
}

// TestStreamYieldsToEventLoop: a timer set before the stream fires while it
// runs, long before the last token: the generating goroutine hands control
// back to JavaScript between tokens. Without yielding, the timer could only
// fire after the Promise settled.
func TestStreamYieldsToEventLoop(t *testing.T) {
	b := newLoaded(t)
	fired := false
	timer := js.FuncOf(func(js.Value, []js.Value) any { fired = true; return nil })
	defer timer.Release()
	log := newChunkLog(t)
	firedAt := 0
	log.onChunk = func(n int) {
		if fired && firedAt == 0 {
			firedAt = n
		}
	}
	js.Global().Call("setTimeout", timer, 0)
	mustCall(t, b, "stream", "", greedy(200), log.fn)
	require.NotZero(t, firedAt, "the timer never fired during the stream")
	assert.Less(t, firedAt, 50, "the timer fired only at token %d of 200", firedAt)
}

// TestAbort: aborting the signal ends the generation at once with
// finishReason "abort" and the text so far; the next call works and,
// reusing the session, still reproduces the golden tokens.
func TestAbort(t *testing.T) {
	run := golden.RuncStories260K(t).Runs[0]
	b := newLoaded(t)
	ac := js.Global().Get("AbortController").New()
	log := newChunkLog(t)
	log.onChunk = func(n int) {
		if n == 5 {
			ac.Call("abort")
		}
	}
	opts := obj(map[string]any{"temperature": 0, "maxTokens": 200, "signal": ac.Get("signal")})
	res := mustCall(t, b, "stream", "", opts, log.fn)
	assert.Equal(t, "abort", res.Get("finishReason").String())
	assert.Equal(t, run.GeneratedIDs[:5], ints(res.Get("tokens")), "the abort is seen before the next token")
	assert.Equal(t, run.GeneratedIDs[:5], log.tokens)

	res = mustCall(t, b, "generate", "", greedy(len(run.GeneratedIDs)))
	assert.Equal(t, run.GeneratedIDs, ints(res.Get("tokens")))

	// A signal aborted before the call: no tokens at all.
	ac = js.Global().Get("AbortController").New()
	ac.Call("abort")
	res = mustCall(t, b, "generate", "", obj(map[string]any{"signal": ac.Get("signal")}))
	assert.Equal(t, "abort", res.Get("finishReason").String())
	assert.Zero(t, res.Get("tokens").Length())
}

// TestQueue: generations asked for while one runs wait their turn and run in
// call order; one aborted while it waits resolves "abort" without running.
func TestQueue(t *testing.T) {
	run := golden.RuncStories260K(t).Runs[0]
	b := newLoaded(t)
	var order []string
	logFor := func(name string) js.Value {
		l := newChunkLog(t)
		l.onChunk = func(int) { order = append(order, name) }
		return l.fn.Value
	}
	n := 20
	waiting := js.Global().Get("AbortController").New()
	first := b.Value().Call("stream", "", greedy(n), logFor("first"))
	second := b.Value().Call("stream", "", greedy(n), logFor("second"))
	aborted := b.Value().Call("stream", "", obj(map[string]any{"signal": waiting.Get("signal")}), logFor("aborted"))
	third := b.Value().Call("generate", "", greedy(n))
	waiting.Call("abort")

	for _, p := range []js.Value{first, second, third} {
		res, err := await(t, p)
		require.NoError(t, err)
		assert.Equal(t, run.GeneratedIDs[:n], ints(res.Get("tokens")))
	}
	res, err := await(t, aborted)
	require.NoError(t, err)
	assert.Equal(t, "abort", res.Get("finishReason").String())
	assert.Zero(t, res.Get("tokens").Length())

	want := make([]string, 0, 2*n)
	for range n {
		want = append(want, "first")
	}
	for range n {
		want = append(want, "second")
	}
	assert.Equal(t, want, order, "the second stream starts after the first ends")
}

// TestSeedReproducesAndMatchesEngine: an explicit seed makes sampling
// reproducible and equal to the engine's own output for the same
// parameters; an omitted seed is chosen, reported, and reproduces the run
// when given back.
func TestSeedReproducesAndMatchesEngine(t *testing.T) {
	b := newLoaded(t)
	s, err := nativeModel(t).NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	const prompt = "Once upon a time"
	for _, c := range []struct {
		name string
		opts map[string]any
		want sampling.Params
	}{
		{"defaults", map[string]any{"seed": 42},
			withSeed(engine.DefaultGenerateOptions().Sampling, 42)},
		{"hot with penalties", map[string]any{"seed": 7, "temperature": 1.3, "topK": 0, "topP": 1, "minP": 0, "repeatPenalty": 1.2, "presencePenalty": 0.5, "frequencyPenalty": 0.25},
			sampling.Params{Temperature: 1.3, TopP: 1, RepeatPenalty: 1.2, PresencePenalty: 0.5, FrequencyPenalty: 0.25, Seed: 7}},
		{"top-k only", map[string]any{"seed": 1 << 52, "temperature": 1, "topK": 5, "topP": 1, "minP": 0},
			sampling.Params{Temperature: 1, TopK: 5, TopP: 1, Seed: 1 << 52}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts["maxTokens"] = 60
			res := mustCall(t, b, "generate", prompt, obj(c.opts))
			want, err := s.Generate(context.Background(), prompt, engine.GenerateOptions{MaxTokens: 60, Sampling: c.want}, nil)
			require.NoError(t, err)
			assert.Equal(t, want.Tokens, ints(res.Get("tokens")))
			assert.Equal(t, want.Text, res.Get("text").String())
			assert.Equal(t, float64(c.want.Seed), res.Get("seed").Float())
		})
	}

	first := mustCall(t, b, "generate", prompt, obj(map[string]any{"maxTokens": 40}))
	seed := first.Get("seed")
	require.Equal(t, js.TypeNumber, seed.Type())
	assert.LessOrEqual(t, seed.Float(), float64(maxSeed))
	again := mustCall(t, b, "generate", prompt, obj(map[string]any{"maxTokens": 40, "seed": seed}))
	assert.Equal(t, ints(first.Get("tokens")), ints(again.Get("tokens")))
	other := mustCall(t, b, "generate", prompt, obj(map[string]any{"maxTokens": 1}))
	assert.NotEqual(t, seed.Float(), other.Get("seed").Float(), "seeds are drawn afresh (equal with probability 2^-53)")
}

// TestStop: a stop string ends the generation before it, with reason "stop".
func TestStop(t *testing.T) {
	run := golden.RuncStories260K(t).Runs[1] // "Once upon a time" continues ", there was a little girl named Lily."
	b := newLoaded(t)
	res := mustCall(t, b, "generate", run.Prompt, obj(map[string]any{"temperature": 0, "stop": []any{"Lily", "zebra"}}))
	assert.Equal(t, "stop", res.Get("finishReason").String())
	want := run.Text[len(run.Prompt):]
	want = want[:len(", there was a little girl named ")]
	assert.Equal(t, want, res.Get("text").String())
	res = mustCall(t, b, "generate", run.Prompt, obj(map[string]any{"temperature": 0, "stop": "little"}))
	assert.Equal(t, ", there was a ", res.Get("text").String())
}

// TestTrace: with trace, each chunk carries the sampling picture, equal to
// the engine's own Token.Trace for the same run.
func TestTrace(t *testing.T) {
	b := newLoaded(t)
	m := nativeModel(t)
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	p := sampling.Params{Temperature: 0.9, TopK: 20, TopP: 0.9, MinP: 0.02, Seed: 3}
	var want []sampling.Trace
	_, err = s.Generate(context.Background(), "The little dog", engine.GenerateOptions{MaxTokens: 30, Sampling: p, Trace: true},
		func(tok engine.Token) error {
			if tok.Trace != nil {
				want = append(want, *tok.Trace)
			}
			return nil
		})
	require.NoError(t, err)

	log := newChunkLog(t)
	opts := obj(map[string]any{"maxTokens": 30, "temperature": 0.9, "topK": 20, "topP": 0.9, "minP": 0.02, "seed": 3, "trace": true})
	mustCall(t, b, "stream", "The little dog", opts, log.fn)
	require.Len(t, log.traces, len(want))
	for i, tr := range log.traces {
		w := want[i]
		assert.Equal(t, w.Chosen, log.tokens[i])
		assert.Equal(t, w.Chosen, tr.Get("chosen").Int())
		assert.Equal(t, w.ChosenRank, tr.Get("chosenRank").Int())
		assert.Equal(t, w.Kept, tr.Get("kept").Int())
		assert.Equal(t, w.Greedy, tr.Get("greedy").Bool())
		top := tr.Get("top")
		require.Equal(t, w.N, top.Length())
		for j := range w.N {
			e, got := w.Top[j], top.Index(j)
			assert.Equal(t, e.ID, got.Get("id").Int())
			assert.Equal(t, float64(e.Logit), got.Get("logit").Float())
			assert.Equal(t, e.Prob, got.Get("prob").Float())
			assert.Equal(t, e.ProbTemp, got.Get("probTemp").Float())
			assert.Equal(t, e.ProbFinal, got.Get("probFinal").Float())
			assert.Equal(t, js.TypeString, got.Get("text").Type())
		}
	}
}

// TestChat: with the default model's "plain" template a conversation is its
// message contents joined by "\n", so chat equals generate on that text. A
// bad request rejects with invalid_argument, naming the field as OpenAI's
// API does (param).
func TestChat(t *testing.T) {
	b := newLoaded(t)
	msgs := []any{
		map[string]any{"role": "system", "content": "Once upon a time"},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "there was"}, map[string]any{"type": "text", "text": " a cat"}}},
	}
	log := newChunkLog(t)
	res := mustCall(t, b, "chat", greedyChat(t, msgs, 40), js.Undefined(), log.fn)
	want := mustCall(t, b, "generate", "Once upon a time\nthere was a cat", greedy(40))
	assert.Equal(t, ints(want.Get("tokens")), ints(res.Get("tokens")))
	assert.Equal(t, ints(want.Get("promptTokens")), ints(res.Get("promptTokens")))
	assert.Equal(t, want.Get("text").String(), log.joined())

	mustCall(t, b, "chat", greedyChat(t, userSays("Hi"), 2)) // no callback
	for _, c := range []struct {
		msgs        any
		param, want string
	}{
		{"hello", "messages", "messages must be an array, got a string"},
		{[]any{"hello"}, "messages[0]", "messages[0] must be an object, got a string"},
		{[]any{map[string]any{"content": "x"}}, "messages[0].role", "messages[0].role"},
		{[]any{map[string]any{"role": "user", "content": 5}}, "messages[0].content", "messages[0].content: must be a string or an array of content parts"},
		{[]any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image_url"}}}}, "messages[0].content", `part 0 has type "image_url"; only text parts are supported`},
		{[]any{map[string]any{"role": "wizard", "content": "x"}}, "messages", `"wizard"`},
		{[]any{}, "messages", "messages"},
	} {
		_, err := call(t, b, "chat", greedyChat(t, c.msgs, 2))
		var je *jsError
		require.ErrorAs(t, err, &je, "%v", c.msgs)
		assert.Equal(t, "invalid_argument", je.Code, "%v", c.msgs)
		assert.Equal(t, c.param, je.Param, "%v", c.msgs)
		assert.Contains(t, je.Message, c.want, "%v", c.msgs)
	}
}

// withSeed is p with its seed set.
func withSeed(p sampling.Params, seed uint64) sampling.Params {
	p.Seed = seed
	return p
}

// TestOnPromptProgress: onPromptProgress gets {done, total} after each
// evaluated block of prompt tokens (blocks of engine.DefaultPromptBlock),
// the last with done == total; it must be a function; a callback that
// throws does not stop the generation.
func TestOnPromptProgress(t *testing.T) {
	b := newLoaded(t)
	prompt := strings.Repeat("Once upon a time, there was a little girl named Lily. ", 6)
	var seen [][2]int
	progress := js.FuncOf(func(_ js.Value, a []js.Value) any {
		seen = append(seen, [2]int{a[0].Get("done").Int(), a[0].Get("total").Int()})
		return nil
	})
	defer progress.Release()
	res := mustCall(t, b, "generate", prompt, obj(map[string]any{"temperature": 0, "maxTokens": 2, "onPromptProgress": progress}))
	total := res.Get("usage").Get("promptTokens").Int()
	require.Greater(t, total, 2*engine.DefaultPromptBlock, "a prompt of several blocks")
	require.NotEmpty(t, seen)
	for i, p := range seen {
		assert.Equal(t, total, p[1], "total")
		if i < len(seen)-1 {
			assert.Equal(t, (i+1)*engine.DefaultPromptBlock, p[0], "block %d", i)
		}
	}
	assert.Equal(t, total, seen[len(seen)-1][0], "the last block")

	thrower := js.Global().Get("Function").New("p", "throw new Error('boom')")
	res = mustCall(t, b, "generate", prompt+"Again.", obj(map[string]any{"temperature": 0, "maxTokens": 2, "onPromptProgress": thrower}))
	assert.Equal(t, 2, res.Get("usage").Get("completionTokens").Int(), "a throwing callback does not stop the generation")

	_, err := call(t, b, "generate", prompt, obj(map[string]any{"onPromptProgress": 5}))
	var je *jsError
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "onPromptProgress", je.Field)
	assert.Contains(t, je.Message, "onPromptProgress must be a function, got 5")
}

// TestChatEntryErrorsNameTheirPath: a bad entry of chat's logit_bias or
// stop rejects naming its whole path, as the HTTP API's param does
// (logit_bias.1, stop[1]; a stop written as one string is stop).
func TestChatEntryErrorsNameTheirPath(t *testing.T) {
	b := newLoaded(t)
	for _, c := range []struct {
		fields      map[string]any
		param, want string
	}{
		{map[string]any{"logit_bias": map[string]any{"1": 500}}, "logit_bias.1", "logit_bias.1 = 500, must be in [-100, 100]"},
		{map[string]any{"logit_bias": map[string]any{"2": 1, "600": 1}}, "logit_bias.600", "logit_bias.600 names a token id outside [0, 512)"},
		{map[string]any{"stop": []any{"a", ""}}, "stop[1]", "stop[1] is empty"},
		{map[string]any{"stop": ""}, "stop", "stop is empty"},
	} {
		c.fields["messages"], c.fields["max_tokens"] = userSays("Hi"), 2
		_, err := call(t, b, "chat", chatRequest(t, c.fields))
		var je *jsError
		require.ErrorAs(t, err, &je, "%v", c.fields)
		assert.Equal(t, "invalid_argument", je.Code, "%v", c.fields)
		assert.Equal(t, c.param, je.Param, "%v", c.fields)
		assert.Equal(t, c.param, je.Field, "%v", c.fields)
		assert.Contains(t, je.Message, c.want, "%v", c.fields)
	}
}
