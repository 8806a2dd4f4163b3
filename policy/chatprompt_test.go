package policy_test

import (
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

// qwen3Like is enough of Qwen3's template for Detect to find qwen3.
const qwen3Like = `<|im_start|>{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\n\n</think>\n\n' }}{%- endif %}`

// withChatTemplate is the default model with tokenizer.chat_template set.
func withChatTemplate(t *testing.T, src string) *engine.Model {
	t.Helper()
	data, err := modelgen.SetKV(models.Default(), "tokenizer.chat_template", gguf.ValueOf(src))
	require.NoError(t, err)
	m, err := engine.Load(data, engine.LoadOptions{})
	require.NoError(t, err)
	return m
}

// NewChatPrompt renders Qwen3-like templates with the thinking switch, and
// changes nothing for templates without it.
func TestChatPromptThinkingSwitch(t *testing.T) {
	msgs := []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Once upon a time"}}
	off := chat.Options{DisableThinking: true}

	t.Run("qwen3", func(t *testing.T) {
		m := withChatTemplate(t, qwen3Like)
		tmpl, err := policy.ChatTemplate(m)
		require.NoError(t, err)
		require.Equal(t, "qwen3", tmpl.Name())

		def, err := policy.NewChatPrompt(m, msgs, chat.Options{})
		require.NoError(t, err)
		got, err := policy.NewChatPrompt(m, msgs, off)
		require.NoError(t, err)
		text, err := tmpl.Apply(msgs, true)
		require.NoError(t, err)
		want, err := m.TextPrompt(text+"<think>\n\n</think>\n\n", true)
		require.NoError(t, err)
		assert.Equal(t, want.Tokens, got.Tokens, "the empty think block after the assistant opening")
		assert.Equal(t, def.Stop, got.Stop)
		assert.Equal(t, def.StopTokens, got.StopTokens)
	})

	t.Run("no thinking switch", func(t *testing.T) {
		for _, m := range []*engine.Model{withChatTemplate(t, "chatml"), withChatTemplate(t, "<start_of_turn>")} {
			def, err := policy.NewChatPrompt(m, msgs, chat.Options{})
			require.NoError(t, err)
			got, err := policy.NewChatPrompt(m, msgs, off)
			require.NoError(t, err)
			assert.Equal(t, def, got, "the option changes nothing")
		}
	})

	t.Run("errors are the template's", func(t *testing.T) {
		m := withChatTemplate(t, qwen3Like)
		_, want := policy.NewChatPrompt(m, []chat.Message{{Role: "wizard"}}, chat.Options{})
		require.ErrorIs(t, want, chat.ErrUnknownRole)
		_, err := policy.NewChatPrompt(m, []chat.Message{{Role: "wizard"}}, off)
		assert.Equal(t, want, err)
	})
}

func TestChatTemplateUnrecognisedIsAnError(t *testing.T) {
	m := withChatTemplate(t, "{% for m in messages %}{{ m.content }}{% endfor %}")
	_, err := policy.ChatTemplate(m)
	require.ErrorIs(t, err, chat.ErrUnknownTemplate)
	_, err = policy.NewChatPrompt(m, []chat.Message{{Role: "user", Content: "hi"}}, chat.Options{})
	require.ErrorIs(t, err, chat.ErrUnknownTemplate)
	require.ErrorIs(t, err, engine.ErrUnsupported)
}
