package chat

import "strings"

// Qwen3's hybrid-thinking template (Qwen3-0.6B ... 32B, Qwen3-30B-A3B) is
// ChatML plus three things its Jinja source does: the empty think block that
// enable_thinking=false writes after the assistant opening, the reasoning of
// earlier assistant turns dropped from the history, and a think block kept
// (or added empty) for an assistant turn after the last user query. formatQwen3
// renders it as the template does for system, user and assistant messages
// without tools; testdata/jinja_reference.json holds the template's own
// rendering, made with @huggingface/jinja, that the tests compare with.

// qwen3EmptyThink is what Qwen3's template writes after the assistant opening
// when enable_thinking is false.
const qwen3EmptyThink = "<think>\n\n</think>\n\n"

// isQwen3 recognises Qwen3's template: ChatML (llama.cpp has checked
// <|im_start|> already) whose source has the enable_thinking switch and
// writes the empty think block, two newlines after it, as a Jinja string
// literal. SmolLM3's template has the switch but writes one newline (and a
// different system block): it stays chatml, as in llama.cpp.
func isQwen3(has func(string) bool) bool {
	return has("enable_thinking") && has(`'<think>\n\n</think>\n\n'`)
}

func formatQwen3(b *strings.Builder, msgs []Message, addAssistant bool, opts Options) {
	// The last user query: the last user message that is not a tool response
	// (the whole conversation when there is none). Assistant turns after it
	// keep their reasoning; earlier ones lose it.
	lastQuery := len(msgs) - 1
	for i := len(msgs) - 1; i >= 0; i-- {
		c := msgs[i].Content
		if msgs[i].Role == "user" && !(strings.HasPrefix(c, "<tool_response>") && strings.HasSuffix(c, "</tool_response>")) {
			lastQuery = i
			break
		}
	}
	for i, m := range msgs {
		if m.Role != "assistant" {
			// system (first or not) and user turns are ChatML's.
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
			continue
		}
		content, reasoning := m.Content, ""
		if strings.Contains(content, "</think>") {
			// Python's split: the text after the last </think> is the
			// content, the text before the first, after its last <think>,
			// the reasoning; newlines next to the tags are dropped.
			parts := strings.Split(content, "</think>")
			content = strings.TrimLeft(parts[len(parts)-1], "\n")
			before := strings.Split(strings.TrimRight(parts[0], "\n"), "<think>")
			reasoning = strings.TrimLeft(before[len(before)-1], "\n")
		}
		b.WriteString("<|im_start|>assistant\n")
		if i > lastQuery && (i == len(msgs)-1 || reasoning != "") {
			b.WriteString("<think>\n" + strings.Trim(reasoning, "\n") + "\n</think>\n\n" + strings.TrimLeft(content, "\n"))
		} else {
			b.WriteString(content)
		}
		b.WriteString("<|im_end|>\n")
	}
	if addAssistant {
		b.WriteString("<|im_start|>assistant\n")
		if opts.DisableThinking {
			b.WriteString(qwen3EmptyThink)
		}
	}
}
