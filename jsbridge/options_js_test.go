package jsbridge

import (
	"math"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/sampling"
)

// TestInvalidOptions: each bad option rejects with code "invalid_argument"
// and a message naming the JavaScript field and the value it had.
func TestInvalidOptions(t *testing.T) {
	b := newLoaded(t)
	nan, inf := math.NaN(), math.Inf(1)
	seventeen := make([]any, 17)
	for i := range seventeen {
		seventeen[i] = "a"
	}
	cases := []struct {
		opts  any
		want  string
		field string // the field the error names, when it names one
	}{
		{5, "options must be an object, got 5", "options"},
		{"greedy", `options must be an object, got string "greedy"`, "options"},
		{js.ValueOf([]any{}), "options must be an object, got an array", "options"},
		{map[string]any{"temprature": 0.5}, `unknown option "temprature" in options (known: maxTokens, temperature, topK, topP, minP, repeatPenalty, presencePenalty, frequencyPenalty, seed, stop, trace, signal, onPromptProgress, responseFormat, grammar, session)`, ""},
		{map[string]any{"max_tokens": 5}, `unknown option "max_tokens"`, ""},
		// The bridge checks types and what fits a Go value...
		{map[string]any{"maxTokens": 1.5}, "maxTokens must be an integer of 32 bits, got 1.5", "maxTokens"},
		{map[string]any{"maxTokens": "10"}, `maxTokens must be an integer, got string "10"`, "maxTokens"},
		{map[string]any{"maxTokens": 1e300}, "maxTokens must be an integer of 32 bits, got 1e+300", "maxTokens"},
		{map[string]any{"temperature": "hot"}, `temperature must be a number, got string "hot"`, "temperature"},
		{map[string]any{"temperature": true}, "temperature must be a number, got boolean true", "temperature"},
		{map[string]any{"temperature": nan}, "temperature must be a finite number, got NaN", "temperature"},
		{map[string]any{"temperature": inf}, "temperature must be a finite number, got Infinity", "temperature"},
		{map[string]any{"temperature": 1e39}, "temperature must be a finite number, got 1e+39", "temperature"},
		{map[string]any{"topK": 2.5}, "topK must be an integer of 32 bits, got 2.5", "topK"},
		{map[string]any{"seed": -1}, "seed must be an integer in [0, 2^53 - 1], got -1", "seed"},
		{map[string]any{"seed": 1 << 53}, "seed must be an integer in [0, 2^53 - 1], got 9007199254740992", "seed"},
		{map[string]any{"seed": "42"}, `seed must be an integer, got string "42"`, "seed"},
		{map[string]any{"stop": 5}, "stop must be a string or an array of strings, got 5", "stop"},
		{map[string]any{"stop": []any{"a", 5}}, "stop[1] must be a string, got 5", "stop[1]"},
		{map[string]any{"trace": 1}, "trace must be a boolean, got 1", "trace"},
		{map[string]any{"signal": map[string]any{"aborted": false}}, "signal must be an AbortSignal, got an object", "signal"},
		// ...and the engine the ranges, in JavaScript's names.
		{map[string]any{"maxTokens": -1}, "maxTokens must be >= 0 (0: until the context is full), got -1", "maxTokens"},
		{map[string]any{"temperature": -0.5}, "temperature must be finite and >= 0, got -0.5", "temperature"},
		{map[string]any{"topK": -1}, "topK must be >= 0 (0 = off), got -1", "topK"},
		{map[string]any{"topP": 1.5}, "topP must be in [0, 1] (0 or 1 = off), got 1.5", "topP"},
		{map[string]any{"minP": -0.1}, "minP must be in [0, 1] (0 = off), got -0.1", "minP"},
		{map[string]any{"repeatPenalty": -1}, "repeatPenalty must be finite and >= 0 (0 or 1 = off), got -1", "repeatPenalty"},
		{map[string]any{"presencePenalty": 3}, "presencePenalty must be in [-2, 2], got 3", "presencePenalty"},
		{map[string]any{"frequencyPenalty": -2.5}, "frequencyPenalty must be in [-2, 2], got -2.5", "frequencyPenalty"},
		{map[string]any{"stop": []any{""}}, "stop[0] must be valid UTF-8 of 1..256 bytes", "stop[0]"},
		{map[string]any{"stop": seventeen}, "stop holds at most 16 stop strings, got 17", "stop"},
	}
	for _, c := range cases {
		t.Run(js.Global().Get("JSON").Call("stringify", c.opts).String(), func(t *testing.T) {
			_, err := call(t, b, "generate", "Once", c.opts)
			var je *jsError
			require.ErrorAs(t, err, &je)
			assert.Equal(t, "invalid_argument", je.Code)
			assert.Contains(t, je.Message, c.want)
			assert.Equal(t, c.field, je.Field)
			if c.field != "" {
				assert.Equal(t, snakeCase(c.field), je.Param, "the shared name, as OpenAI's API spells it")
			}
		})
	}

	t.Run("arguments", func(t *testing.T) {
		for _, c := range []struct {
			method string
			args   []any
			want   string
		}{
			{"generate", []any{42}, "prompt must be a string, got 42"},
			{"generate", nil, "prompt must be a string, got undefined"},
			{"generate", []any{"x", nil, jsFunction("", "")}, "generate takes (prompt, options); use stream for a token callback"},
			{"stream", []any{"x", nil}, "onToken must be a function, got undefined"},
			{"stream", []any{"x", nil, "f"}, `onToken must be a function, got string "f"`},
			{"chat", []any{chatRequest(t, map[string]any{"messages": userSays("x")}), nil, 3}, "onToken must be a function, got 3"},
			{"chat", []any{js.ValueOf([]any{map[string]any{"role": "user", "content": "x"}})}, "request must be a string, got an array"},
			{"chat", []any{chatRequest(t, map[string]any{"messages": userSays("x")}), map[string]any{"temperature": 0}}, `unknown option "temperature" in options (known: signal, contextShift, nKeep, session)`},
			{"tokenize", []any{7}, "text must be a string, got 7"},
			{"tokenize", []any{"x", map[string]any{"bos": true}}, `unknown option "bos" in options (known: addBos, special)`},
			{"tokenize", []any{"x", map[string]any{"addBos": "yes"}}, `addBos must be a boolean, got string "yes"`},
		} {
			_, err := call(t, b, c.method, c.args...)
			var je *jsError
			require.ErrorAs(t, err, &je, "%s %v", c.method, c.args)
			assert.Equal(t, "invalid_argument", je.Code)
			assert.Contains(t, je.Message, c.want)
		}
	})

	// The binding keeps working after all those rejections.
	res := mustCall(t, b, "generate", "Once", greedy(4))
	assert.Equal(t, 4, res.Get("tokens").Length())
}

