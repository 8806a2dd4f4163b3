package chat

import (
	"strings"
	"time"
)

// gpt-oss's harmony format with tools (ToolFormatHarmony), as its template
// writes it: the tools as a TypeScript namespace "functions" in the
// developer message, a call as a commentary message to
// functions.NAME whose text is the JSON arguments, ended by <|call|>, and
// a result as a message from functions.NAME to the assistant, its text
// the result as a JSON string.

// writeHarmony writes a conversation in the harmony format, with tools
// (none: the format without tools). Later system or developer messages are
// dropped, and tool results with no call before them, as the template
// drops or refuses them.
func writeHarmony(b *strings.Builder, msgs []Message, tools []Tool, addAssistant bool, date string) {
	if date == "" {
		date = time.Now().UTC().Format("2006-01-02")
	}
	b.WriteString(harmonySystemStart + date + harmonySystemEnd)
	if len(tools) > 0 {
		b.WriteString("\nCalls to these tools must go to the commentary channel: 'functions'.")
	}
	b.WriteString("<|end|>")
	rest := msgs
	developer := ""
	if len(msgs) > 0 && (msgs[0].Role == "system" || msgs[0].Role == "developer") {
		rest, developer = msgs[1:], msgs[0].Content
	}
	if developer != "" || len(tools) > 0 {
		b.WriteString("<|start|>developer<|message|>")
		if developer != "" {
			b.WriteString("# Instructions\n\n" + developer + "\n\n")
		}
		if len(tools) > 0 {
			b.WriteString("# Tools\n\n")
			writeHarmonyNamespace(b, tools)
		}
		b.WriteString("<|end|>")
	}
	lastCall := ""
	for i, m := range rest {
		switch m.Role {
		case "user":
			b.WriteString("<|start|>user<|message|>" + m.Content + "<|end|>")
		case "assistant":
			switch {
			case len(m.ToolCalls) > 0:
				if m.Content != "" && !finalFollows(rest[i+1:]) {
					b.WriteString("<|start|>assistant<|channel|>analysis<|message|>" + m.Content + "<|end|>")
				}
				c := m.ToolCalls[0] // one call a message
				args, _ := c.arguments()
				b.WriteString("<|start|>assistant to=functions." + c.Name + "<|channel|>commentary json<|message|>" +
					args.format(pyJSON) + "<|call|>")
				lastCall = c.Name
			case i == len(rest)-1 && !addAssistant:
				b.WriteString("<|start|>assistant<|channel|>final<|message|>" + m.Content + "<|return|>")
			default:
				b.WriteString("<|start|>assistant<|channel|>final<|message|>" + m.Content + "<|end|>")
				lastCall = ""
			}
		case "tool":
			if lastCall != "" {
				b.WriteString("<|start|>functions." + lastCall + " to=assistant<|channel|>commentary<|message|>" +
					quoteJSON(m.Content) + "<|end|>")
			}
		}
	}
	if addAssistant {
		b.WriteString(harmonyStart)
	}
}

// finalFollows reports whether an assistant message without calls comes
// among msgs: the template then drops an earlier call's analysis.
func finalFollows(msgs []Message) bool {
	for _, m := range msgs {
		if m.Role == "assistant" && len(m.ToolCalls) == 0 {
			return true
		}
	}
	return false
}

// writeHarmonyNamespace writes the template's render_tool_namespace for
// the functions namespace.
func writeHarmonyNamespace(b *strings.Builder, tools []Tool) {
	b.WriteString("## functions\n\nnamespace functions {\n\n")
	for _, tool := range tools {
		b.WriteString("// " + tool.Description + "\n")
		b.WriteString("type " + tool.Name + " = ")
		params, _ := parseJSON(string(tool.Parameters)) // checked by checkTool
		props, _ := params.get("properties")
		if len(props.keys) == 0 {
			b.WriteString("() => any;\n\n")
			continue
		}
		required, _ := params.get("required")
		b.WriteString("(_: {\n")
		for i, name := range props.keys {
			spec := props.items[i]
			if d, ok := spec.get("description"); ok && d.kind == '"' && d.text != "" {
				b.WriteString("// " + d.text + "\n")
			}
			b.WriteString(name)
			if !holdsString(required, name) {
				b.WriteString("?")
			}
			b.WriteString(": " + tsType(spec))
			if def, ok := spec.get("default"); ok {
				_, enum := spec.get("enum")
				_, oneOf := spec.get("oneOf")
				switch {
				case enum:
					b.WriteString(", // default: " + jinjaString(def))
				case oneOf:
					b.WriteString("// default: " + jinjaString(def))
				default:
					b.WriteString(", // default: " + def.format(pyJSON))
				}
			}
			b.WriteString(",\n")
		}
		b.WriteString("}) => any;\n\n")
	}
	b.WriteString("} // namespace functions")
}

