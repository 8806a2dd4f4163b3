//go:build !js

package e2e

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chatRestored is what the demo says became of the conversation it kept
// across a reload (wasmlmDemo.chat.restored).
type chatRestored struct {
	Tokens int     `json:"tokens"`
	Ms     float64 `json:"ms"`
	Error  string  `json:"error"`
}

// heldTokens is how many tokens the engine's session holds after a
// generation from prompt that gave tokens, finishing with finish: the
// prompt and the reply's tokens it evaluated (all but the last when a limit
// cut the reply: the last sampled token is never fed back).
func heldTokens(prompt, tokens []int, finish string) int {
	n := len(prompt) + len(tokens)
	if finish == "length" || finish == "context" {
		n--
	}
	return n
}

// The demo's chat keeps its conversation across a reload: after two
// greedy turns the page is reloaded, and it shows the conversation again
// with its session restored — as many tokens as the uninterrupted API's
// session holds, not evaluated again — and the third turn is the API's
// uninterrupted reply, evaluating only the tokens that session evaluates
// (a page that evaluated the conversation again would reuse none: its
// session starts empty). New conversation forgets it, and the next reload
// shows none.
func TestBrowserChatDemoSurvivesAReload(t *testing.T) {
	tb := newTab(t, "/#chat", chromedp.WithNewBrowserContext())
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	setChatOptions(t, tb, "0", 20, "")
	say(t, tb, "there was a cat")
	waitReplies(t, tb, 2)
	say(t, tb, "The cat liked fish.")
	waitReplies(t, tb, 4)
	before := chatMessages(t, tb)
	contextLine := text(t, tb, "chat-context")
	require.Regexp(t, `^context \d+ / 512 tokens$`, contextLine)

	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Reload()))
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready' && wasmlmDemo.chat.restored != null`, 30*time.Second)
	restored := eval[chatRestored](t, tb, `wasmlmDemo.chat.restored`)
	require.Empty(t, restored.Error, "the session is restored")
	assert.Equal(t, contextLine, text(t, tb, "chat-context"), "the context's line of the restored conversation")
	assert.Equal(t, before, chatMessages(t, tb), "the conversation is shown again")
	assert.Equal(t, 4, eval[int](t, tb, `document.querySelectorAll('#chat-log .msg').length`))
	assertRendered(t, tb)
	// The notice counts the conversation's tokens as the context's line
	// does, and says how many the session holds where that is one less.
	notice := text(t, tb, "chat-restored")
	used := strings.Fields(contextLine)[1]
	held := `its ` + used + ` tokens came back in the model's session`
	if used != strconv.Itoa(restored.Tokens) {
		held = strconv.Itoa(restored.Tokens) + ` of its ` + used + ` tokens came back in the model's session \(the last reply's last token is evaluated with the next turn\)`
	}
	assert.Regexp(t, regexp.MustCompile(`^Conversation restored: `+held+` from storage in \d+ ms, not evaluated again\.$`), notice)
	for i := 1; i < 4; i += 2 {
		prompt, reused, computed, n, finish := shownTurn(t, tb, i)
		s := before[i].Stats
		assert.Equal(t, []int{s.PromptTokens, s.Reused, s.Computed, s.CompletionTokens}, []int{prompt, reused, computed, n}, "turn %d's line", i)
		assert.Equal(t, s.FinishReason, finish)
	}

	setChatOptions(t, tb, "0", 20, "")
	say(t, tb, "Then it rained.")
	waitReplies(t, tb, 6)
	after := chatMessages(t, tb)

	sys := map[string]any{"role": "system", "content": "You are a helpful assistant."}
	greedy := func(msgs ...map[string]any) map[string]any {
		return map[string]any{"messages": append([]map[string]any{sys}, msgs...), "temperature": 0, "max_tokens": 20}
	}
	msg := func(m chatMessage) map[string]any { return map[string]any{"role": m.Role, "content": m.Content} }
	refs := chatReference(t, tb, "", []map[string]any{
		greedy(msg(after[0])),
		greedy(msg(after[0]), msg(after[1]), msg(after[2])),
		greedy(msg(after[0]), msg(after[1]), msg(after[2]), msg(after[3]), msg(after[4])),
	})
	for i, ref := range refs {
		assert.Equal(t, ref.Content, after[2*i+1].Content, "turn %d is the uninterrupted API's", i+1)
	}
	assert.Equal(t, heldTokens(refs[1].PromptTokens, refs[1].Tokens, refs[1].FinishReason), restored.Tokens,
		"the restored session holds what the uninterrupted one held after the second turn")
	prompt, reused, computed, _, _ := shownTurn(t, tb, 5)
	assert.Equal(t, len(refs[2].PromptTokens), prompt)
	assert.Equal(t, refs[2].Prefill, computed, "the third turn evaluates what the uninterrupted session evaluates")
	assert.Equal(t, reusable(refs[1].PromptTokens, refs[1].Tokens, refs[1].FinishReason, refs[2].PromptTokens), reused)
	assert.Greater(t, reused, len(refs[1].PromptTokens)/2, "most of the conversation came from the restored session")
	t.Logf("restored %d tokens in %.1f ms; the third turn: %d prompt tokens, %d reused, %d computed",
		restored.Tokens, restored.Ms, prompt, reused, computed)
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	shot := artifactPath(t, "chat-restored.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot: %s", shot)

	// New conversation forgets it: nothing kept, nothing shown after a reload.
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("chat-clear"))))
	assert.Nil(t, eval[*string](t, tb, `localStorage.getItem('wasmlm-demo-chat')`))
	assert.True(t, eval[bool](t, tb, `(async () => {
		for (let i = 0; i < 100; i++) {
			if ((await wasmlmDemo.lm.sessions.list()).length === 0) return true;
			await new Promise((resolve) => setTimeout(resolve, 20));
		}
		return false;
	})()`), "the saved session is deleted")
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Reload()))
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	assert.Empty(t, chatMessages(t, tb))
	assert.Nil(t, eval[*chatRestored](t, tb, `wasmlmDemo.chat.restored`))
	assert.True(t, eval[bool](t, tb, `document.getElementById('chat-restored').hidden`))
}

