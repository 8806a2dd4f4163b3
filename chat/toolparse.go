package chat

import (
	"fmt"
	"strings"
)

// Tags that open a tool call in a reply.
const (
	hermesCallOpen  = "<tool_call>"
	hermesCallClose = "</tool_call>"
	mistralCalls    = "[TOOL_CALLS]"
	llama3PythonTag = "<|python_tag|>"
)

// ParseToolCalls splits a finished reply, written in format, into its text
// content and the tool calls it makes:
//
//   - generic: a reply that is one JSON object {"tool_call": {"name",
//     "arguments"}} or {"tool_calls": [...]} is calls (with its "content",
//     if any), {"response": R} is content R (a non-string R printed as JSON);
//   - llama3: JSON objects {"name": ..., "parameters": {...}} (optionally
//     "type": "function" and a <|python_tag|> before them) at the start of
//     the reply, separated by whitespace or ";", are calls; the rest is
//     content;
//   - hermes: every <tool_call>{"name": ..., "arguments": {...}}</tool_call>
//     block is a call (the closing tag may be missing at the very end);
//   - mistral: every [TOOL_CALLS] followed by a JSON array of {"name",
//     "arguments", "id"} (or one such object) holds calls;
//   - qwen-xml: every <tool_call><function=NAME><parameter=P>VALUE
//     </parameter>...</function></tool_call> block is a call (the closing
//     tag may be missing at the very end); a VALUE is JSON when it parses
//     as JSON (ParseToolCallsFor: unless the tool's schema says the
//     parameter is a string), else a string;
//   - harmony: every message to functions.NAME whose text is a JSON object
//     ("<|channel|>commentary to=functions.NAME <|constrain|>json
//     <|message|>{...}", the recipient before the channel too, after an
//     optional "<|start|>assistant") is a call;
//   - lfm2: every <|tool_call_start|> followed by a list of Python calls,
//     [name(key=value, ...), ...] (values Python or JSON literals), and
//     <|tool_call_end|> (missing at the very end) holds calls;
//   - gemma4: every <|tool_call>call:NAME{key:value,...}<tool_call|> is a
//     call (the closing marker may be missing at the very end), its values
//     in Gemma 4's syntax (strings between <|"|> markers, dicts with bare
//     keys, lists, JSON numbers, true, false, null), read into JSON as
//     llama.cpp's Gemma 4 parser reads them.
//
// Whitespace inside and around calls is free, and so is the JSON's layout.
// Text that is not a well-formed call (bad JSON, no name, arguments that
// are not an object) stays in the content, byte for byte; around a call,
// the content loses only the whitespace next to it. Arguments are
// re-written as compact JSON, keys in the model's order. A call's ID is the
// one the model wrote (mistral, generic) or else ToolCallID(format, seed,
// i) for the i-th call of the reply: the host passes a seed per reply (the
// request's seed and a counter, say) and gets the same ids for the same
// reply. Parallel calls come back in order.
//
// The error is ErrUnknownToolFormat for a format that is not one of the
// constants; text never fails to parse.
func ParseToolCalls(format ToolFormat, text string, seed uint64) (content string, calls []ToolCall, err error) {
	return ParseToolCallsFor(format, text, seed, nil)
}

