package chat

import (
	"fmt"
	"slices"
	"strings"
)

// Detect recognises the family of a tokenizer.chat_template Jinja source.
//
// It follows llama.cpp's llm_chat_detect_template (src/llama-chat.cpp at
// commit 2a20c85a) check for check and in the same order, because the
// substrings overlap (a phi-4 template also contains chatml's <|im_start|>,
// Mistral v1/v3/v7 and the llama-2 variants all contain [INST], and so on).
// Like llama.cpp, a source that is exactly a llama.cpp template name
// ("chatml", "llama3", ...) selects that template.
//
// One check is ours: Qwen3's hybrid-thinking template, ChatML to llama.cpp's
// detector, is "qwen3", the same format with Qwen3's thinking switch and
// history rules (see Options).
//
// A template that matches nothing, or that llama.cpp recognises as a family
// this package does not implement (llama4, deepseek3, falcon3, ...), gives an
// error wrapping ErrUnknownTemplate that says which; there is no fallback.
// Detect never returns "plain": a caller that has no template chooses it.
func Detect(jinja string) (Template, error) {
	name := detectFamily(jinja)
	if name == "" {
		return Template{}, fmt.Errorf("%w: no chat-template family matches this %d-byte template",
			ErrUnknownTemplate, len(jinja))
	}
	f, ok := families[name]
	if !ok {
		return Template{}, fmt.Errorf("%w: llama.cpp recognises this template as %q, which is not implemented",
			ErrUnknownTemplate, name)
	}
	return Template{f: f, tools: detectToolFormat(name, jinja)}, nil
}

// llamaCppNames are the template names llama.cpp accepts in place of a Jinja
// source (its LLM_CHAT_TEMPLATES table at commit 2a20c85a), implemented here
// or not.
var llamaCppNames = []string{
	"chatml", "llama2", "llama2-sys", "llama2-sys-bos", "llama2-sys-strip",
	"mistral-v1", "mistral-v3", "mistral-v3-tekken", "mistral-v7", "mistral-v7-tekken",
	"phi3", "phi4", "falcon3", "zephyr", "monarch", "gemma", "orion", "openchat",
	"vicuna", "vicuna-orca", "deepseek", "deepseek2", "deepseek3", "command-r",
	"llama3", "chatglm3", "chatglm4", "glmedge", "minicpm", "exaone3", "exaone4",
	"rwkv-world", "granite", "granite-4.0", "granite-4.1", "gigachat", "megrez", "yandex", "bailing",
	"bailing-think", "bailing2", "llama4", "smolvlm", "hunyuan-moe", "gpt-oss",
	"hunyuan-dense", "kimi-k2", "seed_oss", "grok-2", "pangu-embedded",
}

func isLlamaCppName(s string) bool {
	return slices.Contains(llamaCppNames, s)
}