// The demo's chat shifts the context of a conversation that outgrows it
// (Context shift is ticked by default) and says so: a system prompt longer
// than the default model's 512 positions is cut, and the reply is the
// API's for the same request with context_shift, its line and the
// context's line showing the tokens the shift dropped as the API's usage
// reports them.
func TestBrowserChatDemoContextShift(t *testing.T) {
	tb := newTab(t, "/#chat", chromedp.WithNewBrowserContext())
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	assert.True(t, eval[bool](t, tb, `document.getElementById('chat-shift').checked`), "on by default")
	system := `'Once upon a time, there was a little girl named Lily. '.repeat(60)`
	eval[chromedp.Void](t, tb, `document.getElementById('system-prompt').value = `+system)
	setChatOptions(t, tb, "0", 20, "")
	say(t, tb, "She was happy.")
	waitReplies(t, tb, 2)
	assert.Empty(t, text(t, tb, "message"), "no error")
	got := chatMessages(t, tb)[1]

	type shifted struct {
		Content string
		Usage   struct {
			PromptTokens         int `json:"prompt_tokens"`
			CompletionTokens     int `json:"completion_tokens"`
			ContextShifts        int `json:"context_shifts"`
			ContextShiftedTokens int `json:"context_shifted_tokens"`
		}
	}
	ref := eval[shifted](t, tb, apiScript(`
		const lm = await WasmLM.load(undefined, { cache: false });
		const r = await lm.chat.completions.create({
			messages: [{ role: 'system', content: `+system+` }, { role: 'user', content: 'She was happy.' }],
			temperature: 0, max_tokens: 20, context_shift: true,
		});
		lm.unload();
		return { content: r.choices[0].message.content, usage: r.usage };
	`))
	require.Positive(t, ref.Usage.ContextShifts, "the prompt does not fit: the API shifts")
	assert.Equal(t, ref.Content, got.Content, "the page's reply is the API's with context_shift")
	line := eval[string](t, tb, `document.querySelectorAll('#chat-log .msg')[1].querySelector('.turn').textContent`)
	assert.Regexp(t, `^prompt `+strconv.Itoa(ref.Usage.PromptTokens)+` tokens · cut to fit the context, \d+ computed · reply `+
		strconv.Itoa(ref.Usage.CompletionTokens)+` tokens.* · context shifted `+strconv.Itoa(ref.Usage.ContextShifts)+
		` times?: `+strconv.Itoa(ref.Usage.ContextShiftedTokens)+` oldest tokens dropped$`, line)
	inContext := ref.Usage.PromptTokens + ref.Usage.CompletionTokens - ref.Usage.ContextShiftedTokens
	assert.Equal(t, "context "+strconv.Itoa(inContext)+" / 512 tokens · shifted: the oldest "+
		strconv.Itoa(ref.Usage.ContextShiftedTokens)+" tokens were dropped", text(t, tb, "chat-context"))
	t.Logf("%s", line)
}

// The demo's chat after a reload that finds the conversation's messages
// but not its session (deleted from OPFS here; a GPU session is never
// saved): it shows the conversation and says its session did not come
// back, and the next reply evaluates the whole prompt, none of it cached —
// what TestBrowserChatDemoSurvivesAReload's restored session spares.
func TestBrowserChatDemoReloadWithoutSession(t *testing.T) {
	tb := newTab(t, "/#chat", chromedp.WithNewBrowserContext())
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	setChatOptions(t, tb, "0", 20, "")
	say(t, tb, "there was a cat")
	waitReplies(t, tb, 2)
	before := chatMessages(t, tb)
	contextLine := text(t, tb, "chat-context")
	require.True(t, eval[bool](t, tb, `wasmlmDemo.lm.sessions.delete('wasmlm-demo-chat')`))

	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Reload()))
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready' && wasmlmDemo.chat.restored != null`, 30*time.Second)
	restored := eval[chatRestored](t, tb, `wasmlmDemo.chat.restored`)
	assert.Contains(t, restored.Error, "no saved session")
	assert.Equal(t, before, chatMessages(t, tb), "the conversation is shown again")
	assert.Contains(t, text(t, tb, "chat-restored"), "but not its session")
	assert.Equal(t, contextLine, text(t, tb, "chat-context"), "the context's line of the conversation shown again")
	setChatOptions(t, tb, "0", 20, "")
	say(t, tb, "The cat liked fish.")
	waitReplies(t, tb, 4)
	prompt, reused, computed, _, _ := shownTurn(t, tb, 3)
	assert.Zero(t, reused, "nothing cached: the conversation is evaluated again")
	assert.Equal(t, prompt, computed)
}
