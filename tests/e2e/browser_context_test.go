//go:build !js

package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestBrowserContextBeyondTraining: the page loads a contextLength longer
// than the model was trained for (the default model: 512), as llama.cpp
// allows it: lm.info.warning names both numbers, load says it once with
// console.warn, and a prompt the trained context could not hold
// generates; a context the page's memory cannot hold is still refused
// (model_too_large, as a model too large for a worker).
func TestBrowserContextBeyondTraining(t *testing.T) {
	tb := newTab(t, blankPage)
	got := eval[struct {
		Warning string   `json:"warning"`
		Warned  []string `json:"warned"`
		Prompt  int      `json:"prompt"`
		Memory  string   `json:"memory"`
	}](t, tb, apiScript(`
		const warned = [];
		const warn = console.warn;
		console.warn = (...args) => warned.push(args.join(' '));
		try {
			const lm = await WasmLM.load(DEFAULT_MODEL, { contextLength: 1024 });
			const res = await lm.generate('once upon a time '.repeat(150), { maxTokens: 2, temperature: 0 });
			const warning = lm.info.warning;
			lm.unload();
			const memory = await WasmLM.load(DEFAULT_MODEL, { contextLength: 1 << 24 }).then(() => 'loaded', (e) => e.code + ': ' + e.message);
			return { warning, warned, prompt: res.promptTokens.length, memory };
		} finally {
			console.warn = warn;
		}
	`))
	assert.Contains(t, got.Warning, "context length 1024 exceeds the 512 positions the model was trained for")
	assert.Equal(t, []string{"wasmlm: " + got.Warning}, got.Warned, "warned once")
	assert.Greater(t, got.Prompt, 512)
	assert.Contains(t, got.Memory, "model_too_large: ", "the page's memory check")
	assert.Contains(t, got.Memory, "for 16777216 positions")
}

// TestBrowserGrammarFinishReason: in the page, a generation under a
// grammar that maxTokens (or max_tokens) ends says 'length', though its
// text is a whole match the grammar would let go on: lm.generate, and
// lm.chat.completions.create whole and streamed.
func TestBrowserGrammarFinishReason(t *testing.T) {
	tb := newTab(t, blankPage)
	got := eval[struct {
		Generate, Chat, Stream string
		Tokens                 int
		Text                   string
	}](t, tb, apiScript(`
		const lm = await WasmLM.load();
		const g = await lm.generate('', { grammar: 'root ::= "a"+', maxTokens: 100, temperature: 0 });
		const body = { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5, temperature: 0, grammar: 'root ::= [a-z]+' };
		const chat = await lm.chat.completions.create(body);
		let stream = '';
		for await (const c of await lm.chat.completions.create({ ...body, stream: true })) stream = c.choices[0]?.finish_reason ?? stream;
		lm.unload();
		return { Generate: g.finishReason, Tokens: g.tokens.length, Text: g.text, Chat: chat.choices[0].finish_reason, Stream: stream };
	`))
	assert.Equal(t, "length", got.Generate)
	assert.Equal(t, 100, got.Tokens)
	assert.Regexp(t, `^a+$`, got.Text)
	assert.Equal(t, "length", got.Chat)
	assert.Equal(t, "length", got.Stream)
}
