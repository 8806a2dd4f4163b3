package policy

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
)

// TestChatWithoutTemplateIsPlain: a model with no chat template joins the
// message contents with newlines, so a one-message chat is a plain completion.
func TestChatWithoutTemplateIsPlain(t *testing.T) {
	m := loadStories260K(t)
	tmpl, err := ChatTemplate(m)
	require.NoError(t, err)
	assert.Equal(t, "plain", tmpl.Name())

	opts := engine.GenerateOptions{MaxTokens: 30}
	want, err := newSession(t, m).Generate(context.Background(), onceUpon, opts, nil)
	require.NoError(t, err)
	p, err := NewChatPrompt(m, []chat.Message{{Role: "user", Content: onceUpon}}, chat.Options{})
	require.NoError(t, err)
	got, err := newSession(t, m).GeneratePrompt(context.Background(), p.Prompt, opts, nil)
	require.NoError(t, err)
	assert.Equal(t, want.Tokens, got.Tokens)
	assert.Equal(t, want.Text, got.Text)

	_, err = NewChatPrompt(m, []chat.Message{{Role: "wizard", Content: "x"}}, chat.Options{})
	require.ErrorIs(t, err, chat.ErrUnknownRole)
}
