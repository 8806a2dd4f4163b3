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
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
)

// chatMessage is a message of the demo's conversation (wasmlmDemo.chat),
// with, for a reply, what its result said of it.
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	Stats   *struct {
		PromptTokens     int    `json:"promptTokens"`
		Reused           int    `json:"reused"`
		Computed         int    `json:"computed"`
		CompletionTokens int    `json:"completionTokens"`
		FinishReason     string `json:"finishReason"`
		Seed             uint64 `json:"seed"`
	} `json:"stats"`
}

// chatRef is a reply of the JS API, the reference the page is held to.
type chatRef struct {
	Content      string `json:"content"` // streamed
	Whole        string `json:"whole"`   // the same request, not streamed
	PromptTokens []int  `json:"promptTokens"`
	Tokens       []int  `json:"tokens"`
	FinishReason string `json:"finishReason"`
	Prefill      int    `json:"prefill"` // timings.prefillTokens
}

// chatMessages is the demo's conversation.
func chatMessages(t *testing.T, tb *tab) []chatMessage {
	t.Helper()
	return eval[[]chatMessage](t, tb, `wasmlmDemo.chat.messages`)
}

// waitReplies waits until the conversation has n messages, the last a
// finished reply.
func waitReplies(t *testing.T, tb *tab, n int) {
	t.Helper()
	waitFor(t, tb, `wasmlmDemo.running === null && wasmlmDemo.chat.messages.length === `+strconv.Itoa(n)+
		` && wasmlmDemo.chat.messages.at(-1).stats != null`, 30*time.Second)
}

// say types a message into the chat's input and presses Enter.
func say(t *testing.T, tb *tab, s string) {
	t.Helper()
	typeInto(t, tb, "chat-input", s)
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.SendKeys(chromedp.ID("chat-input"), kb.Enter)))
}

// setChatOptions sets the chat's sampling controls, as their input events do.
func setChatOptions(t *testing.T, tb *tab, temperature string, maxTokens int, seed string) {
	t.Helper()
	eval[chromedp.Void](t, tb, `(() => {
		const set = (id, v) => { const e = document.getElementById(id); e.value = v; e.dispatchEvent(new Event('input')); };
		set('chat-temperature', `+jsonString(t, temperature)+`);
		set('chat-max-tokens', `+strconv.Itoa(maxTokens)+`);
		set('chat-seed', `+jsonString(t, seed)+`);
	})()`)
}

// turnLine reads the line under reply i (counting the conversation's
// messages from 0), as the page shows it: prompt tokens, reused, computed,
// reply tokens, finish.
var turnLine = regexp.MustCompile(`^prompt (\d+) tokens · (\d+) reused from the cache, (\d+) computed · reply (\d+) tokens(?:, \d+ tokens/s)? · (\w+)(?: · seed \d+)?$`)

func shownTurn(t *testing.T, tb *tab, i int) (prompt, reused, computed, reply int, finish string) {
	t.Helper()
	line := eval[string](t, tb, `document.querySelectorAll('#chat-log .msg')[`+strconv.Itoa(i)+`].querySelector('.turn').textContent`)
	m := turnLine.FindStringSubmatch(line)
	require.NotNil(t, m, "the turn's line: %q", line)
	n := func(s string) int {
		v, err := strconv.Atoi(s)
		require.NoError(t, err)
		return v
	}
	return n(m[1]), n(m[2]), n(m[3]), n(m[4]), m[5]
}

// chatReference runs the conversations through the JS API on a model of
// its own (from source, a URL; the default model if empty) in the page,
// streamed, one call after the other as the demo made them, and each again
// unstreamed; opts are each call's options (OpenAI's names).
func chatReference(t *testing.T, tb *tab, source string, calls []map[string]any) []chatRef {
	t.Helper()
	src := "undefined"
	if source != "" {
		src = jsonString(t, source)
	}
	return eval[[]chatRef](t, tb, apiScript(`
		const lm = await WasmLM.load(`+src+`, { cache: false });
		const out = [];
		for (const body of `+jsonString(t, calls)+`) {
			const s = await lm.chat.completions.create({ ...body, stream: true });
			let content = '';
			for await (const c of s) content += c.choices[0]?.delta?.content ?? '';
			const r = await s.result;
			out.push({ content, promptTokens: r.promptTokens, tokens: r.tokens, finishReason: r.finishReason, prefill: r.timings.prefillTokens });
		}
		for (const [i, body] of `+jsonString(t, calls)+`.entries()) {
			out[i].whole = (await lm.chat.completions.create(body)).choices[0].message.content;
		}
		lm.unload();
		return out;
	`))
}

