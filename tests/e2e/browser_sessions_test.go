//go:build !js

package e2e

import (
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBrowserSessionSurvivesAReload: a session saved in OPFS before a
// reload and restored after it continues, a generation and a chat with
// session, with the tokens the uninterrupted page gave, evaluating only
// the new prompt tokens; a missing session and one of another KV type are
// refused with their codes, and list and delete see what was saved.
func TestBrowserSessionSurvivesAReload(t *testing.T) {
	tb := newTab(t, blankPage, chromedp.WithNewBrowserContext())
	type before struct {
		Next, NextChat string
		Tokens         []int
		Prefill        int
		Saved          struct {
			Name   string
			Tokens int
			Bytes  int
		}
		Messages []map[string]any
	}
	want := eval[before](t, tb, apiScript(`
		const lm = await WasmLM.load(DEFAULT_MODEL);
		const prompt = 'Once upon a time, there was a little girl named Lily.';
		const first = await lm.generate(prompt, { temperature: 0, maxTokens: 12 });
		const saved = await lm.saveSession('story');
		const next = prompt + first.text + ' One day';
		const r = await lm.generate(next, { temperature: 0, maxTokens: 12 });
		const messages = [{ role: 'user', content: 'Tell me about the sea.' }];
		const c1 = await lm.chat.completions.create({ messages, temperature: 0, max_tokens: 10 });
		messages.push(c1.choices[0].message);
		await lm.saveSession('chat');
		messages.push({ role: 'user', content: 'And the sky?' });
		const c2 = await lm.chat.completions.create({ messages, temperature: 0, max_tokens: 10 });
		lm.unload();
		return { next, nextChat: c2.choices[0].message.content, tokens: r.tokens, prefill: r.timings.prefillTokens, saved, messages };
	`))
	require.NotEmpty(t, want.Tokens)
	assert.Equal(t, "story", want.Saved.Name)
	assert.Positive(t, want.Saved.Tokens)

	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Reload()))
	type after struct {
		Names    []string
		Restored struct{ Tokens int }
		Tokens   []int
		Prefill  int
		NextChat string
		Missing  string
		OtherKV  string
		Deleted  []bool
	}
	got := eval[after](t, tb, apiScript(`
		const lm = await WasmLM.load(DEFAULT_MODEL);
		const names = (await lm.sessions.list()).map((s) => s.name);
		const restored = await lm.restoreSession('story');
		const r = await lm.generate(`+jsLiteral(t, want.Next)+`, { temperature: 0, maxTokens: 12 });
		const messages = `+jsLiteral(t, want.Messages)+`;
		const c2 = await lm.chat.completions.create({ messages, temperature: 0, max_tokens: 10, session: 'chat' });
		const missing = await lm.restoreSession('none').then(() => 'restored', (e) => e.code);
		const f16 = await WasmLM.load(DEFAULT_MODEL, { kvType: 'f16' });
		const otherKV = await f16.restoreSession('story').then(() => 'restored', (e) => e.code);
		f16.unload();
		const deleted = [await lm.sessions.delete('story'), await lm.sessions.delete('story'), await lm.sessions.delete('chat')];
		lm.unload();
		return { names, restored, tokens: r.tokens, prefill: r.timings.prefillTokens, nextChat: c2.choices[0].message.content, missing, otherKV, deleted };
	`))
	assert.ElementsMatch(t, []string{"story", "chat"}, got.Names)
	assert.Equal(t, want.Saved.Tokens, got.Restored.Tokens)
	assert.Equal(t, want.Tokens, got.Tokens, "the restored session continues as the uninterrupted one")
	assert.Equal(t, want.Prefill, got.Prefill, "only the new prompt tokens are evaluated")
	assert.Equal(t, want.NextChat, got.NextChat, "a chat with session continues as the uninterrupted one")
	assert.Equal(t, "session_not_found", got.Missing)
	assert.Equal(t, "session_mismatch", got.OtherKV)
	assert.Equal(t, []bool{true, false, true}, got.Deleted)
}

// jsLiteral is v as a JavaScript literal (its JSON).
func jsLiteral(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
