package chat

import (
	"fmt"
	"strconv"
	"strings"
)

// LFM2.5's tool format (ToolFormatLFM2), as its template writes it and
// llama.cpp's LFM2 handler (common/chat.cpp) reads it: the tools as a JSON
// list after "List of tools: " in the system message, a reply's calls as
// Python calls, <|tool_call_start|>[name(arg=value, ...), ...]
// <|tool_call_end|>, and results as "tool" turns. The template writes an
// assistant message's content only: calls in the history are not shown
// to the model, as llama.cpp renders them.

// LFM2's call markers.
const (
	lfm2CallStart = "<|tool_call_start|>"
	lfm2CallEnd   = "<|tool_call_end|>"
)

// lfm2Messages rewrites a conversation with tools as LFM2.5's template
// prints it: the tool list after the system message's text (on a line of
// its own), or as the system message; calls dropped, results as they are.
func lfm2Messages(msgs []Message, tools []Tool) []Message {
	out := make([]Message, 0, len(msgs)+1)
	for _, m := range msgs {
		m.ToolCalls = nil
		out = append(out, m)
	}
	if len(tools) == 0 {
		return out
	}
	var list strings.Builder
	list.WriteString("List of tools: [")
	for i, tool := range tools {
		if i > 0 {
			list.WriteString(", ")
		}
		list.WriteString(tool.openAITool().format(pyJSON))
	}
	list.WriteString("]")
	if len(out) > 0 && out[0].Role == "system" {
		sys := out[0].Content
		if sys != "" {
			sys += "\n"
		}
		out[0].Content = sys + list.String()
		return out
	}
	return append([]Message{{Role: "system", Content: list.String()}}, out...)
}

// parseLFM2Calls reads "[name(arg=value, ...), ...]<|tool_call_end|>" (the
// text after <|tool_call_start|>): Python calls whose keyword values are
// Python or JSON literals (strings in either quotes, numbers,
// True/False/None or true/false/null, lists, dicts); the closing marker
// may be missing at the very end.
func parseLFM2Calls(rest string) ([]ToolCall, int, bool) {
	p := pyParser{s: rest}
	p.space()
	if !p.eat("[") {
		return nil, 0, false
	}
	var calls []ToolCall
	for {
		p.space()
		name := p.name(true)
		if name == "" || !p.eat("(") {
			return nil, 0, false
		}
		args := jsonObject(nil)
		for p.space(); !p.eat(")"); p.space() {
			if len(args.keys) > 0 && !p.eat(",") {
				return nil, 0, false
			}
			p.space()
			key := p.name(false)
			p.space()
			if key == "" || !p.eat("=") {
				return nil, 0, false
			}
			v, ok := p.value(0)
			if !ok {
				return nil, 0, false
			}
			args.keys = append(args.keys, key)
			args.items = append(args.items, v)
		}
		calls = append(calls, ToolCall{Name: name, Arguments: args.format(compactJSON)})
		p.space()
		if p.eat("]") {
			break
		}
		if !p.eat(",") {
			return nil, 0, false
		}
	}
	at := p.i
	tail := trimLeftSpace(rest[at:])
	switch {
	case strings.HasPrefix(tail, lfm2CallEnd):
		return calls, len(rest) - len(tail) + len(lfm2CallEnd), true
	case tail == "":
		return calls, len(rest), true
	}
	return nil, 0, false
}

// pyParser reads Python literals from s, from offset i.
type pyParser struct {
	s string
	i int
}

func (p *pyParser) space() { p.i = skipSpace(p.s, p.i) }

// eat moves past tok if s continues with it.
func (p *pyParser) eat(tok string) bool {
	if strings.HasPrefix(p.s[p.i:], tok) {
		p.i += len(tok)
		return true
	}
	return false
}

// name reads an identifier (with '-' and, for a function, '.').
func (p *pyParser) name(function bool) string {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if !(c == '_' || c == '-' || isAlnumByte(c) || function && c == '.') {
			break
		}
		p.i++
	}
	return p.s[start:p.i]
}

