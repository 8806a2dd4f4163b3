package chat

import "strings"

// families maps every supported name to its format. It is read-only after
// package initialisation. Each entry mirrors the llama.cpp format of the same
// name (src/llama-chat.cpp, llm_chat_apply_template), except "plain" and
// "qwen3", which are ours (qwen3 follows Qwen3's Jinja template).
var families = map[string]*family{
	"plain": {name: "plain", format: formatPlain},

	"chatml":   {name: "chatml", format: formatChatML, stop: []string{"<|im_end|>"}},
	"qwen3":    {name: "qwen3", formatWith: formatQwen3, thinking: true, stop: []string{"<|im_end|>"}},
	"phi3":     {name: "phi3", format: formatPhi3, stop: []string{"<|end|>"}},
	"phi4":     {name: "phi4", format: formatPhi4, stop: []string{"<|im_end|>"}},
	"zephyr":   {name: "zephyr", format: formatZephyr, stop: []string{"<|endoftext|>"}},
	"llama3":   {name: "llama3", format: formatLlama3, stop: []string{"<|eot_id|>"}},
	"gemma":    {name: "gemma", format: formatGemma, stop: []string{"<end_of_turn>"}},
	"monarch":  {name: "monarch", format: formatMonarch, stop: []string{"</s>"}},
	"orion":    {name: "orion", format: formatOrion, stop: []string{"</s>"}},
	"openchat": {name: "openchat", format: formatOpenChat, stop: []string{"<|end_of_turn|>"}},

	"llama2":           {name: "llama2", format: llama2Format(false, false, false), stop: []string{"</s>"}},
	"llama2-sys":       {name: "llama2-sys", format: llama2Format(true, false, false), stop: []string{"</s>"}},
	"llama2-sys-bos":   {name: "llama2-sys-bos", format: llama2Format(true, true, false), stop: []string{"</s>"}},
	"llama2-sys-strip": {name: "llama2-sys-strip", format: llama2Format(true, false, true), stop: []string{"</s>"}},

	"mistral-v1":        {name: "mistral-v1", format: mistralFormat(" ", " ", false), stop: []string{"</s>"}},
	"mistral-v3":        {name: "mistral-v3", format: mistralFormat("", " ", true), stop: []string{"</s>"}},
	"mistral-v3-tekken": {name: "mistral-v3-tekken", format: mistralFormat("", "", false), stop: []string{"</s>"}},
	"mistral-v7":        {name: "mistral-v7", format: formatMistralV7, stop: []string{"</s>"}},

	"vicuna":      {name: "vicuna", format: vicunaFormat(false), stop: []string{"</s>"}},
	"vicuna-orca": {name: "vicuna-orca", format: vicunaFormat(true), stop: []string{"</s>"}},
	"deepseek":    {name: "deepseek", format: formatDeepSeek, stop: []string{"<|EOT|>"}},
	"deepseek2":   {name: "deepseek2", format: formatDeepSeek2, stop: []string{deepSeekEOS}},
	"command-r":   {name: "command-r", format: formatCommandR, stop: []string{"<|END_OF_TURN_TOKEN|>"}},
	"chatglm3":    {name: "chatglm3", format: formatChatGLM3, stop: []string{"<|user|>", "<|observation|>"}},
	"chatglm4":    {name: "chatglm4", format: formatChatGLM4, stop: []string{"<|user|>", "<|observation|>"}},
	"glmedge":     {name: "glmedge", format: formatGLMEdge, stop: []string{"<|user|>"}},
	"minicpm":     {name: "minicpm", format: formatMiniCPM, stop: []string{miniCPMUser}},
	"granite": {name: "granite", format: formatGranite, stop: []string{"<|end_of_text|>"},
		extraRoles: []string{"assistant_tool_call", "tool_response"}},
	"gigachat": {name: "gigachat", format: formatGigaChat, stop: []string{"<|message_sep|>"}},
	"megrez":   {name: "megrez", format: formatMegrez, stop: []string{"<|turn_end|>"}},
	// YandexGPT's vocabulary defines "\n\n" as its end-of-turn token.
	"yandex":   {name: "yandex", format: formatYandex, stop: []string{"\n\n"}},
	"bailing":  {name: "bailing", format: formatBailing, stop: []string{"<role>"}},
	"seed_oss": {name: "seed_oss", format: formatSeedOSS, stop: []string{"<seed:eos>"}},

	// The 2026 families (families_2026.go).
	"qwen35": {name: "qwen35", formatWith: formatQwen35, thinking: true, stop: []string{"<|im_end|>"}},
	// gpt-oss ends a reply with <|return|> (an answer), <|call|> (a tool
	// call) or <|endoftext|>, llama.cpp's end-of-generation tokens for the
	// harmony vocabulary; <|end|>, which closes the reasoning, is not one.
	"gpt-oss": {name: "gpt-oss", formatWith: formatHarmony, stop: []string{"<|return|>", "<|call|>", "<|endoftext|>"},
		extraRoles: []string{"developer"}},
	// Gemma 4 ends a reply that calls a tool with <|tool_response>, an
	// end of generation in llama.cpp.
	"gemma4": {name: "gemma4", formatWith: formatGemma4, thinking: true, stop: []string{"<turn|>", "<|tool_response>"},
		extraRoles: []string{"developer"}},
	"lfm2": {name: "lfm2", format: formatLFM2, stop: []string{"<|im_end|>"}},
	"granite-4.0": {name: "granite-4.0", format: formatGranite4, stop: []string{"<|end_of_text|>"},
		toolMessages: granite4Messages},
}

