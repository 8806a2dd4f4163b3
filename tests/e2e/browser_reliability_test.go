//go:build !js

package e2e

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The page's part of the reliability suite (web/README.md, "Reliability"):
// every rejection of the JS API carries a documented code, a signal aborted
// before the call generates nothing, and the demo and the module run under a
// strict Content-Security-Policy.

// alreadyAbortedRepeats is how many calls of each kind
// TestBrowserAlreadyAbortedSignalGeneratesNothing makes: the race it guards
// against showed in two calls of three.
const alreadyAbortedRepeats = 30

// A signal that is aborted before the call generates no token, ever: not
// with generate, stream or chat.completions.create (streamed or not), on a
// fresh model or one that has generated, alone or queued behind a running
// generation. Each resolves with finishReason "abort" (OpenAI's
// finish_reason "abort") and no tokens, and the model works afterwards.
func TestBrowserAlreadyAbortedSignalGeneratesNothing(t *testing.T) {
	tb := newTab(t, blankPage)
	type outcome struct {
		Kind   string `json:"kind"`
		Tokens int    `json:"tokens"`
		Chunks int    `json:"chunks"`
		Finish string `json:"finish"`
	}
	got := eval[struct {
		Outcomes []outcome `json:"outcomes"`
		After    result    `json:"after"`
	}](t, tb, apiScript(`
		const repeats = `+strconv.Itoa(alreadyAbortedRepeats)+`;
		const aborted = () => { const ac = new AbortController(); ac.abort(); return ac.signal; };
		const messages = [{ role: 'user', content: 'Once upon a time' }];
		const opts = () => ({ temperature: 0, maxTokens: 50, signal: aborted() });
		const outcomes = [];
		const lm = await WasmLM.load(); // a fresh model: its first call is the first case below
		const kinds = {
			async generate() {
				const r = await lm.generate('Once upon a time', opts());
				return { tokens: r.tokens.length, chunks: 0, finish: r.finishReason };
			},
			async stream() {
				const s = lm.stream('Once upon a time', opts());
				let chunks = 0;
				for await (const c of s) chunks++;
				const r = await s.result;
				return { tokens: r.tokens.length, chunks, finish: r.finishReason };
			},
			async chat() {
				const r = await lm.chat.completions.create({ messages, temperature: 0, max_tokens: 50 }, { signal: aborted() });
				return { tokens: r.usage.completion_tokens, chunks: 0, finish: r.choices[0].finish_reason };
			},
			async chatStream() {
				const s = await lm.chat.completions.create({ messages, temperature: 0, max_tokens: 50, stream: true, signal: aborted() });
				let chunks = 0, finish = null;
				for await (const c of s) {
					if (c.choices[0]?.delta?.content) chunks++;
					finish = c.choices[0]?.finish_reason ?? finish;
				}
				return { tokens: (await s.result).tokens.length, chunks, finish };
			},
		};
		for (let i = 0; i < repeats; i++) {
			for (const [kind, call] of Object.entries(kinds)) outcomes.push({ kind, ...(await call()) });
		}
		// Queued behind a running generation, and made in the same task as it.
		for (let i = 0; i < repeats; i++) {
			const running = lm.generate('Once upon a time', { temperature: 0, maxTokens: 5 });
			const queued = lm.generate('Once upon a time', opts());
			await running;
			const r = await queued;
			outcomes.push({ kind: 'queued', tokens: r.tokens.length, chunks: 0, finish: r.finishReason });
		}
		const after = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 20 });
		lm.unload();
		return { outcomes, after };
	`))
	require.Len(t, got.Outcomes, 5*alreadyAbortedRepeats)
	generated := 0
	var wrong []string
	for i, o := range got.Outcomes {
		generated += o.Tokens
		if o.Tokens != 0 || o.Chunks != 0 || o.Finish != "abort" {
			wrong = append(wrong, fmt.Sprintf("call %d (%s): %d tokens, %d chunks, finish %q", i, o.Kind, o.Tokens, o.Chunks, o.Finish))
		}
	}
	assert.Empty(t, wrong, "calls with an already-aborted signal that generated or did not end with \"abort\"")
	t.Logf("%d calls with an already-aborted signal, %d tokens generated", len(got.Outcomes), generated)
	run := loadRuncGolden(t).Runs[1]
	assert.Equal(t, run.GeneratedIDs[:20], got.After.Tokens, "the model still works")
}