// reusable is how many of prompt's tokens the engine's session takes from
// its cache after a generation from previous that gave tokens, finishing
// with finish: the longest common prefix of prompt and what the cache
// holds — the previous prompt and the reply's tokens it evaluated, which
// is all of them except the last when a limit cut the reply (the last
// sampled token is never fed back) — less one when that is all of prompt
// (its last token runs again to give the next token's logits).
func reusable(previous, tokens []int, finish string, prompt []int) int {
	if finish == "length" || finish == "context" {
		tokens = tokens[:max(len(tokens)-1, 0)]
	}
	held := append(append([]int(nil), previous...), tokens...)
	n := 0
	for n < len(held) && n < len(prompt) && held[n] == prompt[n] {
		n++
	}
	return min(n, len(prompt)-1)
}

// assertRendered checks that each reply shows its text as web/demo/markdown.js
// renders it.
func assertRendered(t *testing.T, tb *tab) {
	t.Helper()
	same := eval[[]bool](t, tb, `(async () => {
		const { renderMarkdown } = await import('/markdown.js');
		const views = document.querySelectorAll('#chat-log .msg');
		return wasmlmDemo.chat.messages.map((m, i) => {
			if (m.role !== 'assistant') return views[i].querySelector('.body').textContent === m.content;
			const div = document.createElement('div');
			div.append(renderMarkdown(m.content));
			return views[i].querySelector('.body').innerHTML === div.innerHTML;
		});
	})()`)
	for i, ok := range same {
		assert.True(t, ok, "message %d is shown as its text", i)
	}
}

