package jsbridge

import (
	"strings"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/policy"
)

// qwen3Template is enough of Qwen3's chat template for the engine to use the
// qwen3 format (chat.Detect).
const qwen3Template = `<|im_start|>{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\n\n</think>\n\n' }}{%- endif %}`

// qwen3File is the default model carrying qwen3Template.
func qwen3File(t *testing.T) []byte {
	t.Helper()
	data, err := modelgen.SetKV(models.Default(), "tokenizer.chat_template", gguf.ValueOf(qwen3Template))
	require.NoError(t, err)
	return data
}

// TestChatEnableThinking: enable_thinking false (or llama.cpp's
// chat_template_kwargs.enable_thinking false) gives a thinking template's
// prompt the empty think block, as policy.NewChatPrompt does natively;
// true, or no field, the template's default. A wrong value rejects naming
// the field as OpenAI spells it.
func TestChatEnableThinking(t *testing.T) {
	file := qwen3File(t)
	native, err := engine.Load(file, engine.LoadOptions{})
	require.NoError(t, err)
	msgs := []chat.Message{{Role: "user", Content: "Once upon a time"}}
	on, err := policy.NewChatPrompt(native, msgs, chat.Options{})
	require.NoError(t, err)
	off, err := policy.NewChatPrompt(native, msgs, chat.Options{DisableThinking: true})
	require.NoError(t, err)
	require.NotEqual(t, on.Tokens, off.Tokens)

	b := New()
	t.Cleanup(func() {
		b.Release()
		require.Zero(t, b.LiveFuncs(), "js.Funcs left unreleased")
	})
	mustCall(t, b, "load", jsBytes(file))
	assert.Equal(t, "qwen3", mustCall(t, b, "info").Get("chatTemplate").String())
	for _, tc := range []struct {
		fields map[string]any
		want   []int
	}{
		{map[string]any{}, on.Tokens},
		{map[string]any{"enable_thinking": true}, on.Tokens},
		{map[string]any{"enable_thinking": nil}, on.Tokens},
		{map[string]any{"enable_thinking": false}, off.Tokens},
		{map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false}}, off.Tokens},
	} {
		tc.fields["messages"], tc.fields["temperature"], tc.fields["max_tokens"] = userSays("Once upon a time"), 0, 2
		res := mustCall(t, b, "chat", chatRequest(t, tc.fields))
		assert.Equal(t, tc.want, ints(res.Get("promptTokens")), "%v", tc.fields)
	}

	_, err = call(t, b, "chat", chatRequest(t, map[string]any{"messages": userSays("x"), "enable_thinking": "no"}))
	var je *jsError
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "invalid_argument", je.Code)
	assert.Equal(t, "enable_thinking", je.Field)
	assert.Equal(t, "enable_thinking", je.Param)
	assert.Contains(t, je.Message, "enable_thinking must be a boolean, got a string")

	_, err = call(t, b, "generate", "x", obj(map[string]any{"enableThinking": false}))
	require.ErrorAs(t, err, &je)
	assert.Contains(t, je.Message, `unknown option "enableThinking"`, "a chat field only")
}

// TestChatReasoningFields: a chat's chunks carry their text's reasoning and
// content parts, and its result the whole reply's (chat.SplitReasoning);
// the parts add up to the text. (The split itself is chat's, tested there:
// the default model writes no <think>.)
func TestChatReasoningFields(t *testing.T) {
	b := newLoaded(t)
	var text, reasoning, content strings.Builder
	fn := js.FuncOf(func(_ js.Value, a []js.Value) any {
		c := a[0]
		text.WriteString(c.Get("text").String())
		require.Equal(t, js.TypeString, c.Get("reasoning").Type())
		require.Equal(t, js.TypeString, c.Get("content").Type())
		reasoning.WriteString(c.Get("reasoning").String())
		content.WriteString(c.Get("content").String())
		return nil
	})
	defer fn.Release()
	res := mustCall(t, b, "chat", greedyChat(t, userSays("Once upon a time"), 30), js.Undefined(), fn)
	r, c := chat.SplitReasoning(res.Get("text").String())
	assert.Equal(t, r, res.Get("reasoning").String())
	assert.Equal(t, c, res.Get("content").String())
	assert.Equal(t, res.Get("text").String(), text.String())
	assert.Equal(t, r, reasoning.String())
	assert.Equal(t, c, content.String())
	assert.NotEmpty(t, c)

	// generate's results and chunks have no such fields.
	log := newChunkLog(t)
	gen := mustCall(t, b, "stream", "Once upon a time", greedy(3), log.fn)
	assert.True(t, gen.Get("reasoning").IsUndefined())
}

// TestChatLogprobs: a chat asking for logprobs has them in its result's
// choice, in OpenAI's shape, and each chunk has its token's; a chat that
// does not ask has null.
func TestChatLogprobs(t *testing.T) {
	b := newLoaded(t)
	var streamed []any
	fn := js.FuncOf(func(_ js.Value, a []js.Value) any {
		if lp := a[0].Get("logprobs"); !lp.IsUndefined() {
			for i := range lp.Length() {
				streamed = append(streamed, lp.Index(i).Get("logprob").Float())
			}
		}
		return nil
	})
	defer fn.Release()
	req := map[string]any{"messages": userSays("Once upon a time"), "max_tokens": 4, "temperature": 0, "logprobs": true, "top_logprobs": 2}
	res := mustCall(t, b, "chat", chatRequest(t, req), js.Undefined(), fn)
	content := res.Get("choice").Get("logprobs").Get("content")
	require.Equal(t, 4, content.Length())
	var whole []any
	for i := range content.Length() {
		e := content.Index(i)
		assert.Equal(t, 2, e.Get("top_logprobs").Length())
		assert.Equal(t, e.Get("top_logprobs").Index(0).Get("logprob").Float(), e.Get("logprob").Float(), "greedy: the most likely")
		whole = append(whole, e.Get("logprob").Float())
	}
	assert.Equal(t, whole, streamed)

	delete(req, "logprobs")
	delete(req, "top_logprobs")
	res = mustCall(t, b, "chat", chatRequest(t, req))
	assert.True(t, res.Get("choice").Get("logprobs").IsNull())
}

// TestChatContextHint: a chat whose messages leave no room for a reply in
// the session's context is refused with OpenAI's message, which then says
// how the page lengthens the context; loaded with that longer
// contextLength, the same chat is answered.
func TestChatContextHint(t *testing.T) {
	b := New()
	t.Cleanup(func() {
		b.Release()
		require.Zero(t, b.LiveFuncs(), "js.Funcs left unreleased")
	})
	req := map[string]any{"messages": userSays(strings.Repeat("Once upon a time there was a dog. ", 60)), "max_tokens": 2}
	mustCall(t, b, "load", jsBytes(models.Default()))
	_, err := call(t, b, "chat", chatRequest(t, req))
	var je *jsError
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "prompt_too_long", je.Code)
	assert.Contains(t, je.Message, "This model's maximum context length is 512 tokens, and the messages are ")
	assert.True(t, strings.HasSuffix(je.Message, ": no room is left for a completion. "+contextHint), je.Message)

	mustCall(t, b, "load", jsBytes(models.Default()), obj(map[string]any{"contextLength": 2048}))
	res := mustCall(t, b, "chat", chatRequest(t, req))
	assert.Greater(t, len(ints(res.Get("promptTokens"))), 512, "the longer context holds the prompt")
}
