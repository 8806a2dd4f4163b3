package chat

import (
	"hash/fnv"
	"strings"
)

// llama3ToolsIntro is what Llama 3.1's template writes before the tools when
// they go in the system message (llama.cpp sets tools_in_user_message to
// false).
const llama3ToolsIntro = "You have access to the following functions. To call a function, please respond with JSON for a function call." +
	`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.` +
	"Do not use variables.\n\n"

// formatLlama3Tools writes a conversation as Llama 3.1/3.2/3.3's template
// does with llama.cpp's inputs (tools_in_user_message false, date_string):
// with tools, a system block "Environment: ipython", the knowledge and
// today's dates, the tools (tojson, indent 4) and the system message
// (trimmed); a call as the assistant turn {"name": ..., "parameters": ...};
// a result as an ipython turn holding its content as a JSON string (the
// template's tojson of a string, which Jinja finds iterable). The template
// takes one call a turn: several calls are written as consecutive assistant
// turns. Other messages are llama3's, which the template matches.
func formatLlama3Tools(b *strings.Builder, msgs []Message, tools []Tool, addAssistant bool, date string) {
	if len(tools) > 0 {
		if date == "" {
			date = "26 Jul 2024"
		}
		system := ""
		if len(msgs) > 0 && msgs[0].Role == "system" {
			system = trim(msgs[0].Content)
			msgs = msgs[1:]
		}
		b.WriteString("<|start_header_id|>system<|end_header_id|>\n\n" +
			"Environment: ipython\nCutting Knowledge Date: December 2023\nToday Date: " + date + "\n\n" + llama3ToolsIntro)
		for _, tool := range tools {
			b.WriteString(tool.openAITool().format(indentedJSON(4)) + "\n\n")
		}
		b.WriteString(system + "<|eot_id|>")
	}
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			for _, c := range m.ToolCalls {
				args, _ := c.arguments()
				out = append(out, Message{Role: "assistant",
					Content: `{"name": "` + c.Name + `", "parameters": ` + args.format(pyJSON) + "}"})
			}
		case m.Role == "tool":
			out = append(out, Message{Role: "ipython", Content: quoteJSON(m.Content)})
		default:
			out = append(out, m)
		}
	}
	formatLlama3(b, out, addAssistant)
}

// formatMistralTools writes a conversation as Mistral Nemo's template does
// (llama.cpp's reference for the [TOOL_CALLS] format): a system message goes
// into the last user turn, and only when that turn ends the conversation; the
// tools, [AVAILABLE_TOOLS][...][/AVAILABLE_TOOLS], go just before the last
// user turn; calls are [TOOL_CALLS][{"name", "arguments", "id"}, ...]</s>
// (the assistant's content dropped, as the template drops it); a result is
// [TOOL_RESULTS]{"content": CONTENT, "call_id": ID}[/TOOL_RESULTS], the
// content printed as it is. Ids are Mistral's nine letters and digits
// (mistralID). mistral-v3 writes "[INST] " and trims replies as in its
// plain format, mistral-v7 writes a system message as [SYSTEM_PROMPT] where
// it stands; the rest is Nemo's (mistral-v3-tekken).
func formatMistralTools(b *strings.Builder, msgs []Message, tools []Tool, family string) {
	inst, trimReply, v7 := "[INST]", false, family == "mistral-v7"
	if family == "mistral-v3" {
		inst, trimReply = "[INST] ", true
	}
	system, hasSystem := "", false
	if !v7 && len(msgs) > 0 && msgs[0].Role == "system" {
		system, hasSystem = msgs[0].Content, true
		msgs = msgs[1:]
	}
	lastUser := -1
	for i, m := range msgs {
		if m.Role == "user" {
			lastUser = i
		}
	}
	for i, m := range msgs {
		switch {
		case m.Role == "user":
			if len(tools) > 0 && i == lastUser {
				writeMistralTools(b, tools)
			}
			b.WriteString(inst)
			if hasSystem && i == len(msgs)-1 {
				b.WriteString(system + "\n\n")
			}
			b.WriteString(m.Content + "[/INST]")
		case len(m.ToolCalls) > 0:
			b.WriteString("[TOOL_CALLS][")
			for j, c := range m.ToolCalls {
				if j > 0 {
					b.WriteString(", ")
				}
				args, _ := c.arguments()
				b.WriteString(`{"name": ` + quoteJSON(c.Name) + `, "arguments": ` + args.format(pyJSON) +
					`, "id": "` + mistralID(c.ID) + `"}`)
			}
			b.WriteString("]</s>")
		case m.Role == "tool":
			b.WriteString(`[TOOL_RESULTS]{"content": ` + m.Content + `, "call_id": "` + mistralID(m.ToolCallID) + `"}[/TOOL_RESULTS]`)
		case m.Role == "system":
			if v7 {
				b.WriteString("[SYSTEM_PROMPT] " + m.Content + "[/SYSTEM_PROMPT]")
			}
			// Nemo's template has no place for a later system message.
		default:
			if trimReply {
				b.WriteString(" " + trim(m.Content) + "</s>")
			} else {
				b.WriteString(m.Content + "</s>")
			}
		}
	}
}

// writeMistralTools writes the [AVAILABLE_TOOLS] block as Nemo's template
// does: each function's string fields unescaped between quotes, the others
// (parameters) as tojson.
func writeMistralTools(b *strings.Builder, tools []Tool) {
	b.WriteString("[AVAILABLE_TOOLS][")
	for i, tool := range tools {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`{"type": "function", "function": {`)
		fn, _ := tool.openAITool().get("function")
		for j, key := range fn.keys {
			if j > 0 {
				b.WriteString(", ")
			}
			if v := fn.items[j]; v.kind == '"' {
				b.WriteString(`"` + key + `": "` + v.text + `"`)
			} else {
				b.WriteString(`"` + key + `": ` + v.format(pyJSON))
			}
		}
		b.WriteString("}}")
	}
	b.WriteString("][/AVAILABLE_TOOLS]")
}

// mistralID returns id if it is what Mistral's template demands, nine ASCII
// letters and digits, and otherwise nine such characters made from a hash
// of id, so that a call and the result that answers it, written with an
// OpenAI-style id ("call_..."), still carry the same id.
func mistralID(id string) string {
	if len(id) == 9 && isAlnum(id) {
		return id
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return alnumID(h.Sum64(), 9)
}

func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
