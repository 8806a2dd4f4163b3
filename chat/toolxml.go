package chat

import (
	"fmt"
	"strings"
)

// Qwen3.5's tool format (ToolFormatQwenXML), as its template writes it and
// llama.cpp's Qwen3-Coder handler (common/chat.cpp, chosen for a template
// with <tool_call>, <function= and <parameter=) reads it: a call is
//
//	<tool_call>
//	<function=NAME>
//	<parameter=P>
//	VALUE
//	</parameter>
//	</function>
//	</tool_call>
//
// with one <parameter=...> block per argument: a string as it is, other
// values as JSON. The tools are listed, one JSON line each, in a system
// message of their own text.

// The XML call's tags.
const (
	xmlFunctionOpen   = "<function="
	xmlFunctionClose  = "</function>"
	xmlParameterOpen  = "<parameter="
	xmlParameterClose = "</parameter>"
)

// qwenXMLToolsHead and qwenXMLToolsTail are Qwen3.5's system text around
// the tools.
const (
	qwenXMLToolsHead = "# Tools\n\nYou have access to the following functions:\n\n<tools>"
	qwenXMLToolsTail = "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n" +
		"<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n" +
		"<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n</parameter>\n" +
		"</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n" +
		"- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n" +
		"- Required parameters MUST be specified\n" +
		"- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n" +
		"- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n" +
		"</IMPORTANT>"
)

// qwenXMLMessages rewrites a conversation with tools for Qwen3.5's format:
// the tools' system text first, the system message's (trimmed) after it.
// Calls and tool results are formatQwen35's to write.
func qwenXMLMessages(msgs []Message, tools []Tool) []Message {
	if len(tools) == 0 {
		return msgs
	}
	system := hermesToolList(qwenXMLToolsHead, tools, qwenXMLToolsTail)
	if len(msgs) > 0 && msgs[0].Role == "system" {
		if s := jinjaTrim(msgs[0].Content); s != "" {
			system += "\n\n" + s
		}
		msgs = msgs[1:]
	}
	return append([]Message{{Role: "system", Content: system}}, msgs...)
}

// writeQwenXMLCalls writes an assistant message's calls after its content
// (reasoning removed), as Qwen3.5's template does: a blank line before the
// first when there is content, a newline between calls.
func writeQwenXMLCalls(b *strings.Builder, content string, calls []ToolCall) {
	for i, c := range calls {
		switch {
		case i > 0:
			b.WriteString("\n")
		case jinjaTrim(content) != "":
			b.WriteString("\n\n")
		}
		b.WriteString("<tool_call>\n" + xmlFunctionOpen + c.Name + ">\n")
		if args, ok := c.arguments(); ok && args.kind == '{' {
			for j, key := range args.keys {
				b.WriteString(xmlParameterOpen + key + ">\n" + xmlValue(args.items[j]) + "\n" + xmlParameterClose + "\n")
			}
		}
		b.WriteString(xmlFunctionClose + "\n</tool_call>")
	}
}

// xmlValue is an argument as the template prints it: a string as it is,
// an object or array as JSON (tojson), any other value through Jinja's
// string filter, which in Python's Jinja and llama.cpp's prints True,
// False and None.
func xmlValue(v jsonNode) string {
	switch v.kind {
	case '"':
		return v.text
	case '{', '[':
		return v.format(pyJSON)
	case 't':
		return "True"
	case 'f':
		return "False"
	case 'n':
		return "None"
	}
	return v.text
}

// parseQwenXMLCall returns the reader of one XML call (the text after
// <tool_call>), whose values are typed by tools' parameter schemas: a
// parameter whose schema is a string's keeps its text; any other value is
// JSON when it parses as JSON, else the text (as llama.cpp, which falls
// back to a string). The closing </tool_call> may be missing at the very
// end.
func parseQwenXMLCall(tools []Tool) func(rest string) ([]ToolCall, int, bool) {
	return func(rest string) ([]ToolCall, int, bool) {
		at := skipSpace(rest, 0)
		if !strings.HasPrefix(rest[at:], xmlFunctionOpen) {
			return nil, 0, false
		}
		at += len(xmlFunctionOpen)
		end := strings.IndexByte(rest[at:], '>')
		if end <= 0 {
			return nil, 0, false
		}
		name := rest[at : at+end]
		if checkTool(Tool{Name: name}) != nil {
			return nil, 0, false
		}
		at += end + 1
		strs := stringParameters(tools, name)
		args := jsonObject(nil)
		for {
			at = skipSpace(rest, at)
			if strings.HasPrefix(rest[at:], xmlFunctionClose) {
				at += len(xmlFunctionClose)
				break
			}
			if !strings.HasPrefix(rest[at:], xmlParameterOpen) {
				return nil, 0, false
			}
			at += len(xmlParameterOpen)
			end := strings.IndexByte(rest[at:], '>')
			if end <= 0 {
				return nil, 0, false
			}
			key := rest[at : at+end]
			at += end + 1
			close := strings.Index(rest[at:], xmlParameterClose)
			if close < 0 {
				return nil, 0, false
			}
			text := rest[at : at+close]
			text = strings.TrimPrefix(text, "\n")
			text = strings.TrimSuffix(text, "\n")
			at += close + len(xmlParameterClose)
			args.keys = append(args.keys, key)
			args.items = append(args.items, typedValue(text, strs[key]))
		}
		call := ToolCall{Name: name, Arguments: args.format(compactJSON)}
		tail := trimLeftSpace(rest[at:])
		switch {
		case strings.HasPrefix(tail, hermesCallClose):
			return []ToolCall{call}, len(rest) - len(tail) + len(hermesCallClose), true
		case tail == "":
			return []ToolCall{call}, len(rest), true
		}
		return nil, 0, false
	}
}