// The demo page's chat mode with the default model (no chat template: the
// plain one), used as a person would: switch to Chat, write a system
// prompt, talk for two turns with Enter. Each reply is the JS API's for the
// same messages, greedily, and the second turn shows the prompt tokens the
// KV cache held from the first (reused, not computed again): exactly what
// the engine's session keeps. Then: regenerate with another seed replaces
// the last reply; Stop ends a long reply and the chat goes on; a new
// conversation with another system prompt answers to it; what a person
// types is shown as text, never as HTML.
func TestBrowserChatDemo(t *testing.T) {
	tb := newTab(t, "/", chromedp.WithNewBrowserContext()) // the conversation the page keeps stays in this profile
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	visible := func(sel string) bool {
		return eval[bool](t, tb, `getComputedStyle(document.querySelector('`+sel+`')).display !== 'none'`)
	}
	assert.True(t, visible("main"), "completion mode first")
	assert.False(t, visible("#chat"))
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("mode-chat"))))
	assert.False(t, visible("main"), "chat mode hides the completion playground")
	assert.True(t, visible("#chat"))
	assert.Equal(t, "#chat", eval[string](t, tb, `location.hash`))
	assert.Contains(t, text(t, tb, "chat-template"), "no chat template", "the default model chats with the plain template")

	system := "Once upon a time"
	typeInto(t, tb, "system-prompt", system)
	setChatOptions(t, tb, "0", 20, "")
	say(t, tb, "there was a cat")
	waitReplies(t, tb, 2)
	assert.Equal(t, "Done", text(t, tb, "status"))
	say(t, tb, "The cat liked fish.")
	waitReplies(t, tb, 4)
	msgs := chatMessages(t, tb)

	sys := map[string]any{"role": "system", "content": system}
	user1 := map[string]any{"role": "user", "content": "there was a cat"}
	user2 := map[string]any{"role": "user", "content": "The cat liked fish."}
	greedy := func(msgs ...map[string]any) map[string]any {
		return map[string]any{"messages": msgs, "temperature": 0, "max_tokens": 20}
	}
	reply1 := map[string]any{"role": "assistant", "content": msgs[1].Content}
	refs := chatReference(t, tb, "", []map[string]any{greedy(sys, user1), greedy(sys, user1, reply1, user2)})
	for i, ref := range refs {
		got := msgs[2*i+1]
		assert.Equal(t, "assistant", got.Role)
		assert.NotEmpty(t, ref.Content)
		assert.Equal(t, ref.Content, got.Content, "turn %d: the page's reply is the API's", i+1)
		assert.Equal(t, ref.Whole, got.Content, "turn %d: the page's reply is the API's unstreamed", i+1)
		prompt, reused, computed, n, finish := shownTurn(t, tb, 2*i+1)
		assert.Equal(t, len(ref.PromptTokens), prompt, "turn %d: prompt tokens", i+1)
		assert.Equal(t, len(ref.Tokens), n, "turn %d: reply tokens", i+1)
		assert.Equal(t, ref.FinishReason, finish)
		assert.Equal(t, prompt, reused+computed)
		assert.Equal(t, len(ref.PromptTokens)-ref.Prefill, reused, "turn %d: reused as the API's own session reuses", i+1)
	}
	_, reused1, _, _, _ := shownTurn(t, tb, 1)
	assert.Zero(t, reused1, "the first turn has nothing cached")
	want := reusable(refs[0].PromptTokens, refs[0].Tokens, refs[0].FinishReason, refs[1].PromptTokens)
	_, reused2, _, _, _ := shownTurn(t, tb, 3)
	assert.Positive(t, reused2, "the second turn reuses the first's tokens")
	assert.Equal(t, want, reused2, "the second turn reuses what the session holds of the first")
	t.Logf("turn 2: %d prompt tokens, %d reused (turn 1: %d prompt + %d reply tokens)",
		len(refs[1].PromptTokens), reused2, len(refs[0].PromptTokens), len(refs[0].Tokens))
	assertRendered(t, tb)
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := artifactPath(t, "chat.png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)

	// Regenerate, sampled with another seed: the last reply is replaced by
	// the API's for that seed, and the whole prompt came from the cache.
	setChatOptions(t, tb, "1", 20, "7")
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("chat-regenerate"))))
	waitFor(t, tb, `wasmlmDemo.running === null && wasmlmDemo.chat.messages.at(-1).stats?.seed === 7`, 30*time.Second)
	after := chatMessages(t, tb)
	require.Len(t, after, 4, "regenerate replaces the reply, it does not add one")
	assert.Equal(t, msgs[:3], after[:3])
	sampled := map[string]any{"messages": []map[string]any{sys, user1, reply1, user2}, "temperature": 1, "max_tokens": 20, "seed": 7}
	ref := chatReference(t, tb, "", []map[string]any{sampled})[0]
	assert.Equal(t, ref.Content, after[3].Content, "the new reply is the API's for seed 7")
	assert.NotEqual(t, msgs[3].Content, after[3].Content, "seed 7 at temperature 1 writes another reply than greedy")
	prompt, reused, _, _, _ := shownTurn(t, tb, 3)
	assert.Equal(t, reusable(refs[1].PromptTokens, refs[1].Tokens, refs[1].FinishReason, ref.PromptTokens), reused)
	assert.Equal(t, prompt-1, reused, "the same prompt again: all of it but its last token from the cache")
	assert.Equal(t, 4, eval[int](t, tb, `document.querySelectorAll('#chat-log .msg').length`))
	assertRendered(t, tb)

	// Stop in the middle of a long reply: the reply so far stays, marked
	// abort, and the conversation goes on.
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("chat-clear"))))
	assert.Empty(t, chatMessages(t, tb))
	assert.Zero(t, eval[int](t, tb, `document.querySelectorAll('#chat-log .msg').length`))
	setChatOptions(t, tb, "0", 400, "")
	say(t, tb, "Lily went to the park.")
	// Stop as the first text comes (looking every millisecond, not every
	// frame), from the page itself, so that the click cannot come after the
	// reply ended by itself (greedily, it ends after 242 tokens).
	_, err = chromedp.Run(tb.ctx, chromedp.Poll[bool](`(() => {
		const m = wasmlmDemo.chat.messages[1];
		if (!m || m.content === '') return false;
		document.getElementById('chat-stop').click();
		return true;
	})()`, chromedp.WithPollingInterval(time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)))
	require.NoError(t, err)
	waitReplies(t, tb, 2)
	stopped := chatMessages(t, tb)[1]
	assert.Equal(t, "abort", stopped.Stats.FinishReason)
	assert.NotEmpty(t, stopped.Content, "the text so far stays")
	_, _, _, n, finish := shownTurn(t, tb, 1)
	assert.Equal(t, "abort", finish)
	assert.Less(t, n, 242)
	t.Logf("stopped after %d tokens", n)
	assert.Equal(t, "Stopped", text(t, tb, "status"))
	setChatOptions(t, tb, "0", 10, "")
	say(t, tb, "Then it rained.")
	waitReplies(t, tb, 4)
	assert.Equal(t, "Done", text(t, tb, "status"), "the chat goes on after a stop")

	// A new conversation with another system prompt: the reply answers to it.
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("chat-clear"))))
	typeInto(t, tb, "system-prompt", "Tom had a big red ball.")
	say(t, tb, "One day")
	waitReplies(t, tb, 2)
	fresh := chatMessages(t, tb)
	ref = chatReference(t, tb, "", []map[string]any{{
		"messages":    []map[string]any{{"role": "system", "content": "Tom had a big red ball."}, {"role": "user", "content": "One day"}},
		"temperature": 0, "max_tokens": 10,
	}})[0]
	assert.Equal(t, ref.Content, fresh[1].Content, "the reply reads the new system prompt")

	// What a person types is text: HTML in it is shown, not run.
	hostile := `<img src=x onerror="window.pwned=1"> **not bold** <script>window.pwned=2</script>`
	say(t, tb, hostile)
	waitReplies(t, tb, 4)
	assert.Equal(t, hostile, eval[string](t, tb, `document.querySelectorAll('#chat-log .msg.user .body')[1].textContent`))
	assert.Zero(t, eval[int](t, tb, `document.querySelectorAll('#chat-log img, #chat-log script').length`))
	assert.True(t, eval[bool](t, tb, `window.pwned === undefined`))
	assertRendered(t, tb)

	// Without the context shift, a conversation that outgrows the context
	// says so; the message stays, without a reply, for Regenerate once
	// there is room.
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("chat-clear"))))
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("chat-shift"))))
	require.False(t, eval[bool](t, tb, `document.getElementById('chat-shift').checked`))
	eval[chromedp.Void](t, tb, `document.getElementById('system-prompt').value = 'Once upon a time, there was a little girl named Lily. '.repeat(60)`)
	say(t, tb, "She was happy.")
	waitFor(t, tb, `document.getElementById('status').textContent === 'Failed'`, 30*time.Second)
	assert.Contains(t, text(t, tb, "message"), "The conversation and a reply of up to 10 tokens (Max tokens) do not fit the model's context (512 tokens): lower Max tokens")
	assert.Equal(t, []chatMessage{{Role: "user", Content: "She was happy."}}, chatMessages(t, tb))
	typeInto(t, tb, "system-prompt", "Once upon a time")
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("chat-regenerate"))))
	waitReplies(t, tb, 2)
	assert.Empty(t, text(t, tb, "message"), "the error goes with the next reply")

	// Back to completion mode: it generates as before.
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("mode-completion"))))
	assert.True(t, visible("main"))
	assert.False(t, visible("#chat"))
	typeInto(t, tb, "max-tokens", "5")
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("generate"))))
	waitFor(t, tb, `document.getElementById('status').textContent === 'Done'`, 20*time.Second)
	assert.Equal(t, "5", text(t, tb, "ntokens"))
}

