package chat

import "strings"

// The chat formats of the 2026 families, each written as its model's Jinja
// template renders it (templates/*.jinja, from llama.cpp's
// models/templates/), which is what llama.cpp's server and node-llama-cpp
// render for them: Qwen3.5 (qwen35, qwen35moe), gpt-oss's harmony format,
// Gemma 4, LFM2.5 and Granite 4.0. testdata/families_reference.json holds
// the templates' own renderings that the tests compare with. Each takes
// tools in its own format: Granite 4.0's calls are Hermes's
// (granite4Messages), Qwen3.5's XML (toolxml.go), gpt-oss's harmony
// messages (toolharmony.go), LFM2.5's Python (toollfm2.go) and Gemma 4's
// its own call syntax (toolgemma4.go).

// isQwen35 recognises Qwen3.5's template: Qwen3's (isQwen3) whose
// generation prompt leaves a think block open when thinking is on.
func isQwen35(has func(string) bool) bool {
	return isQwen3(has) && has(`{{- '<think>\n' }}`)
}

// qwen35Open is what Qwen3.5's generation prompt ends with when thinking
// is on: the reply starts inside the reasoning (see Template.ReplyPrefix).
const qwen35Open = "<think>\n"

func isToolResponse(s string) bool {
	return strings.HasPrefix(s, "<tool_response>") && strings.HasSuffix(s, "</tool_response>")
}

// jinjaTrim is Jinja's trim filter: Unicode white space at both ends.
func jinjaTrim(s string) string { return strings.TrimSpace(s) }

// formatQwen35 differs from Qwen3's format (formatQwen3) in that every
// message is trimmed, every assistant turn after the last user query
// writes its think block (empty if it has no reasoning), tool responses are
// wrapped as the template does, and the generation prompt opens a think
// block ("<think>\n") when thinking is on, an empty one when it is off.
// Where the template refuses a conversation (one without a user query, a
// system message after the first) the format writes it all the same: the
// last message counts as the last query, as the template's own default
// has it, and a later system message is a system turn.
func formatQwen35(b *strings.Builder, msgs []Message, addAssistant bool, opts Options) {
	lastQuery := len(msgs) - 1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && !isToolResponse(jinjaTrim(msgs[i].Content)) {
			lastQuery = i
			break
		}
	}
	for i, m := range msgs {
		content := jinjaTrim(m.Content)
		switch m.Role {
		case "system":
			b.WriteString("<|im_start|>system\n" + content + "<|im_end|>\n")
		case "user":
			b.WriteString("<|im_start|>user\n" + content + "<|im_end|>\n")
		case "assistant":
			reasoning := ""
			if strings.Contains(content, thinkClose) {
				parts := strings.Split(content, thinkClose)
				before := strings.Split(strings.TrimRight(parts[0], "\n"), thinkOpen)
				reasoning = jinjaTrim(strings.TrimLeft(before[len(before)-1], "\n"))
				content = strings.TrimLeft(parts[len(parts)-1], "\n")
			}
			b.WriteString("<|im_start|>assistant\n")
			if i > lastQuery {
				b.WriteString("<think>\n" + reasoning + "\n</think>\n\n")
			}
			b.WriteString(content)
			writeQwenXMLCalls(b, content, m.ToolCalls)
			b.WriteString("<|im_end|>\n")
		case "tool":
			if i > 0 && msgs[i-1].Role != "tool" {
				b.WriteString("<|im_start|>user")
			}
			b.WriteString("\n<tool_response>\n" + content + "\n</tool_response>")
			if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
				b.WriteString("<|im_end|>\n")
			}
		}
	}
	if addAssistant {
		b.WriteString("<|im_start|>assistant\n")
		if opts.DisableThinking {
			b.WriteString(qwen3EmptyThink)
		} else {
			b.WriteString(qwen35Open)
		}
	}
}

// ReplyPrefix is the text the generation prompt ends with inside the reply
// (Options as given to ApplyWith): the reply continues it, so a reader of
// the reply reads it first (ReasoningParser.Write, or SplitReasoning of
// the prefix and the reply). Qwen3.5's prompt, thinking on, ends inside a
// think block ("<think>\n"); every other template's, and Qwen3.5's with
// thinking off, ends before the reply ("").
func (t Template) ReplyPrefix(opts Options) string {
	if t.f != nil && t.f.name == "qwen35" && !opts.DisableThinking {
		return qwen35Open
	}
	return ""
}

// harmonySystem is the system message gpt-oss's template writes before the
// conversation, around the date (strftime_now("%Y-%m-%d")), less its
// <|end|> (tools add a line first).
const (
	harmonySystemStart = "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: "
	harmonySystemEnd   = "\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message."
)

// formatHarmony is gpt-oss's harmony format: the template's system message
// (with Options.Date, or today's date, as llama.cpp passes it), a first
// system or developer message as the developer's instructions, user turns,
// and assistant turns in the final channel (the reasoning of earlier turns
// is never rendered); a last assistant turn without the generation prompt
// ends with <|return|>. Later system or developer messages are dropped, as
// the template drops them. writeHarmony writes it, tools and all.
func formatHarmony(b *strings.Builder, msgs []Message, addAssistant bool, opts Options) {
	writeHarmony(b, msgs, nil, addAssistant, opts.Date)
}