// typedValue is a parameter's value: its text when the schema says it is a
// string, else the JSON it holds, else its text.
func typedValue(text string, isString bool) jsonNode {
	if !isString {
		if v, err := parseJSON(text); err == nil {
			return v
		}
	}
	return jsonString(text)
}

// stringParameters returns which parameters of the tool called name take
// strings (llama.cpp's resolves_to_string: "type": "string", or an enum or
// const of strings).
func stringParameters(tools []Tool, name string) map[string]bool {
	out := map[string]bool{}
	for _, tool := range tools {
		if tool.Name != name || tool.Parameters == nil {
			continue
		}
		params, err := parseJSON(string(tool.Parameters))
		if err != nil {
			return out
		}
		props, _ := params.get("properties")
		for i, key := range props.keys {
			out[key] = isStringSchema(props.items[i])
		}
	}
	return out
}

// isStringSchema reports whether a schema's values are strings only.
func isStringSchema(s jsonNode) bool {
	if t, ok := s.get("type"); ok {
		if t.kind == '"' {
			return t.text == "string"
		}
		if t.kind == '[' {
			for _, item := range t.items {
				if item.kind != '"' || item.text != "string" {
					return false
				}
			}
			return len(t.items) > 0
		}
		return false
	}
	if c, ok := s.get("const"); ok {
		return c.kind == '"'
	}
	if e, ok := s.get("enum"); ok && e.kind == '[' && len(e.items) > 0 {
		for _, item := range e.items {
			if item.kind != '"' {
				return false
			}
		}
		return true
	}
	return false
}

// qwenXMLCallGrammar returns the GBNF body of one forced XML call of tool,
// its parameter rules added to conv as tool-<i>-...: the parameters the
// schema requires in its order, then each optional one, in order, or not;
// a string parameter's value is raw text its schema allows
// (qwenXMLStringGrammar), any other value the JSON its schema allows.
func qwenXMLCallGrammar(conv schemaConverter, i int, tool Tool, schema []byte) (string, error) {
	params, err := parseJSON(string(schema))
	if err != nil {
		return "", err
	}
	props, _ := params.get("properties")
	required := map[string]bool{}
	if req, ok := params.get("required"); ok {
		for _, r := range req.items {
			required[r.text] = true
		}
	}
	var b strings.Builder
	b.WriteString(gbnfLiteral("<tool_call>\n" + xmlFunctionOpen + tool.Name + ">\n"))
	var optional []string
	for j, key := range props.keys {
		name := fmt.Sprintf("tool-%d-arg-%d", i, j)
		value := ""
		if isStringSchema(props.items[j]) {
			value = qwenXMLStringGrammar(conv, name, props.items[j])
		} else {
			value, err = conv.Add(name, []byte(props.items[j].format(compactJSON)))
			if err != nil {
				return "", fmt.Errorf("properties.%s: %v", key, err)
			}
		}
		arg := gbnfLiteral(xmlParameterOpen+key+">\n") + " " + value + " " + gbnfLiteral("\n"+xmlParameterClose+"\n")
		if required[key] {
			b.WriteString(" " + arg)
		} else {
			optional = append(optional, "( "+arg+" )?")
		}
	}
	for _, o := range optional {
		b.WriteString(" " + o)
	}
	b.WriteString(" " + gbnfLiteral(xmlFunctionClose+"\n</tool_call>"))
	return b.String(), nil
}

// qwenXMLStringGrammar is the rule (named name when it is the schema's
// own) of a string parameter's raw text, as the XML format writes it
// between "<parameter=KEY>\n" and "\n</parameter>": a const or an enum
// of strings, each literally; with minLength or maxLength, that many
// characters on one line and without "<" (so that the count is exact and
// no "</parameter>" can end the value early); else any text with no line
// starting with "<" (so that "\n</parameter>" ends it). A pattern is not
// held to.
func qwenXMLStringGrammar(conv schemaConverter, name string, schema jsonNode) string {
	if c, ok := schema.get("const"); ok && c.kind == '"' {
		return conv.Rule(name, gbnfLiteral(c.text))
	}
	if e, ok := schema.get("enum"); ok && e.kind == '[' && len(e.items) > 0 {
		alts := make([]string, 0, len(e.items))
		for _, v := range e.items {
			if v.kind == '"' {
				alts = append(alts, gbnfLiteral(v.text))
			}
		}
		if len(alts) > 0 {
			return conv.Rule(name, strings.Join(alts, " | "))
		}
	}
	return conv.Rule(name, stringLengthGrammar(schema, `[^\n] | "\n" [^<]`, `[^\n<]`))
}

// stringLengthGrammar is the rule of text of a string schema's minLength
// to maxLength characters: with maxLength, counted single characters of
// class one; with only minLength, at least that many units (each of one
// character or more); else any number of units.
func stringLengthGrammar(schema jsonNode, unit, one string) string {
	lo, hi := 0, -1
	if v, ok := schema.get("minLength"); ok {
		fmt.Sscan(v.text, &lo)
	}
	if v, ok := schema.get("maxLength"); ok {
		fmt.Sscan(v.text, &hi)
	}
	switch {
	case hi >= 0:
		return fmt.Sprintf("%s{%d,%d}", one, lo, max(hi, lo))
	case lo > 0:
		return fmt.Sprintf("( %s ){%d,}", unit, lo)
	}
	return "( " + unit + " )*"
}