// ParseToolCallsFor is ParseToolCalls for a reply to a request offering
// tools: a format that writes arguments untyped (qwen-xml's parameter
// values) reads them as the tools' parameter schemas say, as llama.cpp
// does. The other formats ignore tools.
func ParseToolCallsFor(format ToolFormat, text string, seed uint64, tools []Tool) (content string, calls []ToolCall, err error) {
	var spans []callSpan
	switch format {
	case ToolFormatGeneric:
		content, calls, ok := parseGeneric(text)
		if !ok {
			return text, nil, nil
		}
		return content, numberCalls(format, calls, seed), nil
	case ToolFormatLlama3:
		spans = parseLlama3(text)
	case ToolFormatHermes:
		spans = parseTagged(text, hermesCallOpen, parseHermesCall)
	case ToolFormatMistral:
		spans = parseTagged(text, mistralCalls, parseMistralCalls)
	case ToolFormatQwenXML:
		spans = parseTagged(text, hermesCallOpen, parseQwenXMLCall(tools))
	case ToolFormatHarmony:
		spans = parseHarmony(text)
	case ToolFormatLFM2:
		spans = parseTagged(text, lfm2CallStart, parseLFM2Calls)
	case ToolFormatGemma4:
		spans = parseTagged(text, gemma4CallOpen, parseGemma4Call)
	default:
		return text, nil, fmt.Errorf("%w: %v", ErrUnknownToolFormat, format)
	}
	if len(spans) == 0 {
		return text, nil, nil
	}
	var b strings.Builder
	at := 0
	for _, s := range spans {
		gap := text[at:s.start]
		if at > 0 {
			gap = trimLeftSpace(gap)
		}
		b.WriteString(trimRightSpace(gap))
		calls = append(calls, s.calls...)
		at = s.end
	}
	b.WriteString(trimLeftSpace(text[at:]))
	return b.String(), numberCalls(format, calls, seed), nil
}

// callSpan is text[start:end], a run of text that holds calls.
type callSpan struct {
	start, end int
	calls      []ToolCall
}

// numberCalls gives every call without an id its ToolCallID.
func numberCalls(format ToolFormat, calls []ToolCall, seed uint64) []ToolCall {
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = ToolCallID(format, seed, i)
		}
	}
	return calls
}

// ToolCallID is the id ParseToolCalls gives the index-th call of a reply
// whose model wrote none: "call_" and 24 letters and digits, like OpenAI's,
// or, for Mistral, whose template takes nothing else, nine letters and
// digits. It depends only on its arguments.
func ToolCallID(format ToolFormat, seed uint64, index int) string {
	x := seed ^ (uint64(index)+1)*0x9e3779b97f4a7c15
	if format == ToolFormatMistral {
		return alnumID(x, 9)
	}
	return "call_" + alnumID(x, 24)
}

// alnumID returns n letters and digits drawn from a splitmix64 stream
// started at x.
func alnumID(x uint64, n int) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	for i := range b {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		b[i] = alphabet[z%uint64(len(alphabet))]
	}
	return string(b)
}

// callFrom reads one call object: name (a non-empty string) and its
// arguments under argsKey (an object, or a string holding one; missing or
// null is {}). The id, if the object has a string one, is kept.
func callFrom(n jsonNode, argsKeys ...string) (ToolCall, bool) {
	name, ok := n.get("name")
	if !ok || name.kind != '"' || name.text == "" {
		return ToolCall{}, false
	}
	if typ, ok := n.get("type"); ok && (typ.kind != '"' || typ.text != "function") {
		return ToolCall{}, false
	}
	args := jsonObject(nil)
	for _, key := range argsKeys {
		if v, ok := n.get(key); ok {
			args = v
			break
		}
	}
	switch args.kind {
	case 'n':
		args = jsonObject(nil)
	case '"':
		inner, err := parseJSON(args.text)
		if err != nil || inner.kind != '{' {
			return ToolCall{}, false
		}
		args = inner
	case '{':
	default:
		return ToolCall{}, false
	}
	call := ToolCall{Name: name.text, Arguments: args.format(compactJSON)}
	if id, ok := n.get("id"); ok && id.kind == '"' {
		call.ID = id.text
	}
	return call, true
}

// parseTagged finds the calls that follow each occurrence of tag: read
// parses the text after the tag and returns the calls and the length it
// used, or false, and then that occurrence stays content.
func parseTagged(text, tag string, read func(rest string) ([]ToolCall, int, bool)) []callSpan {
	var spans []callSpan
	for from := 0; ; {
		i := strings.Index(text[from:], tag)
		if i < 0 {
			return spans
		}
		start := from + i
		after := start + len(tag)
		if calls, n, ok := read(text[after:]); ok {
			spans = append(spans, callSpan{start: start, end: after + n, calls: calls})
			from = after + n
		} else {
			from = after
		}
	}
}

