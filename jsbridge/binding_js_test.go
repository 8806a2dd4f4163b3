package jsbridge

import (
	"encoding/json"
	"strings"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/internal/testmodel"
	"github.com/wasmlm/wasmlm/models"
)

// TestCallsBeforeLoad: every method that needs a model rejects with
// ErrNoModel (code "no_model") until load succeeds.
func TestCallsBeforeLoad(t *testing.T) {
	b := New()
	defer b.Release()
	calls := []struct {
		method string
		args   []any
	}{
		{"info", nil},
		{"tokenize", []any{"hi"}},
		{"detokenize", []any{js.ValueOf([]any{1})}},
		{"generate", []any{"hi"}},
		{"stream", []any{"hi", js.Undefined(), newChunkLog(t).fn}},
		{"chat", []any{chatRequest(t, map[string]any{"messages": userSays("hi")})}},
	}
	for _, c := range calls {
		t.Run(c.method, func(t *testing.T) {
			_, err := call(t, b, c.method, c.args...)
			require.Equal(t, &jsError{Code: "no_model", Message: "wasmlm: no model loaded: call load first"}, err)
		})
	}
}

// TestLoadRejectsBadModels: bad arguments and corrupt model bytes reject with
// readable errors, and the binding then still loads and runs a good model.
// A failed load keeps the model loaded before it.
func TestLoadRejectsBadModels(t *testing.T) {
	checkpoint, tok := testmodel.Stories260K() // the llama2.c copy of the default model
	tokOpt := obj(map[string]any{"tokenizer": jsBytes(tok)})
	gguf := append([]byte("GGUF"), make([]byte, 60)...)
	cases := []struct {
		name     string
		args     []any
		code     string
		contains string
	}{
		{"no model", nil, "invalid_argument", "model must be a Uint8Array, an ArrayBuffer or 'assembled', got undefined"},
		{"a number", []any{42}, "invalid_argument", "model must be a Uint8Array or an ArrayBuffer, got 42"},
		{"a string", []any{"stories260K.bin"}, "invalid_argument", `got string "stories260K.bin"`},
		{"bad options", []any{jsBytes(checkpoint), 7}, "invalid_argument", "options must be an object, got 7"},
		{"unknown option", []any{jsBytes(checkpoint), obj(map[string]any{"tokeniser": 1})}, "invalid_argument", `unknown option "tokeniser"`},
		{"tokenizer not bytes", []any{jsBytes(checkpoint), obj(map[string]any{"tokenizer": "tok512.bin"})}, "invalid_argument", "tokenizer must be a Uint8Array or an ArrayBuffer"},
		{"three bytes", []any{jsBytes([]byte{1, 2, 3}), tokOpt}, "invalid_model", "malformed model"},
		{"truncated checkpoint", []any{jsBytes(checkpoint[:1000]), tokOpt}, "invalid_model", "malformed model"},
		{"no tokenizer", []any{jsBytes(checkpoint)}, "invalid_model", "needs its tokenizer.bin"},
		{"corrupt tokenizer", []any{jsBytes(checkpoint), obj(map[string]any{"tokenizer": jsBytes(tok[:100])})}, "invalid_model", "tokenizer"},
		{"GGUF header and zeros", []any{jsBytes(gguf)}, "unsupported_model", "GGUF v0 is not supported"}, // a version it does not know
		{"contextLength", []any{jsBytes(checkpoint), obj(map[string]any{"tokenizer": jsBytes(tok), "contextLength": -1})}, "invalid_argument", "contextLength must be an integer >= 0"},
		{"contextLength too long", []any{jsBytes(checkpoint), obj(map[string]any{"tokenizer": jsBytes(tok), "contextLength": 100_000_000})}, "invalid_argument", "contextLength must be in 0..16777216"},
		{"contextLength beyond memory", []any{jsBytes(checkpoint), obj(map[string]any{"tokenizer": jsBytes(tok), "contextLength": 1 << 24})}, "invalid_argument", "more than the 4096 MiB a WebAssembly memory can address"},
	}
	b := New()
	defer b.Release()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := call(t, b, "load", c.args...)
			var je *jsError
			require.ErrorAs(t, err, &je)
			assert.Equal(t, c.code, je.Code)
			assert.Contains(t, je.Message, c.contains)
		})
	}
	// The binding works after all that, and a failed load keeps the model.
	info := mustCall(t, b, "load", jsBytes(checkpoint).Get("buffer"), tokOpt) // an ArrayBuffer works too
	assert.Equal(t, 512, info.Get("vocabSize").Int())
	_, err := call(t, b, "load", jsBytes([]byte{1, 2, 3}), tokOpt)
	require.Error(t, err)
	res := mustCall(t, b, "generate", "Once upon a time", greedy(3))
	assert.Equal(t, 3, res.Get("tokens").Length(), "the earlier model still generates")
}

