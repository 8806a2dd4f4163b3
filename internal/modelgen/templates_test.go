package modelgen

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// TestChatTemplatesAreTheChatPackages: every template modelgen writes is
// the chat package's test copy of it (chat/testdata/templates), byte for
// byte, and every parity decoder carries one, written as
// tokenizer.chat_template, with the template's markers as the
// vocabulary's last tokens (control or user-defined).
func TestChatTemplatesAreTheChatPackages(t *testing.T) {
	for _, name := range ChatTemplates() {
		want, err := os.ReadFile("../../chat/testdata/templates/" + name + ".jinja")
		require.NoError(t, err, name)
		assert.Equal(t, string(want), chatTemplate(name), name)
	}
	for _, pm := range ParityModels() {
		if pm.Spec.Arch == "bert" || pm.Spec.Arch == "nomic-bert" {
			assert.Empty(t, pm.Spec.ChatTemplate, pm.Name)
			continue
		}
		require.NotEmpty(t, pm.Spec.ChatTemplate, pm.Name)
		if pm.Spec.Type != tensor.F32 {
			continue // the same header as the F32 model's
		}
		data, err := Build(pm.Spec)
		require.NoError(t, err, pm.Name)
		f, err := gguf.Parse(data)
		require.NoError(t, err, pm.Name)
		src, err := f.String("tokenizer.chat_template")
		require.NoError(t, err, pm.Name)
		assert.Equal(t, chatTemplate(pm.Spec.ChatTemplate), src, pm.Name)
		tokens, err := f.Strings("tokenizer.ggml.tokens")
		require.NoError(t, err, pm.Name)
		types, err := f.Int32s("tokenizer.ggml.token_type")
		require.NoError(t, err, pm.Name)
		markers := templateTokens[pm.Spec.ChatTemplate]
		at := len(tokens) - len(markers)
		for i, m := range markers {
			assert.Equal(t, m.text, tokens[at+i], pm.Name)
			assert.Equal(t, map[bool]int32{false: typeControl, true: typeUserDefined}[m.userDefined], types[at+i], "%s: %s", pm.Name, m.text)
		}
		assert.Equal(t, "▁t"+strconv.Itoa(at-1), tokens[at-1], pm.Name)
	}
	_, err := Build(Spec{Shape: Shape{Dim: 64, HiddenDim: 128, Layers: 1, Heads: 4, KVHeads: 4, VocabSize: MinVocabSize, ContextLength: 32},
		ChatTemplate: "no-such-template"})
	require.ErrorIs(t, err, ErrSpec)
}
