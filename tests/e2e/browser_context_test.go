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