// holdsString reports whether list is an array holding the string s.
func holdsString(list jsonNode, s string) bool {
	for _, item := range list.items {
		if list.kind == '[' && item.kind == '"' && item.text == s {
			return true
		}
	}
	return false
}

// jinjaString is a value as Jinja's string concatenation prints it: a
// string as it is, anything else as its JSON text.
func jinjaString(v jsonNode) string {
	if v.kind == '"' {
		return v.text
	}
	return v.format(pyJSON)
}

// tsType is the template's render_typescript_type: a JSON schema as a
// TypeScript type, with the template's own spacing around nested types.
func tsType(spec jsonNode) string {
	typ, _ := spec.get("type")
	nullable := func() string {
		if n, ok := spec.get("nullable"); ok && n.kind == 't' {
			return " | null"
		}
		return ""
	}
	oneOf, hasOneOf := spec.get("oneOf")
	switch {
	case typ.kind == '"' && typ.text == "array":
		items, ok := spec.get("items")
		if !ok || items.kind != '{' || len(items.keys) == 0 {
			return "any[]" + nullable()
		}
		it, _ := items.get("type")
		switch {
		case it.kind == '"' && it.text == "string":
			return "string[]" + nullable()
		case it.kind == '"' && (it.text == "number" || it.text == "integer"):
			return "number[]" + nullable()
		case it.kind == '"' && it.text == "boolean":
			return "boolean[]" + nullable()
		}
		inner := tsType(items)
		if inner == "object | object" || len([]rune(inner)) > 50 {
			return "any[]" + nullable()
		}
		return inner + "[]" + nullable()
	case typ.kind == '[' && len(typ.items) > 0:
		names := make([]string, len(typ.items))
		for i, t := range typ.items {
			names[i] = jinjaString(t)
		}
		return strings.Join(names, " | ")
	case hasOneOf && oneOf.kind == '[' && len(oneOf.items) > 0:
		objects := false
		for _, v := range oneOf.items {
			if t, _ := v.get("type"); t.kind == '"' && t.text == "object" {
				objects = true
			}
		}
		if objects && len(oneOf.items) > 1 {
			return "any"
		}
		var b strings.Builder
		for i, v := range oneOf.items {
			b.WriteString(tsType(v))
			if d, ok := v.get("description"); ok && d.kind == '"' && d.text != "" {
				b.WriteString("// " + d.text)
			}
			if def, ok := v.get("default"); ok {
				b.WriteString(strings.Repeat(" ", 20) + "// default: " + def.format(pyJSON))
			}
			if i < len(oneOf.items)-1 {
				b.WriteString(" | \n")
			}
		}
		return b.String()
	case typ.kind == '"' && typ.text == "string":
		if enum, ok := spec.get("enum"); ok && enum.kind == '[' && len(enum.items) > 0 {
			names := make([]string, len(enum.items))
			for i, e := range enum.items {
				names[i] = jinjaString(e)
			}
			return `"` + strings.Join(names, `" | "`) + `"`
		}
		return "string" + nullable()
	case typ.kind == '"' && (typ.text == "number" || typ.text == "integer"):
		return "number"
	case typ.kind == '"' && typ.text == "boolean":
		return "boolean"
	case typ.kind == '"' && typ.text == "object":
		props, _ := spec.get("properties")
		if len(props.keys) == 0 {
			return "object"
		}
		required, _ := spec.get("required")
		var b strings.Builder
		b.WriteString("{\n")
		for i, name := range props.keys {
			b.WriteString(name)
			if !holdsString(required, name) {
				b.WriteString("?")
			}
			b.WriteString(": \n" + strings.Repeat(" ", 16) + tsType(props.items[i]))
			if i < len(props.keys)-1 {
				b.WriteString(", ")
			}
		}
		b.WriteString("}")
		return b.String()
	}
	return "any"
}