// TestOptionDefaults: omitted, undefined and null fields take the documented
// defaults (the CLI's); given fields map one to one onto engine options.
func TestOptionDefaults(t *testing.T) {
	b := New()
	defer b.Release()
	want := engine.DefaultGenerateOptions()
	for _, opts := range []js.Value{
		js.Undefined(), js.Null(), obj(map[string]any{}),
		obj(map[string]any{"temperature": nil, "topK": js.Undefined(), "stop": nil, "signal": nil}),
	} {
		var r request
		require.NoError(t, b.parseGenerateOptions(opts, &r))
		assert.LessOrEqual(t, r.opts.Sampling.Seed, uint64(maxSeed))
		r.opts.Sampling.Seed = 0
		assert.Equal(t, want, r.opts)
		assert.True(t, r.signal.IsUndefined())
	}

	ac := js.Global().Get("AbortController").New()
	var r request
	require.NoError(t, b.parseGenerateOptions(obj(map[string]any{
		"maxTokens": 0, "temperature": 0, "topK": 7, "topP": 0.5, "minP": 0.25, "repeatPenalty": 1.5,
		"presencePenalty": -1, "frequencyPenalty": 2, "seed": 0, "stop": "The end", "trace": true, "signal": ac.Get("signal"),
	}), &r))
	assert.Equal(t, engine.GenerateOptions{
		MaxTokens: 0, Stop: []string{"The end"}, Trace: true,
		Sampling: sampling.Params{TopK: 7, TopP: 0.5, MinP: 0.25, RepeatPenalty: 1.5, PresencePenalty: -1, FrequencyPenalty: 2},
	}, r.opts)
	assert.True(t, r.signal.Equal(ac.Get("signal")))
}