// TestLoadContextBeyondTraining: a contextLength longer than the model was
// trained for (stories260K: 512) loads, as llama.cpp allows it, with
// info.warning naming both numbers, and holds a prompt the trained context
// could not.
func TestLoadContextBeyondTraining(t *testing.T) {
	b := New()
	defer b.Release()
	info := mustCall(t, b, "load", jsBytes(models.Default()), obj(map[string]any{"contextLength": 1024}))
	assert.Equal(t, 1024, info.Get("sessionContextLength").Int())
	assert.Contains(t, info.Get("warning").String(), "context length 1024 exceeds the 512 positions the model was trained for")
	res := mustCall(t, b, "generate", strings.Repeat("once upon a time ", 150), greedy(2))
	assert.Greater(t, res.Get("promptTokens").Length(), 512)
}

// TestInfo: info() is engine.Info with its JSON names in camelCase, plus the
// chat template, the session's context length and whether the SIMD kernels
// run (as package tensor says).
func TestInfo(t *testing.T) {
	b := newLoaded(t)
	info := mustCall(t, b, "info")

	raw, err := json.Marshal(nativeModel(t).Info())
	require.NoError(t, err)
	var want map[string]any
	require.NoError(t, json.Unmarshal(raw, &want))
	require.NotEmpty(t, want)
	for k, v := range want {
		got := info.Get(camelCase(k))
		require.False(t, got.IsUndefined(), "info.%s missing", camelCase(k))
		if n, ok := v.(float64); ok {
			assert.Equal(t, n, got.Float(), k)
		}
		if s, ok := v.(string); ok {
			assert.Equal(t, s, got.String(), k)
		}
	}
	assert.Equal(t, 512, info.Get("vocabSize").Int())
	assert.Equal(t, 512, info.Get("contextLength").Int())
	assert.Equal(t, "gguf", info.Get("format").String())
	assert.Equal(t, "plain", info.Get("chatTemplate").String())
	assert.Equal(t, 512, info.Get("sessionContextLength").Int())
	assert.True(t, info.Get("warning").IsUndefined(), "no warning within the trained context")
	assert.Equal(t, tensor.SIMD(), info.Get("simd").Bool())
	for typ, n := range want["tensor_types"].(map[string]any) {
		assert.Equal(t, n, info.Get("tensorTypes").Get(typ).Float(), "tensorTypes.%s", typ)
	}
}

func TestCamelCase(t *testing.T) {
	for in, want := range map[string]string{
		"vocab_size": "vocabSize", "bos_token_id": "bosTokenId", "format": "format", "rms_norm_eps": "rmsNormEps",
	} {
		assert.Equal(t, want, camelCase(in))
	}
}