const (
	// deepSeekEOS is DeepSeek's end-of-sentence token; the bars are U+FF5C
	// (fullwidth vertical line) and the spaces U+2581 (lower one eighth block).
	deepSeekEOS = "<\uff5cend\u2581of\u2581sentence\uff5c>"
	// miniCPMUser opens a user turn in MiniCPM ("<用户>", "user" in Chinese).
	miniCPMUser = "<\u7528\u6237>"
)

// trim removes ASCII whitespace (C's isspace in the "C" locale: space, \t,
// \n, \v, \f, \r) from both ends, as llama.cpp's trim does. strings.TrimSpace
// would also strip Unicode spaces and so differ from llama.cpp's output.
func trim(s string) string {
	start, end := 0, len(s)
	for start < end && isSpace(s[start]) {
		start++
	}
	for end > start && isSpace(s[end-1]) {
		end--
	}
	return s[start:end]
}

func isSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// asciiUpper upper-cases ASCII letters only, like C's toupper in the "C"
// locale.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func formatPlain(b *strings.Builder, msgs []Message, _ bool) {
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(m.Content)
	}
}

func formatChatML(b *strings.Builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		b.WriteString("<|im_start|>" + m.Role + "\n")
		b.WriteString(m.Content)
		b.WriteString("<|im_end|>\n")
	}
	if addAssistant {
		b.WriteString("<|im_start|>assistant\n")
	}
}

// roleBlocks writes open+role+mid+content+end for every message, then
// genPrompt when addAssistant: the shape shared by phi3, zephyr, phi4,
// megrez and others.
func roleBlocks(b *strings.Builder, msgs []Message, addAssistant bool, open, mid, end, genPrompt string) {
	for _, m := range msgs {
		b.WriteString(open + m.Role + mid)
		b.WriteString(m.Content)
		b.WriteString(end)
	}
	if addAssistant {
		b.WriteString(genPrompt)
	}
}

func formatPhi3(b *strings.Builder, msgs []Message, addAssistant bool) {
	roleBlocks(b, msgs, addAssistant, "<|", "|>\n", "<|end|>\n", "<|assistant|>\n")
}

func formatZephyr(b *strings.Builder, msgs []Message, addAssistant bool) {
	roleBlocks(b, msgs, addAssistant, "<|", "|>\n", "<|endoftext|>\n", "<|assistant|>\n")
}

func formatPhi4(b *strings.Builder, msgs []Message, addAssistant bool) {
	roleBlocks(b, msgs, addAssistant, "<|im_start|>", "<|im_sep|>", "<|im_end|>", "<|im_start|>assistant<|im_sep|>")
}

func formatMegrez(b *strings.Builder, msgs []Message, addAssistant bool) {
	roleBlocks(b, msgs, addAssistant, "<|role_start|>", "<|role_end|>", "<|turn_end|>", "<|role_start|>assistant<|role_end|>")
}

func formatLlama3(b *strings.Builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		b.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n")
		b.WriteString(trim(m.Content))
		b.WriteString("<|eot_id|>")
	}
	if addAssistant {
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
}

