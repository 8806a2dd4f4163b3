//go:build !js

package vocab

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// TestParityChatPromptsAsLlamaCpp: every parity decoder's chat prompt (a
// conversation rendered by the family of the template the file carries)
// tokenizes, special-token text parsed, into llama.cpp's tokens (the
// template's markers single tokens), and those detokenize into llama.cpp's
// text.
func TestParityChatPromptsAsLlamaCpp(t *testing.T) {
	r := llamacppref.Need(t)
	msgs := []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Once upon a time"},
		{Role: "assistant", Content: "There was a cat."}, {Role: "user", Content: "And then?"}}
	var (
		names []string
		toks  []tokenizer.Tokenizer
		jobs  []llamacppref.Job
	)
	for _, pm := range modelgen.ParityModels() {
		if pm.Spec.Type != tensor.F32 || pm.Spec.ChatTemplate == "" {
			continue
		}
		data, err := modelgen.Build(pm.Spec)
		require.NoError(t, err, pm.Name)
		f, err := gguf.Parse(data)
		require.NoError(t, err, pm.Name)
		tok, err := FromGGUF(f)
		require.NoError(t, err, pm.Name)
		src, err := f.String("tokenizer.chat_template")
		require.NoError(t, err, pm.Name)
		tmpl, err := chat.Detect(src)
		require.NoError(t, err, pm.Name)
		text, err := tmpl.ApplyWith(msgs, true, chat.Options{})
		require.NoError(t, err, pm.Name)
		path := filepath.Join(t.TempDir(), pm.Name+".gguf")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		names, toks = append(names, pm.Name), append(toks, tok)
		jobs = append(jobs, llamacppref.Job{Model: path, Texts: []string{text}, ParseSpecial: true, Detokenize: true})
	}
	outs, err := r.Run(jobs)
	require.NoError(t, err)
	for i, out := range outs {
		require.Empty(t, out.Error, "llama.cpp refused %s", names[i])
		text := jobs[i].Texts[0]
		got, err := toks[i].Encode(text, tokenizer.EncodeOptions{ParseSpecial: true})
		require.NoError(t, err, names[i])
		assert.Equal(t, out.Tokenized[0], got, "%s: %q", names[i], text)
		if names[i] != "olmo2" { // modelgen gives the tulu template's role markers no tokens
			assert.Less(t, len(got), len(text), "%s: the markers are single tokens, the rest bytes", names[i])
		}
		back, err := tokenizer.Decode(toks[i], out.Tokenized[0])
		require.NoError(t, err, names[i])
		assert.Equal(t, out.Detokenized[0], back, names[i])
	}
}