// TestCamelInfoLayers: the layers' recipes and the recurrent layers'
// shape reach JavaScript with their keys in camelCase, nested ones too,
// and the GGUF metadata's keys as they are.
func TestCamelInfoLayers(t *testing.T) {
	out, err := camelInfo(engine.Info{
		LayerSpecs: []engine.LayerSpec{{QKNorm: engine.QKNormHeads, ResidualScale: 0.5,
			Attention: engine.AttentionSpec{Window: 16, RopeTheta: 10000, Scale: 0.25, ScaleQueries: true}}},
		Metadata: map[string]any{"general.file_type": 1},
		SSM:      engine.SSMShape{ConvKernel: 4, InnerSize: 2048, StateSize: 128, TimeStepRank: 16, GroupCount: 16},
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"convKernel": 4.0, "innerSize": 2048.0, "stateSize": 128.0, "timeStepRank": 16.0, "groupCount": 16.0}, out["ssm"])
	layer := out["layers"].([]any)[0].(map[string]any)
	assert.Equal(t, "heads", layer["qkNorm"])
	assert.Equal(t, 0.5, layer["residualScale"])
	assert.Equal(t, map[string]any{"window": 16.0, "ropeFreqBase": 10000.0, "scale": 0.25, "scaleQueries": true}, layer["attention"])
	assert.Contains(t, out["metadata"], "general.file_type")
}

// TestTokenizeMatchesLlama2C: tokenize equals run.c's encode() with and
// without BOS for the golden strings.
func TestTokenizeMatchesLlama2C(t *testing.T) {
	g := golden.RuncTokenizerCases(t)
	b := newLoaded(t)
	for _, c := range g.Tok512 {
		assert.Equal(t, c.BOS, ints(mustCall(t, b, "tokenize", c.Text)), "%q with BOS", c.Text)
		assert.Equal(t, c.NoBOS, ints(mustCall(t, b, "tokenize", c.Text, obj(map[string]any{"addBos": false}))), "%q without BOS", c.Text)
	}
	// special: "<s>" is BOS's text; parsed, it is the BOS id, else characters.
	bos := g.Tok512[0].BOS[0]
	ids := ints(mustCall(t, b, "tokenize", "<s>", obj(map[string]any{"addBos": false, "special": true})))
	assert.Equal(t, []int{bos}, ids)
	ids = ints(mustCall(t, b, "tokenize", "<s>", obj(map[string]any{"addBos": false})))
	assert.NotEqual(t, []int{bos}, ids)
}

// TestDetokenize: the ids run.c generated, after BOS, detokenize to exactly
// the text run.c printed; bad ids reject.
func TestDetokenize(t *testing.T) {
	g := golden.RuncStories260K(t)
	b := newLoaded(t)
	run := g.Runs[0] // the empty prompt: run.c prints only the generated text
	require.Empty(t, run.Prompt)
	ids := append(append([]any{}, idsValue(run.PromptIDs)...), idsValue(run.GeneratedIDs)...)
	assert.Equal(t, run.Text, mustCall(t, b, "detokenize", js.ValueOf(ids)).String())

	i32 := js.Global().Get("Int32Array").New(js.ValueOf(ids))
	assert.Equal(t, run.Text, mustCall(t, b, "detokenize", i32).String(), "typed arrays work too")

	for _, c := range []struct {
		arg  any
		want string
	}{
		{js.ValueOf([]any{1, 99999}), "ids[1] must be a token id of this model (0..511), got 99999"},
		{js.ValueOf([]any{1, -1}), "ids[1] must be a token id of this model (0..511), got -1"},
		{js.ValueOf([]any{1 << 40}), "ids[0] must be a token id of this model (0..511), got 1099511627776"},
		{js.ValueOf([]any{1 << 60}), "ids[0] must be an integer token id, got 1152921504606847000"},
		{js.ValueOf([]any{"a"}), `ids[0] must be an integer token id, got string "a"`},
		{js.ValueOf([]any{1.5}), "ids[0] must be an integer token id, got 1.5"},
		{"1 2 3", `ids must be an array, got string "1 2 3"`},
		{js.Global().Get("DataView").New(js.Global().Get("ArrayBuffer").New(4)), "ids must be an array, got an object"},
	} {
		_, err := call(t, b, "detokenize", c.arg)
		var je *jsError
		require.ErrorAs(t, err, &je)
		assert.Equal(t, "invalid_argument", je.Code)
		assert.Contains(t, je.Message, c.want)
	}
}