// enabled reads which of the page's buttons (by id) are enabled.
func enabled(t *testing.T, tb *tab, ids ...string) map[string]bool {
	t.Helper()
	return eval[map[string]bool](t, tb, `Object.fromEntries(`+jsonString(t, ids)+`.map((id) => [id, !document.getElementById(id).disabled]))`)
}

// The chat after a completion: generate in the completion mode, then switch
// to Chat. Its buttons follow the page's state (Send enabled, Regenerate and
// New conversation not yet, with nothing to regenerate or clear); a message
// gets the JS API's greedy reply; Regenerate replaces it with the same
// greedy reply, the whole prompt from the cache; New conversation empties
// the log and the next message gets that reply again; and the completion
// mode generates after the chat.
func TestBrowserChatDemoAfterCompletion(t *testing.T) {
	tb := newTab(t, "/", chromedp.WithNewBrowserContext())
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	typeInto(t, tb, "max-tokens", "5")
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("generate"))))
	waitFor(t, tb, `document.getElementById('status').textContent === 'Done'`, 20*time.Second)
	assert.Equal(t, "5", text(t, tb, "ntokens"))

	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("mode-chat"))))
	chatButtons := []string{"chat-send", "chat-stop", "chat-regenerate", "chat-clear"}
	assert.Equal(t, map[string]bool{"chat-send": true, "chat-stop": false, "chat-regenerate": false, "chat-clear": false},
		enabled(t, tb, chatButtons...), "after a completion, the chat can send")
	setChatOptions(t, tb, "0", 20, "")
	say(t, tb, "there was a cat")
	waitReplies(t, tb, 2)
	assert.Equal(t, "Done", text(t, tb, "status"))
	assert.Equal(t, map[string]bool{"chat-send": true, "chat-stop": false, "chat-regenerate": true, "chat-clear": true},
		enabled(t, tb, chatButtons...), "after a reply")
	sys := map[string]any{"role": "system", "content": "You are a helpful assistant."}
	user := map[string]any{"role": "user", "content": "there was a cat"}
	greedy := map[string]any{"messages": []map[string]any{sys, user}, "temperature": 0, "max_tokens": 20}
	ref := chatReference(t, tb, "", []map[string]any{greedy})[0]
	require.NotEmpty(t, ref.Content)
	assert.Equal(t, ref.Content, chatMessages(t, tb)[1].Content, "the page's reply is the API's greedy one")
	assert.Equal(t, ref.Whole, chatMessages(t, tb)[1].Content, "the page's reply is the API's unstreamed")

	// Regenerate: a new reply object takes the old one's place.
	eval[chromedp.Void](t, tb, `wasmlmDemo.chat.messages[1].replaced = true`)
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("chat-regenerate"))))
	waitFor(t, tb, `wasmlmDemo.running === null && wasmlmDemo.chat.messages.length === 2 && `+
		`!wasmlmDemo.chat.messages[1].replaced && wasmlmDemo.chat.messages[1].stats != null`, 30*time.Second)
	assert.Equal(t, "Done", text(t, tb, "status"))
	assert.Equal(t, ref.Content, chatMessages(t, tb)[1].Content, "the regenerated greedy reply is the API's")
	prompt, reused, _, _, _ := shownTurn(t, tb, 1)
	assert.Equal(t, len(ref.PromptTokens), prompt)
	assert.Equal(t, prompt-1, reused, "the same prompt again: all of it but its last token from the cache")
	assert.Equal(t, 2, eval[int](t, tb, `document.querySelectorAll('#chat-log .msg').length`))

	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("chat-clear"))))
	assert.Empty(t, chatMessages(t, tb), "New conversation empties the conversation")
	assert.Zero(t, eval[int](t, tb, `document.querySelectorAll('#chat-log .msg').length`))
	say(t, tb, "there was a cat")
	waitReplies(t, tb, 2)
	assert.Equal(t, ref.Content, chatMessages(t, tb)[1].Content, "the new conversation's reply is the API's greedy one")
	assertRendered(t, tb)

	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("mode-completion"))))
	assert.Equal(t, map[string]bool{"generate": true, "stop": false}, enabled(t, tb, "generate", "stop"), "after the chat")
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("generate"))))
	waitFor(t, tb, `document.getElementById('status').textContent === 'Done'`, 20*time.Second)
	assert.Equal(t, "5", text(t, tb, "ntokens"), "the completion mode generates after the chat")
}

