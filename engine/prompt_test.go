package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/chat"
)

// TestChatWithoutTemplateIsPlain: a model with no chat template joins the
// message contents with newlines, so a one-message chat is a plain completion.
func TestChatWithoutTemplateIsPlain(t *testing.T) {
	m := loadStories260K(t)
	tmpl, err := m.ChatTemplate()
	require.NoError(t, err)
	assert.Equal(t, "plain", tmpl.Name())

	opts := GenerateOptions{MaxTokens: 30}
	want, err := newSession(t, m).Generate(context.Background(), onceUpon, opts, nil)
	require.NoError(t, err)
	got, err := newSession(t, m).GenerateChat(context.Background(), []chat.Message{{Role: "user", Content: onceUpon}}, opts, nil)
	require.NoError(t, err)
	assert.Equal(t, want.Tokens, got.Tokens)
	assert.Equal(t, want.Text, got.Text)

	_, err = newSession(t, m).GenerateChat(context.Background(), []chat.Message{{Role: "wizard", Content: "x"}}, opts, nil)
	require.ErrorIs(t, err, chat.ErrUnknownRole)
}

func TestChatTemplateUnrecognisedIsAnError(t *testing.T) {
	m := *loadStories260K(t)
	m.chatTemplate = "{% for m in messages %}{{ m.content }}{% endfor %}"
	_, err := m.ChatTemplate()
	require.ErrorIs(t, err, chat.ErrUnknownTemplate)
	_, err = m.ChatPrompt([]chat.Message{{Role: "user", Content: "hi"}})
	require.ErrorIs(t, err, chat.ErrUnknownTemplate)
	require.ErrorIs(t, err, ErrUnsupported)
}

// TestStopTokensEndGeneration: an extra stop token ends generation like EOS
// and is not part of the result.
func TestStopTokensEndGeneration(t *testing.T) {
	m := loadStories260K(t)
	plain, err := newSession(t, m).Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 20}, nil)
	require.NoError(t, err)
	stopAt := plain.Tokens[6]
	res, err := newSession(t, m).Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 20, StopTokens: []int{stopAt}}, nil)
	require.NoError(t, err)
	assert.Equal(t, FinishStop, res.FinishReason)
	assert.Equal(t, plain.Tokens[:indexOf(plain.Tokens, stopAt)], res.Tokens)
}

func indexOf(ids []int, id int) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return -1
}