// llama2Format returns the llama-2 [INST] format. sys: the template has a
// <<SYS>> block (otherwise a system message is written bare, followed by
// "\n", inside the first [INST]); bosInside: later turns start with "<s>";
// strip: every message is trimmed.
func llama2Format(sys, bosInside, strip bool) func(*strings.Builder, []Message, bool) {
	return func(b *strings.Builder, msgs []Message, _ bool) {
		// The prompt opens inside the first turn; the leading BOS is the
		// tokenizer's job.
		insideTurn := true
		b.WriteString("[INST] ")
		for _, m := range msgs {
			content := m.Content
			if strip {
				content = trim(content)
			}
			if !insideTurn {
				insideTurn = true
				if bosInside {
					b.WriteString("<s>[INST] ")
				} else {
					b.WriteString("[INST] ")
				}
			}
			switch m.Role {
			case "system":
				if sys {
					b.WriteString("<<SYS>>\n" + content + "\n<</SYS>>\n\n")
				} else {
					b.WriteString(content + "\n")
				}
			case "user":
				b.WriteString(content + " [/INST]")
			default:
				b.WriteString(content + "</s>")
				insideTurn = false
			}
		}
	}
}

// mistralFormat returns Mistral's official v1 / v3 / v3-tekken format, which
// differ only in spacing around [INST] and in trimming assistant replies (v3).
// A system message goes inside the [INST] of the turn it precedes.
func mistralFormat(leading, trailing string, trimAssistant bool) func(*strings.Builder, []Message, bool) {
	return func(b *strings.Builder, msgs []Message, _ bool) {
		insideTurn := false
		for _, m := range msgs {
			if !insideTurn {
				b.WriteString(leading + "[INST]" + trailing)
				insideTurn = true
			}
			switch m.Role {
			case "system":
				b.WriteString(m.Content + "\n\n")
			case "user":
				b.WriteString(m.Content + leading + "[/INST]")
			default:
				content := m.Content
				if trimAssistant {
					content = trim(content)
				}
				b.WriteString(trailing + content + "</s>")
				insideTurn = false
			}
		}
	}
}

func formatMistralV7(b *strings.Builder, msgs []Message, _ bool) {
	for _, m := range msgs {
		switch m.Role {
		case "system":
			b.WriteString("[SYSTEM_PROMPT] " + m.Content + "[/SYSTEM_PROMPT]")
		case "user":
			b.WriteString("[INST] " + m.Content + "[/INST]")
		default:
			b.WriteString(" " + m.Content + "</s>")
		}
	}
}

// formatGemma has no system turn: system text (trimmed, concatenated) is
// held back and written at the top of the next user turn.
func formatGemma(b *strings.Builder, msgs []Message, addAssistant bool) {
	system := ""
	for _, m := range msgs {
		if m.Role == "system" {
			system += trim(m.Content)
			continue
		}
		role := m.Role
		if role == "assistant" {
			role = "model"
		}
		b.WriteString("<start_of_turn>" + role + "\n")
		if system != "" && role != "model" {
			b.WriteString(system + "\n\n")
			system = ""
		}
		b.WriteString(trim(m.Content) + "<end_of_turn>\n")
	}
	if addAssistant {
		b.WriteString("<start_of_turn>model\n")
	}
}

// formatMonarch writes "<s>" before every message but the first (the first
// BOS is the tokenizer's).
func formatMonarch(b *strings.Builder, msgs []Message, addAssistant bool) {
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("<s>")
		}
		b.WriteString(m.Role + "\n" + m.Content + "</s>\n")
	}
	if addAssistant {
		b.WriteString("<s>assistant\n")
	}
}

// formatOrion merges system text into the next user turn. Every user turn
// already ends with the assistant opening, so addAssistant changes nothing.
func formatOrion(b *strings.Builder, msgs []Message, _ bool) {
	system := ""
	for _, m := range msgs {
		switch m.Role {
		case "system":
			system += m.Content
		case "user":
			b.WriteString("Human: ")
			if system != "" {
				b.WriteString(system + "\n\n")
				system = ""
			}
			b.WriteString(m.Content + "\n\nAssistant: </s>")
		default:
			b.WriteString(m.Content + "</s>")
		}
	}
}

// formatOpenChat follows the authors' suggested prompt, not the template that
// ships with the model (llama.cpp does the same): a system message is bare.
func formatOpenChat(b *strings.Builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		if m.Role == "system" {
			b.WriteString(m.Content + "<|end_of_turn|>")
			continue
		}
		// Roles are validated non-empty ASCII, so upper-casing the first byte
		// gives "User" / "Assistant" as C's toupper(role[0]) does.
		role := asciiUpper(m.Role[:1]) + m.Role[1:]
		b.WriteString("GPT4 Correct " + role + ": " + m.Content + "<|end_of_turn|>")
	}
	if addAssistant {
		b.WriteString("GPT4 Correct Assistant:")
	}
}