// The chat mode with a model that has a chat template (ChatML, set on the
// default model's file), loaded from a URL with the page's URL field into
// a page opened on #chat: the page names the template; each reply is the
// API's for the same messages; and the second turn reuses the first turn's
// prompt and, as ChatML puts the reply back where the model wrote it, the
// reply's tokens too.
func TestBrowserChatDemoChatTemplate(t *testing.T) {
	data, err := modelgen.SetKV(models.Default(), "tokenizer.chat_template", gguf.ValueOf("chatml"))
	require.NoError(t, err)
	tb := newTab(t, "/#chat", chromedp.WithNewBrowserContext())
	url, _ := serveFile(t, tb.site, "chatml.gguf", data)
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	assert.True(t, eval[bool](t, tb, `getComputedStyle(document.getElementById('chat')).display !== 'none'`), "#chat opens the chat mode")
	typeInto(t, tb, "model-url", tb.site.url+url)
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("model-url-load"))))
	waitFor(t, tb, `document.getElementById('status').textContent.startsWith('chatml.gguf ready')`, 30*time.Second)
	assert.Contains(t, text(t, tb, "model-info"), "chat template: chatml")
	assert.Contains(t, text(t, tb, "chat-template"), "Chat template: chatml")

	setChatOptions(t, tb, "0", 12, "")
	say(t, tb, "Once upon a time")
	waitReplies(t, tb, 2)
	say(t, tb, "What happened next?")
	waitReplies(t, tb, 4)
	msgs := chatMessages(t, tb)
	sys := map[string]any{"role": "system", "content": "You are a helpful assistant."}
	user1 := map[string]any{"role": "user", "content": "Once upon a time"}
	user2 := map[string]any{"role": "user", "content": "What happened next?"}
	reply1 := map[string]any{"role": "assistant", "content": msgs[1].Content}
	greedy := func(msgs ...map[string]any) map[string]any {
		return map[string]any{"messages": msgs, "temperature": 0, "max_tokens": 12}
	}
	refs := chatReference(t, tb, url, []map[string]any{greedy(sys, user1), greedy(sys, user1, reply1, user2)})
	for i, ref := range refs {
		assert.Equal(t, ref.Content, msgs[2*i+1].Content, "turn %d: the page's reply is the API's", i+1)
		assert.Equal(t, ref.Whole, msgs[2*i+1].Content, "turn %d", i+1)
		prompt, reused, _, n, _ := shownTurn(t, tb, 2*i+1)
		assert.Equal(t, len(ref.PromptTokens), prompt)
		assert.Equal(t, len(ref.Tokens), n)
		assert.Equal(t, len(ref.PromptTokens)-ref.Prefill, reused, "turn %d: reused as the API's own session reuses", i+1)
	}
	_, reused, _, _, _ := shownTurn(t, tb, 3)
	assert.Equal(t, reusable(refs[0].PromptTokens, refs[0].Tokens, refs[0].FinishReason, refs[1].PromptTokens), reused)
	assert.Greater(t, reused, len(refs[0].PromptTokens), "the first reply's tokens came from the cache too")
	t.Logf("turn 2: %d prompt tokens, %d reused (turn 1: %d prompt + %d reply tokens)",
		len(refs[1].PromptTokens), reused, len(refs[0].PromptTokens), len(refs[0].Tokens))
	assert.True(t, strings.HasPrefix(text(t, tb, "chat-context"), "context "+strconv.Itoa(len(refs[1].PromptTokens)+len(refs[1].Tokens))+" / "))
	assertRendered(t, tb)
}

// The chat mode works under the strict Content-Security-Policy, with no
// violation (the tab fails on the console error each would log).
func TestBrowserChatDemoStrictCSP(t *testing.T) {
	s := strictCSPSite(t)
	tb := openTab(t, s.site, "/#chat", listenForViolations, chromedp.WithNewBrowserContext())
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	setChatOptions(t, tb, "0", 20, "")
	say(t, tb, "there was a cat")
	waitReplies(t, tb, 2)
	assert.NotEmpty(t, chatMessages(t, tb)[1].Content)
	assert.Empty(t, eval[[]string](t, tb, `window.cspViolations`))
}