// value reads one literal as JSON.
func (p *pyParser) value(depth int) (jsonNode, bool) {
	p.space()
	if p.i >= len(p.s) || depth > maxJSONDepth {
		return jsonNode{}, false
	}
	switch c := p.s[p.i]; {
	case c == '"' || c == '\'':
		s, ok := p.str(c)
		return jsonString(s), ok
	case c == '[' || c == '{':
		p.i++
		n := jsonNode{kind: c}
		end := "]"
		if c == '{' {
			end = "}"
		}
		for p.space(); !p.eat(end); p.space() {
			if len(n.items) > 0 {
				if !p.eat(",") {
					return jsonNode{}, false
				}
				if p.space(); p.eat(end) {
					break // a trailing comma
				}
			}
			if c == '{' {
				k, ok := p.value(depth + 1)
				if !ok || k.kind != '"' {
					return jsonNode{}, false
				}
				if p.space(); !p.eat(":") {
					return jsonNode{}, false
				}
				n.keys = append(n.keys, k.text)
			}
			v, ok := p.value(depth + 1)
			if !ok {
				return jsonNode{}, false
			}
			n.items = append(n.items, v)
		}
		return n, true
	}
	for _, lit := range []struct {
		text string
		kind byte
	}{{"True", 't'}, {"true", 't'}, {"False", 'f'}, {"false", 'f'}, {"None", 'n'}, {"null", 'n'}} {
		if p.eat(lit.text) {
			return jsonNode{kind: lit.kind}, true
		}
	}
	start := p.i
	for p.i < len(p.s) && strings.IndexByte("+-.0123456789eE", p.s[p.i]) >= 0 {
		p.i++
	}
	num := p.s[start:p.i]
	if _, err := strconv.ParseFloat(num, 64); err != nil || num == "" {
		return jsonNode{}, false
	}
	if n, err := parseJSON(num); err == nil {
		return n, true // JSON's own spelling, kept as written
	}
	f, _ := strconv.ParseFloat(num, 64)
	return jsonNode{kind: '0', text: strconv.FormatFloat(f, 'g', -1, 64)}, true
}

// str reads a string in quote q with Python's escapes (\n, \t, \r, \\,
// the quotes, \uXXXX, \xXX; another escaped character is kept with its
// backslash, as Python keeps it).
func (p *pyParser) str(q byte) (string, bool) {
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), true
		case c == '\\' && p.i+1 < len(p.s):
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '\\', '\'', '"':
				b.WriteByte(e)
			case 'u', 'x':
				n := 4
				if e == 'x' {
					n = 2
				}
				if p.i+n > len(p.s) {
					return "", false
				}
				r, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
				if err != nil {
					return "", false
				}
				b.WriteRune(rune(r))
				p.i += n
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", false
}

// lfm2CallGrammar is the GBNF body of one forced LFM2 call of tool name:
// "name(", then each parameter as key=JSON value (JSON's literals are
// Python's to LFM2's parser), as argListGrammar lists them with ", "
// between two, then ")". rules[i] is keys[i]'s value rule; required[i]
// tells whether it is required.
func lfm2CallGrammar(name string, keys, rules []string, required []bool) string {
	args := make([]string, len(keys))
	for i, key := range keys {
		args[i] = gbnfLiteral(key+"=") + " " + rules[i]
	}
	return argListGrammar(gbnfLiteral(name+"("), args, required, gbnfLiteral(", "), gbnfLiteral(")"))
}

// argListGrammar is the GBNF of a list of arguments between open and
// close (GBNF terms), sep between two: the required ones (required[i]
// tells) in their order, then any of the optional ones in order.
func argListGrammar(open string, args []string, required []bool, sep, close string) string {
	var req, opt []string
	for i, arg := range args {
		if required[i] {
			req = append(req, arg)
		} else {
			opt = append(opt, arg)
		}
	}
	var b strings.Builder
	b.WriteString(open)
	for i, arg := range req {
		if i > 0 {
			b.WriteString(" " + sep)
		}
		b.WriteString(" " + arg)
	}
	switch {
	case len(req) > 0:
		for _, arg := range opt {
			b.WriteString(" ( " + sep + " " + arg + " )?")
		}
	case len(opt) > 0:
		// No required argument: the first optional one written opens
		// the list, any later ones follow it.
		alts := make([]string, len(opt))
		for j := range opt {
			alt := opt[j]
			for _, arg := range opt[j+1:] {
				alt += " ( " + sep + " " + arg + " )?"
			}
			alts[j] = alt
		}
		b.WriteString(" ( " + strings.Join(alts, " | ") + " )?")
	}
	b.WriteString(" " + close)
	return b.String()
}

// paramsGrammar reads an object schema's properties and required list,
// adds each property's JSON value rule to conv (tool-<i>-arg-<j>), and
// returns what write makes of them.
func paramsGrammar(conv schemaConverter, i int, schema []byte, write func(keys, rules []string, required []bool) string) (string, error) {
	params, err := parseJSON(string(schema))
	if err != nil {
		return "", err
	}
	props, _ := params.get("properties")
	req, _ := params.get("required")
	rules := make([]string, len(props.keys))
	required := make([]bool, len(props.keys))
	for j, key := range props.keys {
		rules[j], err = conv.Add(fmt.Sprintf("tool-%d-arg-%d", i, j), []byte(props.items[j].format(compactJSON)))
		if err != nil {
			return "", fmt.Errorf("properties.%s: %v", key, err)
		}
		required[j] = holdsString(req, key)
	}
	return write(props.keys, rules, required), nil
}
