package chat

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// familiesReference is testdata/families_reference.json: the 2026
// families' templates rendered by @huggingface/jinja (see
// testdata/families_reference.mjs).
type familiesReference struct {
	Templates map[string]struct {
		Source   string `json:"source"`
		SHA256   string `json:"sha256"`
		Family   string `json:"family"`
		BOSToken string `json:"bos_token"`
	} `json:"templates"`
	Cases []struct {
		Template            string        `json:"template"`
		Family              string        `json:"family"`
		Name                string        `json:"name"`
		Messages            []jsonMessage `json:"messages"`
		AddGenerationPrompt bool          `json:"add_generation_prompt"`
		EnableThinking      *bool         `json:"enable_thinking"`
		Date                string        `json:"date"`
		Output              string        `json:"output"`
	} `json:"cases"`
}

// TestFamilies2026AsTheirTemplates checks that Detect gives each real
// template (its SHA-256 checked) its family, and that the family writes
// exactly what the template renders for every conversation of the
// reference, with the generation prompt and without, thinking on and off
// where the template has the switch, less the BOS the template writes
// (the tokenizer adds it).
func TestFamilies2026AsTheirTemplates(t *testing.T) {
	ref := readTestJSON[familiesReference](t, "families_reference.json")
	require.NotEmpty(t, ref.Cases)
	for name, tm := range ref.Templates {
		file, ok := strings.CutPrefix(tm.Source, "templates/")
		require.True(t, ok, tm.Source)
		src, err := os.ReadFile(filepath.Join("testdata", "templates", file))
		require.NoError(t, err)
		sum := sha256.Sum256(src)
		require.Equal(t, tm.SHA256, hex.EncodeToString(sum[:]), "%s: the template is not the one rendered", name)
		tmpl, err := Detect(string(src))
		require.NoError(t, err, name)
		assert.Equal(t, tm.Family, tmpl.Name(), name)
	}
	for _, c := range ref.Cases {
		tmpl, err := Named(c.Family)
		require.NoError(t, err)
		opts := Options{Date: c.Date, DisableThinking: c.EnableThinking != nil && !*c.EnableThinking}
		got, err := tmpl.ApplyWith(messages(c.Messages), c.AddGenerationPrompt, opts)
		require.NoError(t, err)
		want := strings.TrimPrefix(c.Output, ref.Templates[c.Template].BOSToken)
		assert.Equal(t, want, got, "%s, %s, add_generation_prompt %v, enable_thinking %v", c.Template, c.Name, c.AddGenerationPrompt, c.EnableThinking)
	}
}

// TestReplyPrefix: the text a reply's reader reads first is what the
// generation prompt ends with inside the reply: Qwen3.5's open think block
// when thinking is on, nothing otherwise.
func TestReplyPrefix(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "Hi"}}
	for _, name := range Names() {
		tmpl, err := Named(name)
		require.NoError(t, err)
		for _, opts := range []Options{{}, {DisableThinking: true}} {
			prompt, err := tmpl.ApplyWith(msgs, true, opts)
			require.NoError(t, err)
			prefix := tmpl.ReplyPrefix(opts)
			assert.True(t, strings.HasSuffix(prompt, prefix), "%s: %q does not end the prompt", name, prefix)
			if name == "qwen35" && !opts.DisableThinking {
				assert.Equal(t, "<think>\n", prefix)
				r, c := SplitReasoning(prefix + "plan\n</think>\n\nHello")
				assert.Equal(t, []string{"plan", "Hello"}, []string{r, c})
			} else {
				assert.Empty(t, prefix, name)
			}
		}
	}
}