// Gemma 4's turn and channel markers.
const (
	gemma4Think        = "<|think|>\n"
	gemma4ChannelOpen  = "<|channel>"
	gemma4ChannelClose = "<channel|>"
	gemma4EmptyThought = "<|channel>thought\n<channel|>"
)

// formatGemma4 is Gemma 4's format without tools (writeGemma4). Thinking
// is on unless Options.DisableThinking: llama.cpp passes enable_thinking
// true; off, the generation prompt closes an empty thought channel.
func formatGemma4(b *strings.Builder, msgs []Message, addAssistant bool, opts Options) {
	writeGemma4(b, msgs, nil, addAssistant, opts)
}

// gemma4StripThinking is the template's strip_thinking: the text less
// every "<|channel>...<channel|>" span, trimmed.
func gemma4StripThinking(text string) string {
	var out strings.Builder
	for _, part := range strings.Split(text, gemma4ChannelClose) {
		if i := strings.Index(part, gemma4ChannelOpen); i >= 0 {
			part = part[:i]
		}
		out.WriteString(part)
	}
	return jinjaTrim(out.String())
}

// isLFM25 recognises LFM2.5's template: ChatML with the keep_past_thinking
// switch (LFM2's first templates render plain ChatML and stay chatml).
func isLFM25(has func(string) bool) bool {
	return has("keep_past_thinking")
}

// formatLFM2 is LFM2.5's format: ChatML, a first system message kept apart,
// and the reasoning ("...</think>") dropped from every assistant turn but
// the last one, whose rest is trimmed.
func formatLFM2(b *strings.Builder, msgs []Message, addAssistant bool) {
	if len(msgs) > 0 && msgs[0].Role == "system" {
		if msgs[0].Content != "" {
			b.WriteString("<|im_start|>system\n" + msgs[0].Content + "<|im_end|>\n")
		}
		msgs = msgs[1:]
	}
	lastAssistant := -1
	for i, m := range msgs {
		if m.Role == "assistant" {
			lastAssistant = i
		}
	}
	for i, m := range msgs {
		content := m.Content
		if m.Role == "assistant" && i != lastAssistant && strings.Contains(content, thinkClose) {
			parts := strings.Split(content, thinkClose)
			content = jinjaTrim(parts[len(parts)-1])
		}
		b.WriteString("<|im_start|>" + m.Role + "\n" + content + "<|im_end|>\n")
	}
	if addAssistant {
		b.WriteString("<|im_start|>assistant\n")
	}
}

// granite4DefaultSystem is the system message Granite 4.0's template writes
// when the conversation has none.
const granite4DefaultSystem = "You are a helpful assistant. Please ensure responses are professional, accurate, and safe."

// Granite 4.0's tool system text, around the tools (one JSON line each).
const (
	granite4ToolsHead = "You are a helpful assistant with access to the following tools. You may call one or more tools to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
	granite4ToolsTail = "\n</tools>\n\nFor each tool call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
		"<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>. " +
		"If a tool does not exist in the provided list of tools, notify the user that you do not have the ability to fulfill the request."
)

// granite4Messages rewrites a conversation with tools as Granite 4.0's
// template prints it: the tools after the system message (in its place
// when there is none: no default message then), calls as Hermes writes
// them, and a run of tool results as one user turn of
// "\n<tool_response>\n...\n</tool_response>" blocks.
func granite4Messages(msgs []Message, tools []Tool) []Message {
	out := make([]Message, 0, len(msgs)+1)
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch {
		case m.Role == "tool":
			var b strings.Builder
			for ; i < len(msgs) && msgs[i].Role == "tool"; i++ {
				b.WriteString("\n<tool_response>\n" + msgs[i].Content + "\n</tool_response>")
			}
			i--
			out = append(out, Message{Role: "user", Content: b.String()})
		case len(m.ToolCalls) > 0:
			out = append(out, Message{Role: m.Role, Content: hermesCalls(m)})
		default:
			out = append(out, m)
		}
	}
	if len(tools) == 0 {
		return out
	}
	return withSystem(out, hermesToolList(granite4ToolsHead, tools, granite4ToolsTail))
}

// formatGranite4 is Granite 4.0's format: Granite's role blocks, with the
// template's default system message when the conversation starts without
// one (or an empty one).
func formatGranite4(b *strings.Builder, msgs []Message, addAssistant bool) {
	if len(msgs) == 0 || msgs[0].Role != "system" || msgs[0].Content == "" {
		b.WriteString("<|start_of_role|>system<|end_of_role|>" + granite4DefaultSystem + "<|end_of_text|>\n")
		if len(msgs) > 0 && msgs[0].Role == "system" {
			msgs = msgs[1:]
		}
	}
	for _, m := range msgs {
		if m.Role == "tool" {
			continue
		}
		b.WriteString("<|start_of_role|>" + m.Role + "<|end_of_role|>" + m.Content + "<|end_of_text|>\n")
	}
	if addAssistant {
		b.WriteString("<|start_of_role|>assistant<|end_of_role|>")
	}
}
