package chat

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDetectOrder pins down llama.cpp's detection order where the substrings
// overlap. Each template holds the markers of two or more families; the
// expected family is the one llama.cpp's llm_chat_detect_template (commit
// 2a20c85a) checks first. The real templates are in TestLlamaCppReference.
func TestDetectOrder(t *testing.T) {
	cases := []struct {
		tmpl, want string
	}{
		{"<|im_start|>user<|im_sep|>", "phi4"},                               // phi4 before chatml
		{"<|im_start|>[INST]<|start_header_id|><|end_header_id|>", "chatml"}, // chatml first of all
		{"mistral-anything", "llama2"},                                       // the "mistral" prefix rule
		{"[INST] [SYSTEM_PROMPT] ' [INST] ' + system_message", "mistral-v7"},
		{"' [INST] ' + system_message", "mistral-v1"},
		{`[AVAILABLE_TOOLS] "[INST]"`, "mistral-v3-tekken"},
		{`[AVAILABLE_TOOLS] "[INST] "`, "mistral-v3"},
		{"[INST] content.strip() bos_token + '[INST] <<SYS>>", "llama2-sys-strip"},
		{"[INST] bos_token + '[INST] <<SYS>>", "llama2-sys-bos"},
		{"[INST] <<SYS>>", "llama2-sys"},
		{"[INST] <|assistant|><|end|>", "llama2"}, // [INST] before phi3
		{"<|assistant|><|end|><|user|>[gMASK]<sop>", "phi3"},
		{"[gMASK]<sop><|assistant|><|user|>", "chatglm4"}, // chatglm4 before glmedge
		{"<|assistant|><|user|><|endoftext|>", "glmedge"}, // glmedge before zephyr
		{"<|{{ item['role'] }}|><|begin_of_image|>", "glmedge"},
		{"<|user|><|endoftext|>", "zephyr"},
		{"bos_token + message['role'] <start_of_turn>", "monarch"},
		{"<start_of_turn>GPT4 Correct ", "gemma"},
		// Gemma 3n's turns (Gemma 3's template with audio items)
		{`{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}{{ '<audio_soft_token>' }}`, "gemma"},
		{`'\n\nAssistant: ' + eos_token`, "orion"},
		{"USER: ASSISTANT: SYSTEM: ", "vicuna-orca"},
		{"USER: ASSISTANT: ### Instruction:<|EOT|>", "vicuna"},
		{"### Instruction: <|EOT|>", "deepseek"},
		{"<|START_OF_TURN_TOKEN|><|USER_TOKEN|><|start_header_id|><|end_header_id|>", "command-r"},
		{"<|start_header_id|><|end_header_id|>[gMASK]sop", "llama3"},
		{"[gMASK]sop", "chatglm3"},
		{"'Assistant: ' + message['content'] + eos_token", "deepseek2"},
		{"<|start_of_role|><|role_start|>", "granite"},
		{"<|role_start|>", "megrez"},
		{"<role>ASSISTANT</role> 'HUMAN'", "bailing"},
		{"{# <seed:bos> #}", "seed_oss"},
		// qwen3: the thinking switch and the empty block as Qwen3 writes it
		// (a Jinja string literal, two newlines after it); SmolLM3's block
		// (double quotes, one newline) and a switch alone stay chatml.
		{`<|im_start|>{% if enable_thinking is false %}{{- '<think>\n\n</think>\n\n' }}`, "qwen3"},
		{`<|im_start|>{% if enable_thinking %}{{ "<|im_start|>assistant\n" + "<think>\n\n</think>\n" }}`, "chatml"},
		{`<|im_start|>{% if enable_thinking %}`, "chatml"},
		{`<|im_start|><|im_sep|>enable_thinking '<think>\n\n</think>\n\n'`, "phi4"},
		// qwen35: Qwen3's markers and a generation prompt that opens a
		// think block; lfm2: ChatML with LFM2.5's keep_past_thinking.
		{`<|im_start|>'<think>\n\n</think>\n\n' enable_thinking {{- '<think>\n' }}`, "qwen35"},
		{`<|im_start|>{%- set keep_past_thinking = keep_past_thinking | default(false) -%}`, "lfm2"},
		{"<|start|>assistant<|channel|>", "gpt-oss"},
		// Granite 4.0 (tools and its default system message), as llama.cpp
		// tells it from Granite 3.x (and from 4.1, in TestDetectUnsupported).
		{"<|start_of_role|><tool_call> g4_default_system_message", "granite-4.0"},
		// gemma4: ours (llama.cpp's legacy chain knows no Gemma 4 template);
		// Gemma 3's markers come first.
		{"<|turn>user\n<turn|><|channel>", "gemma4"},
		{"<start_of_turn><|turn><turn|><|channel>", "gemma"},
		{"qwen3", ""},        // ours, not a llama.cpp name: no template
		{"chatml", "chatml"}, // a llama.cpp name selects that template
		{"llama2-sys-bos", "llama2-sys-bos"},
	}
	for _, tc := range cases {
		tmpl, err := Detect(tc.tmpl)
		if tc.want == "" {
			require.ErrorIs(t, err, ErrUnknownTemplate, tc.tmpl)
			continue
		}
		require.NoError(t, err, tc.tmpl)
		assert.Equal(t, tc.want, tmpl.Name(), tc.tmpl)
	}
}

// TestDetectUnsupported: templates llama.cpp recognises as a family we do not
// implement are rejected with ErrUnknownTemplate naming the family, and are
// not mistaken for a later family in the chain (smolvlm contains chatml's
// marker, falcon3 glmedge's).
func TestDetectUnsupported(t *testing.T) {
	cases := []struct {
		tmpl, family string
	}{
		{"<|im_start|>User:<end_of_utterance>", "smolvlm"},
		{"<|user|>\n<|assistant|>\n</s>", "falcon3"},
		{"<\uff5cUser\uff5c><\uff5cAssistant\uff5c>" + deepSeekEOS, "deepseek3"},
		{"[|system|][|assistant|][|endofturn|]", "exaone3"},
		{"[|system|][|assistant|][|endofturn|][|tool|]", "exaone4"},
		{"<|header_start|>user<|header_end|>", "llama4"},
		{"<|endofuserprompt|>", "dots1"},
		{"<|start_of_role|><tools>", "granite-4.1"},
		{"<|im_assistant|>assistant<|im_middle|>", "kimi-k2"},
		{"mistral-v7-tekken", "mistral-v7-tekken"}, // a name llama.cpp knows
	}
	for _, tc := range cases {
		_, err := Detect(tc.tmpl)
		require.ErrorIs(t, err, ErrUnknownTemplate, tc.tmpl)
		assert.Contains(t, err.Error(), `"`+tc.family+`"`, tc.tmpl)
	}
}

func TestDetectNothing(t *testing.T) {
	for _, tmpl := range []string{
		"",
		"{% for message in messages %}{{ message['content'] }}{% endfor %}",
		"<|im_end|>",     // an end marker alone is not chatml
		"[/INST]",        // nor is a closing tag llama2
		"Mistral [inst]", // detection is case-sensitive
		" chatml",        // names must match exactly
	} {
		_, err := Detect(tmpl)
		require.ErrorIs(t, err, ErrUnknownTemplate, tmpl)
		assert.Contains(t, err.Error(), "no chat-template family matches", tmpl)
	}
}
