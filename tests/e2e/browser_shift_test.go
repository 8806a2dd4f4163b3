//go:build !js

package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestBrowserChatContextShift: load's contextShift is the page's chat
// default, a request's context_shift its own, and the usage (whole and
// streamed) reports the shifts, in a context of 64 positions where a reply
// of 64 tokens fills it; a wrong contextShift rejects naming its field.
func TestBrowserChatContextShift(t *testing.T) {
	tb := newTab(t, blankPage)
	type usage struct {
		CompletionTokens     int  `json:"completion_tokens"`
		ContextShifts        *int `json:"context_shifts"`
		ContextShiftedTokens *int `json:"context_shifted_tokens"`
	}
	got := eval[struct {
		Default  usage  `json:"byDefault"`
		Streamed usage  `json:"streamed"`
		Off      string `json:"off"`
		Short    usage  `json:"short"`
		Bad      struct {
			Code  string `json:"code"`
			Field string `json:"field"`
		} `json:"bad"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load(DEFAULT_MODEL, { contextLength: 64, contextShift: { nKeep: 2 } });
		// Greedy, never ending on BOS or EOS.
		const ask = { messages: [{ role: 'user', content: 'Once upon a time' }], temperature: 0, logit_bias: { 1: -100, 2: -100 } };
		const byDefault = (await lm.chat.completions.create({ ...ask, max_tokens: 64 })).usage;
		const stream = await lm.chat.completions.create({ ...ask, max_tokens: 64, stream: true, stream_options: { include_usage: true } });
		let streamed;
		for await (const c of stream) streamed = c.usage ?? streamed;
		const off = await lm.chat.completions.create({ ...ask, max_tokens: 64, context_shift: false }).then(() => 'resolved', (e) => e.field);
		const short = (await lm.chat.completions.create({ ...ask, max_tokens: 4 })).usage;
		lm.unload();
		const bad = await WasmLM.load(DEFAULT_MODEL, { contextShift: { nKeep: -2 } }).then(() => ({}), (e) => ({ code: e.code, field: e.field }));
		return { byDefault, streamed, off, short, bad };
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
	assert.Equal(t, "invalid_argument", got.Bad.Code)
	assert.Equal(t, "contextShift.nKeep", got.Bad.Field)
}
