package chat

import "strings"

// This file holds the smaller llama.cpp families, each checked against
// llama.cpp's expected output for one reference conversation.

// vicunaFormat returns Vicuna's USER:/ASSISTANT: format; orca marks the
// system message with "SYSTEM: " instead of a blank line.
func vicunaFormat(orca bool) func(*strings.Builder, []Message, bool) {
	return func(b *strings.Builder, msgs []Message, addAssistant bool) {
		for _, m := range msgs {
			switch m.Role {
			case "system":
				if orca {
					b.WriteString("SYSTEM: " + m.Content + "\n")
				} else {
					b.WriteString(m.Content + "\n\n")
				}
			case "user":
				b.WriteString("USER: " + m.Content + "\n")
			case "assistant":
				b.WriteString("ASSISTANT: " + m.Content + "</s>\n")
			}
		}
		if addAssistant {
			b.WriteString("ASSISTANT:")
		}
	}
}

// formatDeepSeek is deepseek-coder's "### Instruction:" format; a system
// message is written bare, with no separator.
func formatDeepSeek(b *strings.Builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		switch m.Role {
		case "system":
			b.WriteString(m.Content)
		case "user":
			b.WriteString("### Instruction:\n" + m.Content + "\n")
		case "assistant":
			b.WriteString("### Response:\n" + m.Content + "\n<|EOT|>\n")
		}
	}
	if addAssistant {
		b.WriteString("### Response:\n")
	}
}

func formatDeepSeek2(b *strings.Builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		switch m.Role {
		case "system":
			b.WriteString(m.Content + "\n\n")
		case "user":
			b.WriteString("User: " + m.Content + "\n\n")
		case "assistant":
			b.WriteString("Assistant: " + m.Content + deepSeekEOS)
		}
	}
	if addAssistant {
		b.WriteString("Assistant:")
	}
}

func formatCommandR(b *strings.Builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		var token string
		switch m.Role {
		case "system":
			token = "<|SYSTEM_TOKEN|>"
		case "user":
			token = "<|USER_TOKEN|>"
		case "assistant":
			token = "<|CHATBOT_TOKEN|>"
		default:
			continue
		}
		b.WriteString("<|START_OF_TURN_TOKEN|>" + token + trim(m.Content) + "<|END_OF_TURN_TOKEN|>")
	}
	if addAssistant {
		b.WriteString("<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>")
	}
}

// formatChatGLM3 has no end-of-turn marker: the next role tag ends a turn.
func formatChatGLM3(b *strings.Builder, msgs []Message, addAssistant bool) {
	b.WriteString("[gMASK]sop")
	for _, m := range msgs {
		b.WriteString("<|" + m.Role + "|>\n " + m.Content)
	}
	if addAssistant {
		b.WriteString("<|assistant|>")
	}
}

func formatChatGLM4(b *strings.Builder, msgs []Message, addAssistant bool) {
	b.WriteString("[gMASK]<sop>")
	for _, m := range msgs {
		b.WriteString("<|" + m.Role + "|>\n" + m.Content)
	}
	if addAssistant {
		b.WriteString("<|assistant|>\n")
	}
}

func formatGLMEdge(b *strings.Builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		b.WriteString("<|" + m.Role + "|>\n" + m.Content)
	}
	if addAssistant {
		b.WriteString("<|assistant|>")
	}
}

// formatMiniCPM writes only user turns' markers; the assistant opening "<AI>"
// ends every user turn, so addAssistant changes nothing.
func formatMiniCPM(b *strings.Builder, msgs []Message, _ bool) {
	for _, m := range msgs {
		if m.Role == "user" {
			b.WriteString(miniCPMUser + trim(m.Content) + "<AI>")
		} else {
			b.WriteString(trim(m.Content))
		}
	}
}

func formatGranite(b *strings.Builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		b.WriteString("<|start_of_role|>" + m.Role + "<|end_of_role|>")
		if m.Role == "assistant_tool_call" {
			b.WriteString("<|tool_call|>")
		}
		b.WriteString(m.Content + "<|end_of_text|>\n")
	}
	if addAssistant {
		b.WriteString("<|start_of_role|>assistant<|end_of_role|>")
	}
}

// formatGigaChat takes a system message only as the first message; any other
// system message is dropped, as in llama.cpp.
func formatGigaChat(b *strings.Builder, msgs []Message, addAssistant bool) {
	b.WriteString("<s>")
	rest := msgs
	if len(msgs) > 0 && msgs[0].Role == "system" {
		b.WriteString(msgs[0].Content + "<|message_sep|>")
		rest = msgs[1:]
	}
	for _, m := range rest {
		switch m.Role {
		case "user":
			b.WriteString("user<|role_sep|>" + m.Content +
				"<|message_sep|>available functions<|role_sep|>[]<|message_sep|>")
		case "assistant":
			b.WriteString("assistant<|role_sep|>" + m.Content + "<|message_sep|>")
		}
	}
	if addAssistant {
		b.WriteString("assistant<|role_sep|>")
	}
}

// YandexGPT's role labels: " Пользователь:" (user) and " Ассистент:"
// (assistant).
const (
	yandexUser      = " \u041f\u043e\u043b\u044c\u0437\u043e\u0432\u0430\u0442\u0435\u043b\u044c:"
	yandexAssistant = " \u0410\u0441\u0441\u0438\u0441\u0442\u0435\u043d\u0442:"
)

// formatYandex has no system slot; llama.cpp drops system messages.
func formatYandex(b *strings.Builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		switch m.Role {
		case "user":
			b.WriteString(yandexUser + " " + m.Content + "\n\n")
		case "assistant":
			b.WriteString(yandexAssistant + " " + m.Content + "\n\n")
		}
	}
	if addAssistant {
		b.WriteString(yandexAssistant + "[SEP]")
	}
}

// formatBailing is Ling's <role>NAME</role> format; the user role is called
// HUMAN and every role name is upper-cased.
func formatBailing(b *strings.Builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		role := "HUMAN"
		if m.Role != "user" {
			role = asciiUpper(m.Role)
		}
		b.WriteString("<role>" + role + "</role>" + m.Content)
	}
	if addAssistant {
		b.WriteString("<role>ASSISTANT</role>")
	}
}

// formatSeedOSS trims assistant replies only.
func formatSeedOSS(b *strings.Builder, msgs []Message, addAssistant bool) {
	for _, m := range msgs {
		content := m.Content
		if m.Role == "assistant" {
			content = trim(content)
		}
		b.WriteString("<seed:bos>" + m.Role + "\n" + content + "<seed:eos>")
	}
	if addAssistant {
		b.WriteString("<seed:bos>assistant\n")
	}
}