// Harmony's call markers.
const (
	harmonyRecipient = " to=functions."
	harmonyCall      = "<|call|>"
)

// parseHarmony finds the calls in a harmony reply's content (what
// ReasoningParser leaves of it): a message to functions.NAME, the
// recipient in the channel's header ("<|channel|>commentary
// to=functions.NAME") or in the role's ("to=functions.NAME<|channel|>
// commentary"), optionally opened by "<|start|>assistant", with an
// optional content type (" <|constrain|>json", " json") before
// "<|message|>", its text a JSON object, optionally followed by <|call|>,
// as llama.cpp's gpt-oss parser reads them.
func parseHarmony(text string) []callSpan {
	var spans []callSpan
	for from := 0; ; {
		i := strings.Index(text[from:], harmonyRecipient)
		if i < 0 {
			return spans
		}
		at := from + i
		from = at + len(harmonyRecipient)
		start := at
		for _, ch := range []string{harmonyChannel + "commentary", harmonyChannel + "analysis"} {
			if strings.HasSuffix(text[:start], ch) {
				start -= len(ch)
				break
			}
		}
		start -= len(harmonyStart) * boolInt(strings.HasSuffix(text[:start], harmonyStart))
		if len(spans) > 0 && start < spans[len(spans)-1].end {
			continue
		}
		call, end, ok := readHarmonyCall(text[from:], start < at)
		if !ok {
			continue
		}
		spans = append(spans, callSpan{start: start, end: from + end, calls: []ToolCall{call}})
		from += end
	}
}

// readHarmonyCall reads the rest of a call after " to=functions.": the
// name, the role header's channel unless the channel came first
// (channelSeen), the content type, "<|message|>", the JSON object and an
// optional <|call|>; it returns the call and the length read.
func readHarmonyCall(rest string, channelSeen bool) (ToolCall, int, bool) {
	n := 0
	for n < len(rest) && (rest[n] == '_' || rest[n] == '-' || rest[n] == '.' || isAlnumByte(rest[n])) {
		n++
	}
	name := rest[:n]
	if name == "" {
		return ToolCall{}, 0, false
	}
	at := n
	if !channelSeen {
		ok := false
		for _, ch := range []string{harmonyChannel + "commentary", harmonyChannel + "analysis"} {
			if strings.HasPrefix(rest[at:], ch) {
				at += len(ch)
				ok = true
				break
			}
		}
		if !ok {
			return ToolCall{}, 0, false
		}
	}
	// The content type: white space, an optional <|constrain|>, a word.
	if j := skipSpace(rest, at); j > at || strings.HasPrefix(rest[at:], "<|constrain|>") {
		j = skipSpace(rest, at)
		j += len("<|constrain|>") * boolInt(strings.HasPrefix(rest[j:], "<|constrain|>"))
		k := j
		for k < len(rest) && (rest[k] == '_' || rest[k] == '-' || isAlnumByte(rest[k])) {
			k++
		}
		if k == j {
			return ToolCall{}, 0, false
		}
		at = k
	}
	if !strings.HasPrefix(rest[at:], harmonyMessage) {
		return ToolCall{}, 0, false
	}
	at += len(harmonyMessage)
	args, end, err := parseJSONPrefix(rest[at:])
	if err != nil || args.kind != '{' {
		return ToolCall{}, 0, false
	}
	at += end
	at += len(harmonyCall) * boolInt(strings.HasPrefix(rest[at:], harmonyCall))
	return ToolCall{Name: name, Arguments: args.format(compactJSON)}, at, true
}

// boolInt is 1 for true, 0 for false.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isAlnumByte reports whether c is an ASCII letter or digit.
func isAlnumByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// harmonyCallGrammar is the GBNF body of a forced call of the tool named
// name, args its arguments' rule: the form gpt-oss writes,
// "<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>"
// and the JSON arguments (the <|call|> after it ends the generation).
func harmonyCallGrammar(name, args string) string {
	return gbnfLiteral(harmonyChannel+"commentary"+harmonyRecipient+name+" <|constrain|>json"+harmonyMessage) + " " + args
}