// parseHermesCall reads `{"name": ..., "arguments": ...}</tool_call>` (the
// text after <tool_call>), whitespace allowed around the object; the closing
// tag may be missing if nothing but whitespace follows.
func parseHermesCall(rest string) ([]ToolCall, int, bool) {
	n, end, err := parseJSONPrefix(rest)
	if err != nil || n.kind != '{' {
		return nil, 0, false
	}
	call, ok := callFrom(n, "arguments")
	if !ok {
		return nil, 0, false
	}
	tail := trimLeftSpace(rest[end:])
	switch {
	case strings.HasPrefix(tail, hermesCallClose):
		return []ToolCall{call}, len(rest) - len(tail) + len(hermesCallClose), true
	case tail == "":
		return []ToolCall{call}, len(rest), true
	}
	return nil, 0, false
}

// parseMistralCalls reads the JSON array (or single object) of calls after
// [TOOL_CALLS]; every element must be a call.
func parseMistralCalls(rest string) ([]ToolCall, int, bool) {
	n, end, err := parseJSONPrefix(rest)
	if err != nil {
		return nil, 0, false
	}
	items := []jsonNode{n}
	if n.kind == '[' {
		items = n.items
	}
	if len(items) == 0 {
		return nil, 0, false
	}
	calls := make([]ToolCall, 0, len(items))
	for _, item := range items {
		call, ok := callFrom(item, "arguments")
		if !ok || item.kind != '{' {
			return nil, 0, false
		}
		calls = append(calls, call)
	}
	return calls, end, true
}

// parseLlama3 reads the calls at the start of a Llama 3.x reply: JSON
// objects with "name" and "parameters" ("arguments" is taken too), each
// optionally after <|python_tag|>, separated by whitespace or ";".
func parseLlama3(text string) []callSpan {
	var spans []callSpan
	at := 0 // the end of the last call
	for {
		i := skipSpace(text, at)
		if len(spans) > 0 && strings.HasPrefix(text[i:], ";") {
			i = skipSpace(text, i+1)
		}
		j := i
		if strings.HasPrefix(text[j:], llama3PythonTag) {
			j = skipSpace(text, j+len(llama3PythonTag))
		}
		if !strings.HasPrefix(text[j:], "{") {
			return spans
		}
		n, end, err := parseJSONPrefix(text[j:])
		if err != nil {
			return spans
		}
		call, ok := callFrom(n, "parameters", "arguments")
		if !ok {
			return spans
		}
		call.ID = "" // Llama 3.x calls carry no id
		start := i
		if len(spans) > 0 {
			start = at // the separator belongs to the run of calls
		}
		spans = append(spans, callSpan{start: start, end: j + end, calls: []ToolCall{call}})
		at = j + end
	}
}

// skipSpace returns the offset of the first non-space byte of s at or
// after i.
func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// parseGeneric reads a generic-format reply: one JSON object, the whole
// reply. ok is false when the reply is not such an object, or not one of
// the three shapes.
func parseGeneric(text string) (content string, calls []ToolCall, ok bool) {
	if !strings.HasPrefix(trimLeftSpace(text), "{") {
		return "", nil, false
	}
	n, err := parseJSON(text)
	if err != nil || n.kind != '{' {
		return "", nil, false
	}
	if list, ok := n.get("tool_calls"); ok {
		if list.kind != '[' || len(list.items) == 0 {
			return "", nil, false
		}
		for _, item := range list.items {
			call, ok := callFrom(item, "arguments")
			if !ok || item.kind != '{' {
				return "", nil, false
			}
			calls = append(calls, call)
		}
	} else if one, ok := n.get("tool_call"); ok {
		call, ok := callFrom(one, "arguments")
		if !ok || one.kind != '{' {
			return "", nil, false
		}
		calls = []ToolCall{call}
	} else if resp, ok := n.get("response"); ok {
		if resp.kind == '"' {
			return resp.text, nil, true
		}
		return resp.format(indentedJSON(2)), nil, true
	} else {
		return "", nil, false
	}
	if c, ok := n.get("content"); ok && c.kind == '"' {
		content = c.text
	}
	return content, calls, true
}