// detectFamily returns llama.cpp's name for the template's family ("dots1"
// for the one family llama.cpp detects but does not name, "qwen3" for our
// refinement of chatml), or "" when nothing matches. The chain below is
// llama.cpp's, in llama.cpp's order.
func detectFamily(tmpl string) string {
	if isLlamaCppName(tmpl) {
		return tmpl
	}
	has := func(s string) bool { return strings.Contains(tmpl, s) }
	switch {
	case has("<|im_start|>"):
		switch {
		case has("<|im_sep|>"):
			return "phi4"
		case has("<end_of_utterance>"):
			// SmolVLM uses <|im_start|> as its BOS but is not chatml.
			return "smolvlm"
		case isQwen35(has):
			// Ours, as qwen3: Qwen3.5's template, chatml to llama.cpp's
			// legacy path.
			return "qwen35"
		case isQwen3(has):
			// Ours: llama.cpp's legacy path says chatml, which qwen3 extends.
			return "qwen3"
		case isLFM25(has):
			// Ours: LFM2.5's template, chatml less past reasoning.
			return "lfm2"
		}
		return "chatml"
	case strings.HasPrefix(tmpl, "mistral") || has("[INST]"):
		return detectInst(has)
	case has("<|assistant|>") && has("<|end|>"):
		return "phi3"
	case has("[gMASK]<sop>"):
		return "chatglm4"
	case has("<|assistant|>") && has("<|user|>"):
		if has("</s>") {
			return "falcon3"
		}
		return "glmedge"
	case has("<|{{ item['role'] }}|>") && has("<|begin_of_image|>"):
		return "glmedge"
	case has("<|user|>") && has("<|endoftext|>"):
		return "zephyr"
	case has("bos_token + message['role']"):
		return "monarch"
	case has("<start_of_turn>"):
		return "gemma"
	case has(`'\n\nAssistant: ' + eos_token`): // backslash-n as written in Jinja source
		return "orion"
	case has("GPT4 Correct "):
		return "openchat"
	case has("USER: ") && has("ASSISTANT: "):
		if has("SYSTEM: ") {
			return "vicuna-orca"
		}
		return "vicuna"
	case has("### Instruction:") && has("<|EOT|>"):
		return "deepseek"
	case has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>"):
		return "command-r"
	case has("<|start_header_id|>") && has("<|end_header_id|>"):
		return "llama3"
	case has("[gMASK]sop"):
		return "chatglm3"
	case has(miniCPMUser):
		return "minicpm"
	case has("'Assistant: ' + message['content'] + eos_token"):
		return "deepseek2"
	case has("<\uff5cAssistant\uff5c>") && has("<\uff5cUser\uff5c>") && has(deepSeekEOS):
		return "deepseek3"
	case has("[|system|]") && has("[|assistant|]") && has("[|endofturn|]"):
		if has("[|tool|]") {
			return "exaone4"
		}
		return "exaone3"
	case has("rwkv-world") || has(`{{- 'User: ' + message['content']|trim + '\n\n' -}}`):
		return "rwkv-world"
	case has("<|start_of_role|>"):
		if has("<tool_call>") || has("<tools>") {
			if has("g4_default_system_message") {
				return "granite-4.0"
			}
			return "granite-4.1"
		}
		return "granite"
	case has("message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]"):
		return "gigachat"
	case has("<|role_start|>"):
		return "megrez"
	case has(yandexAssistant):
		return "yandex"
	case has("<role>ASSISTANT</role>") && has("'HUMAN'"):
		return "bailing"
	case has("<role>ASSISTANT</role>") && has(`"HUMAN"`) && has("<think>"):
		return "bailing-think"
	case has("<role>ASSISTANT</role>") && has("<role>HUMAN</role>") && has("<|role_end|>"):
		return "bailing2"
	case has("<|header_start|>") && has("<|header_end|>"):
		return "llama4"
	case has("<|endofuserprompt|>"):
		return "dots1"
	case has("<|extra_0|>") && has("<|extra_4|>"):
		return "hunyuan-moe"
	case has("<|start|>") && has("<|channel|>"):
		return "gpt-oss"
	case has("<|turn>") && has("<turn|>") && has("<|channel>"):
		// Ours: llama.cpp's legacy path does not know Gemma 4's template
		// (its Jinja path, common/chat.cpp, has a Gemma 4 handler).
		return "gemma4"
	case has("<\uff5chy_Assistant\uff5c>") && has("<\uff5chy_place\u2581holder\u2581no\u25813\uff5c>"):
		return "hunyuan-dense"
	case has("<|im_assistant|>assistant<|im_middle|>"):
		return "kimi-k2"
	case has("<seed:bos>"):
		return "seed_oss"
	case has("'Assistant: '  + message['content'] + '<|separator|>"): // two spaces, as in Grok-2's template
		return "grok-2"
	case has("[unused9]\u7cfb\u7edf\uff1a[unused10]"): // "[unused9]系统：[unused10]"
		return "pangu-embedded"
	}
	return ""
}

// detectInst splits the [INST] templates: Mistral v7 has a system-prompt
// block; the official v1/v3/v3-tekken templates are told apart by the spaces
// around [INST]; everything else is a llama-2 variant.
func detectInst(has func(string) bool) string {
	switch {
	case has("[SYSTEM_PROMPT]"):
		return "mistral-v7"
	case has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]"):
		switch {
		case has(" [INST]"):
			return "mistral-v1"
		case has(`"[INST]"`):
			return "mistral-v3-tekken"
		}
		return "mistral-v3"
	case has("content.strip()"):
		return "llama2-sys-strip"
	case has("bos_token + '[INST]"):
		return "llama2-sys-bos"
	case has("<<SYS>>"):
		return "llama2-sys"
	}
	return "llama2"
}
