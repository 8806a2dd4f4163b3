package chat

import (
	"fmt"
	"strings"
)

// Prompting with tools. llama.cpp renders a conversation with tools through
// the model's Jinja template (common/chat.cpp, one handler per tool format);
// we have no Jinja, so each format here writes what its reference template
// writes for tools, tool calls and tool results, and leaves every other
// message to the family's format. The generic and Hermes formats only
// rewrite messages (a system message describing the tools, calls and results
// turned into text) and hand them to the family's format; Llama 3.x and
// Mistral write their own system block or tool block.

// applyTools renders a conversation that has tools, a tool_choice, tool
// calls or tool results.
func (t Template) applyTools(msgs []Message, addAssistant bool, opts Options) (string, error) {
	tools, err := activeTools(opts.Tools, opts.ToolChoice)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	switch t.ToolFormat() {
	case ToolFormatGeneric:
		t.f.render(&b, genericMessages(msgs, tools), addAssistant, opts)
	case ToolFormatHermes:
		rewrite := hermesMessages
		if t.f.toolMessages != nil {
			rewrite = t.f.toolMessages
		}
		t.f.render(&b, rewrite(msgs, tools), addAssistant, opts)
	case ToolFormatQwenXML:
		t.f.render(&b, qwenXMLMessages(msgs, tools), addAssistant, opts)
	case ToolFormatLFM2:
		t.f.render(&b, lfm2Messages(msgs, tools), addAssistant, opts)
	case ToolFormatHarmony:
		writeHarmony(&b, msgs, tools, addAssistant, opts.Date)
	case ToolFormatGemma4:
		writeGemma4(&b, msgs, tools, addAssistant, opts)
	case ToolFormatLlama3:
		formatLlama3Tools(&b, msgs, tools, addAssistant, opts.Date)
	case ToolFormatMistral:
		formatMistralTools(&b, msgs, tools, t.f.name)
	default:
		return "", fmt.Errorf("%w: %v", ErrUnknownToolFormat, t.ToolFormat())
	}
	return b.String(), nil
}

// withSystem returns msgs with text appended to the first message if it is
// a system message (after "\n\n"), or a system message holding text put
// first: minja's add_system, which llama.cpp's generic handler and its
// tool polyfill use. msgs is not modified.
func withSystem(msgs []Message, text string) []Message {
	if len(msgs) > 0 && msgs[0].Role == "system" {
		out := append([]Message(nil), msgs...)
		out[0] = Message{Role: "system", Content: msgs[0].Content + "\n\n" + text}
		return out
	}
	return append([]Message{{Role: "system", Content: text}}, msgs...)
}

// The generic format's system text: llama.cpp's generic handler adds the
// first sentence; minja's tool polyfill (for a template that does not
// describe tools) adds the list of tools and an example call, which minja
// makes by rendering a call to "tool_name" through the template: for a
// template that prints an assistant's content as it is, the JSON below.
const (
	genericRespond   = "Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to the user's request"
	genericToolsHead = "You can call any of the following tools to satisfy the user's requests: "
	genericExample   = "{\n  \"tool_calls\": [\n    {\n      \"name\": \"tool_name\",\n      \"arguments\": {\n        \"arg1\": \"some_value\"\n      },\n      \"id\": \"call_1___\"\n    }\n  ]\n}"
)

// genericMessages rewrites a conversation for the generic format, as
// llama.cpp's generic handler and minja's polyfills do: the tools and the
// reply's shape in the system message; an assistant's calls become its
// content, {"tool_calls": [{"name", "arguments", "id"}], "content"} printed
// with two-space indents; a tool result becomes a user message
// {"tool_response": {"tool", "content", "tool_call_id"}}.
func genericMessages(msgs []Message, tools []Tool) []Message {
	out := make([]Message, 0, len(msgs)+1)
	for _, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			calls := jsonNode{kind: '['}
			for _, c := range m.ToolCalls {
				args, _ := c.arguments()
				call := jsonObject([]string{"name", "arguments"}, jsonString(c.Name), args)
				if c.ID != "" {
					call.keys = append(call.keys, "id")
					call.items = append(call.items, jsonString(c.ID))
				}
				calls.items = append(calls.items, call)
			}
			obj := jsonObject([]string{"tool_calls"}, calls)
			if m.Content != "" {
				obj.keys = append(obj.keys, "content")
				obj.items = append(obj.items, jsonString(m.Content))
			}
			out = append(out, Message{Role: m.Role, Content: obj.format(indentedJSON(2))})
		case m.Role == "tool":
			resp := jsonObject(nil)
			if m.Name != "" {
				resp.keys = append(resp.keys, "tool")
				resp.items = append(resp.items, jsonString(m.Name))
			}
			resp.keys = append(resp.keys, "content", "tool_call_id")
			resp.items = append(resp.items, jsonString(m.Content), jsonString(m.ToolCallID))
			obj := jsonObject([]string{"tool_response"}, resp)
			out = append(out, Message{Role: "user", Content: obj.format(indentedJSON(2))})
		default:
			out = append(out, m)
		}
	}
	if len(tools) == 0 {
		return out
	}
	list := jsonNode{kind: '['}
	for _, tool := range tools {
		list.items = append(list.items, tool.openAITool())
	}
	out = withSystem(out, genericRespond)
	return withSystem(out, genericToolsHead+list.format(indentedJSON(2))+
		"\n\nExample tool call syntax:\n\n"+genericExample+"\n\n")
}

// Qwen 2.5's and Qwen3's tool system text (Hermes 2 Pro's template has a
// longer one of its own; the tool call syntax is the same).
const (
	hermesToolsHead = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
	hermesToolsTail = "\n</tools>\n\nFor each function call, return a json object with function name and arguments " +
		"within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
)

// hermesMessages rewrites a conversation as Qwen3's template (and Qwen
// 2.5's, given a system message) prints it: the tools, one JSON line each,
// at the end of the system message (which is created if there is none);
// each call of an assistant message as "<tool_call>\n{"name": ...,
// "arguments": ...}\n</tool_call>" after its content, on a new line; a run
// of tool results as one user message of <tool_response> blocks, which
// Qwen3's template also recognises as no user query.
func hermesMessages(msgs []Message, tools []Tool) []Message {
	out := make([]Message, 0, len(msgs)+1)
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch {
		case m.Role == "tool":
			var b strings.Builder
			for ; i < len(msgs) && msgs[i].Role == "tool"; i++ {
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString("<tool_response>\n" + msgs[i].Content + "\n</tool_response>")
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
	return withSystem(out, hermesToolList(hermesToolsHead, tools, hermesToolsTail))
}

// hermesToolList is head, the tools one JSON line each, and tail.
func hermesToolList(head string, tools []Tool, tail string) string {
	var b strings.Builder
	b.WriteString(head)
	for _, tool := range tools {
		b.WriteString("\n" + tool.openAITool().format(pyJSON))
	}
	b.WriteString(tail)
	return b.String()
}

// hermesCalls is an assistant message's content and its calls, each as
// "<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>" on a new line.
func hermesCalls(m Message) string {
	var b strings.Builder
	b.WriteString(m.Content)
	for j, c := range m.ToolCalls {
		if j > 0 || m.Content != "" {
			b.WriteByte('\n')
		}
		b.WriteString("<tool_call>\n{\"name\": \"" + c.Name + "\", \"arguments\": ")
		if args, ok := c.arguments(); ok {
			b.WriteString(args.format(pyJSON))
		} else {
			b.WriteString(c.Arguments) // Qwen3 prints string arguments as they are
		}
		b.WriteString("}\n</tool_call>")
	}
	return b.String()
}
