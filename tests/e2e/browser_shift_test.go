//go:build !js

package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/models"
)

// TestBrowserChatContextShift: load's contextShift is the page's chat
// default, a request's context_shift its own, and the usage (whole and
// streamed) reports the shifts, in a context of 64 positions where a reply
// of 64 tokens fills it, and max_tokens may run past the context (without
// a shift, that is refused as too long for the context); a wrong
// contextShift rejects naming its field. The completion and the stream's
// usage chunk carry the HTTP API's timings.
func TestBrowserChatContextShift(t *testing.T) {
	tb := newTab(t, blankPage)
	type usage struct {
		CompletionTokens     int  `json:"completion_tokens"`
		ContextShifts        *int `json:"context_shifts"`
		ContextShiftedTokens *int `json:"context_shifted_tokens"`
	}
	type refusal struct {
		Code    string `json:"code"`
		Field   string `json:"field"`
		Message string `json:"message"`
	}
	got := eval[struct {
		Default  usage                    `json:"byDefault"`
		Streamed usage                    `json:"streamed"`
		Timings  []map[string]json.Number `json:"timings"`
		Off      string                   `json:"off"`
		Short    usage                    `json:"short"`
		Long     usage                    `json:"long"`
		TooLong  refusal                  `json:"tooLong"`
		Bad      struct {
			Code  string `json:"code"`
			Field string `json:"field"`
		} `json:"bad"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load(DEFAULT_MODEL, { contextLength: 64, contextShift: { nKeep: 2 } });
		// Greedy, never ending on BOS or EOS.
		const ask = { messages: [{ role: 'user', content: 'Once upon a time' }], temperature: 0, logit_bias: { 1: -100, 2: -100 } };
		const whole = await lm.chat.completions.create({ ...ask, max_tokens: 64 });
		const byDefault = whole.usage;
		const stream = await lm.chat.completions.create({ ...ask, max_tokens: 64, stream: true, stream_options: { include_usage: true } });
		let streamed, streamTimings;
		for await (const c of stream) {
			streamed = c.usage ?? streamed;
			streamTimings = c.timings ?? streamTimings;
		}
		const off = await lm.chat.completions.create({ ...ask, max_tokens: 64, context_shift: false }).then(() => 'resolved', (e) => e.field);
		const short = (await lm.chat.completions.create({ ...ask, max_tokens: 4 })).usage;
		const long = (await lm.chat.completions.create({ ...ask, max_tokens: 150, context_shift: true })).usage;
		const tooLong = await lm.chat.completions.create({ ...ask, max_tokens: 150, context_shift: false }).then(() => ({}), (e) => ({ code: e.code, field: e.field, message: e.message }));
		lm.unload();
		const bad = await WasmLM.load(DEFAULT_MODEL, { contextShift: { nKeep: -2 } }).then(() => ({}), (e) => ({ code: e.code, field: e.field }));
		return { byDefault, streamed, timings: [whole.timings, streamTimings], off, short, long, tooLong, bad };
	`))
	for _, u := range []usage{got.Default, got.Streamed} {
		assert.Equal(t, 64, u.CompletionTokens)
		if assert.NotNil(t, u.ContextShifts) && assert.NotNil(t, u.ContextShiftedTokens) {
			assert.Equal(t, 1, *u.ContextShifts)
			assert.Positive(t, *u.ContextShiftedTokens)
		}
	}
	assert.Equal(t, "max_tokens", got.Off, "without the shift the reply does not fit")
	assert.Nil(t, got.Short.ContextShifts, "no shift: OpenAI's usage alone")
	assert.Equal(t, 150, got.Long.CompletionTokens, "max_tokens past the context, with a shift")
	if assert.NotNil(t, got.Long.ContextShifts) {
		assert.Greater(t, *got.Long.ContextShifts, 1)
	}
	assert.Equal(t, "prompt_too_long", got.TooLong.Code, "without a shift, max_tokens past the context")
	assert.Equal(t, "max_tokens", got.TooLong.Field)
	assert.Contains(t, got.TooLong.Message, "maximum context length is 64 tokens")
	assert.NotContains(t, got.TooLong.Message, "server", "the page is no server")
	for i, timings := range got.Timings {
		require.NotNil(t, timings, "the timings of the completion (0) and of the stream (1)")
		decode, err := timings["decode_tokens"].Int64()
		require.NoError(t, err)
		assert.Equal(t, int64(63), decode, "%d: the decode steps of 64 tokens", i)
		for _, field := range []string{"queue_ms", "time_to_first_token_ms", "prefill_ms", "prefill_tokens", "prefill_tokens_per_second", "decode_ms", "decode_tokens_per_second"} {
			assert.Contains(t, timings, field, "%d", i)
		}
	}
	assert.Equal(t, "invalid_argument", got.Bad.Code)
	assert.Equal(t, "contextShift.nKeep", got.Bad.Field)
}

// TestBrowserServeContextShift: lm.serve's endpoint takes load's
// contextShift default as the page's chat does: a served chat completion
// that omits context_shift shifts with the default's n_keep, answering
// what the native server with the same defaults (-context-shift, NKeep)
// answers, in a context of 64 positions where a reply of 64 tokens fills
// it; the request's context_shift: false comes first.
func TestBrowserServeContextShift(t *testing.T) {
	m, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	native, err := httpapi.New(m, httpapi.Options{ModelName: models.DefaultName, ContextLength: 64, ContextShift: true, NKeep: 2})
	require.NoError(t, err)
	const body = `{"messages":[{"role":"user","content":"Once upon a time"}],"temperature":0,"max_tokens":64,"logit_bias":{"1":-100,"2":-100}}`
	status, want := nativeAPI(t, native, "POST", "/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, status, want)
	type reply struct {
		Choices []struct{ Message struct{ Content string } }
		Usage   map[string]int
	}
	var ref reply
	require.NoError(t, json.Unmarshal([]byte(want), &ref))
	require.Equal(t, 1, ref.Usage["context_shifts"])

	tb := openTab(t, webSite(t), blankPage, nil, chromedp.WithNewBrowserContext())
	tb.expect("the server responded with a status of 400") // context_shift: false, on purpose
	got := eval[struct {
		Served reply
		Off    int
	}](t, tb, apiScript(`
		const lm = await WasmLM.load(DEFAULT_MODEL, { serve: true, contextLength: 64, contextShift: { nKeep: 2 } });
		const server = await lm.serve({ scope: '/v1/', serviceWorker: '/wasmlm.sw.js' });
		const post = (b) => fetch('/v1/chat/completions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(b) });
		const body = `+body+`;
		const served = await (await post(body)).json();
		const off = (await post({ ...body, context_shift: false })).status;
		server.close();
		lm.unload();
		return { served, off };
	`))
	assert.Equal(t, ref.Choices[0].Message.Content, got.Served.Choices[0].Message.Content)
	assert.Equal(t, ref.Usage, got.Served.Usage, "the same shifts, keeping n_keep")
	assert.Equal(t, http.StatusBadRequest, got.Off, "without the shift the reply does not fit")
}
