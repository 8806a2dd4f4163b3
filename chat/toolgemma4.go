package chat

import (
	"slices"
	"strings"
)

// Gemma 4's tool format (ToolFormatGemma4), as its template
// (templates/google-gemma-4-31B-it.jinja) writes it and llama.cpp's Gemma 4
// handler (common/chat.cpp, COMMON_CHAT_FORMAT_PEG_GEMMA4) reads it. Every
// value is written in Gemma 4's own syntax: strings between <|"|> markers,
// numbers and booleans bare, lists [a,b], dicts {key:value} with keys
// sorted (case-insensitively, as Jinja's dictsort). The tools are declared
// in the system turn, "<|tool>declaration:NAME{description:...,
// parameters:{...}}<tool|>" each; a call is "<|tool_call>call:NAME{key:
// value,...}<tool_call|>" inside the model's turn, and the results of a
// model message's calls follow its calls in the same turn,
// "<|tool_response>response:NAME{value:<|"|>...<|"|>}<tool_response|>",
// before the message's content.

// Gemma 4's tool markers.
const (
	gemma4Quote        = `<|"|>`
	gemma4CallOpen     = "<|tool_call>"
	gemma4CallClose    = "<tool_call|>"
	gemma4ResponseOpen = "<|tool_response>"
)

// writeGemma4 is Gemma 4's format, tools and all: a system turn when
// thinking is on (starting with <|think|>), there are tools, or the first
// message is a system or developer one; then "<|turn>user" and
// "<|turn>model" turns closed by "<turn|>", messages trimmed and the
// model's stripped of their thought channels. A model message right after
// another (tool results between them aside) does not open a new turn. A
// model message's calls are followed by the results of the "tool"
// messages after it (each named after the call it answers), then by its
// content; the turn stays open after results without content, and a call
// without results ends with <|tool_response>, where the model's reply
// would stop. The generation prompt is "<|turn>model\n" (and, thinking
// off, an empty thought channel) unless the last message was a call or
// results; llama.cpp then still opens a model turn after a closed one
// (results and content), and so does writeGemma4.
func writeGemma4(b *strings.Builder, msgs []Message, tools []Tool, addAssistant bool, opts Options) {
	thinking := !opts.DisableThinking
	rest := msgs
	first := len(msgs) > 0 && (msgs[0].Role == "system" || msgs[0].Role == "developer")
	// last is the template's ns.prev_message_type where the generation
	// prompt reads it: whether the last message left a call or results.
	var last string
	if thinking || len(tools) > 0 || first {
		b.WriteString("<|turn>system\n")
		if thinking {
			b.WriteString(gemma4Think)
		}
		if first {
			b.WriteString(jinjaTrim(msgs[0].Content))
			rest = msgs[1:]
		}
		for _, tool := range tools {
			b.WriteString("<|tool>" + jinjaTrim(gemma4Declaration(tool)) + "<tool|>")
		}
		b.WriteString("<turn|>\n")
	}
	prev := ""
	for i, m := range rest {
		if m.Role == "tool" {
			continue
		}
		last = ""
		role := m.Role
		if role == "assistant" {
			role = "model"
		}
		if !(role == "model" && prev == "assistant") {
			b.WriteString("<|turn>" + role + "\n")
		}
		for _, c := range m.ToolCalls {
			writeGemma4Call(b, c)
			last = "tool_call"
		}
		responded := false
		if len(m.ToolCalls) > 0 {
			for _, r := range rest[i+1:] {
				if r.Role != "tool" {
					break
				}
				b.WriteString(gemma4ResponseOpen + "response:" + gemma4ResultName(m.ToolCalls, r) +
					"{value:" + gemma4Quote + r.Content + gemma4Quote + "}<tool_response|>")
				responded = true
				last = "tool_response"
			}
		}
		if role == "model" {
			b.WriteString(gemma4StripThinking(m.Content))
		} else {
			b.WriteString(jinjaTrim(m.Content))
		}
		switch {
		case last == "tool_call" && !responded:
			b.WriteString(gemma4ResponseOpen)
		case !(responded && m.Content == ""):
			b.WriteString("<turn|>\n")
		}
		prev = m.Role
	}
	if !addAssistant {
		return
	}
	switch {
	case last != "tool_response" && last != "tool_call":
		b.WriteString("<|turn>model\n")
		if !thinking {
			b.WriteString(gemma4EmptyThought)
		}
	case strings.HasSuffix(b.String(), "<turn|>\n"):
		b.WriteString("<|turn>model\n")
	}
}

// gemma4ResultName is the function a "tool" message answers: the call of
// calls with its id, else the message's Name, else "unknown".
func gemma4ResultName(calls []ToolCall, r Message) string {
	name := r.Name
	if name == "" {
		name = "unknown"
	}
	for _, c := range calls {
		if c.ID == r.ToolCallID {
			name = c.Name
		}
	}
	return name
}

// writeGemma4Call writes one call: its arguments object's members sorted,
// keys bare; arguments that are not JSON as their text.
func writeGemma4Call(b *strings.Builder, c ToolCall) {
	b.WriteString(gemma4CallOpen + "call:" + c.Name + "{")
	switch args, _ := c.arguments(); args.kind {
	case '{':
		for j, k := range dictSorted(args) {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(args.keys[k] + ":")
			writeGemma4Value(b, args.items[k], false)
		}
	case '"':
		b.WriteString(args.text)
	}
	b.WriteString("}" + gemma4CallClose)
}

// writeGemma4Value is the template's format_argument: a string between
// <|"|> markers, a boolean as true/false, a dict with its members sorted
// and its keys quoted when quoteKeys, a list, a number as written; null
// is written as nothing, as llama.cpp's Jinja and @huggingface/jinja print
// none (Python's Jinja would print None).
func writeGemma4Value(b *strings.Builder, v jsonNode, quoteKeys bool) {
	switch v.kind {
	case '"':
		b.WriteString(gemma4Quote + v.text + gemma4Quote)
	case 't':
		b.WriteString("true")
	case 'f':
		b.WriteString("false")
	case '{':
		b.WriteByte('{')
		for j, k := range dictSorted(v) {
			if j > 0 {
				b.WriteByte(',')
			}
			if quoteKeys {
				b.WriteString(gemma4Quote + v.keys[k] + gemma4Quote)
			} else {
				b.WriteString(v.keys[k])
			}
			b.WriteByte(':')
			writeGemma4Value(b, v.items[k], quoteKeys)
		}
		b.WriteByte('}')
	case '[':
		b.WriteByte('[')
		for j, item := range v.items {
			if j > 0 {
				b.WriteByte(',')
			}
			writeGemma4Value(b, item, quoteKeys)
		}
		b.WriteByte(']')
	case '0':
		b.WriteString(v.text)
	}
}

// gemma4Value is writeGemma4Value's text.
func gemma4Value(v jsonNode, quoteKeys bool) string {
	var b strings.Builder
	writeGemma4Value(&b, v, quoteKeys)
	return b.String()
}

// dictSorted returns the indexes of an object's members in Jinja's
// dictsort order: by key, case-insensitively, ties in their order.
func dictSorted(obj jsonNode) []int {
	order := make([]int, len(obj.keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return strings.Compare(strings.ToLower(obj.keys[a]), strings.ToLower(obj.keys[b]))
	})
	return order
}

// jinjaTruthy is Jinja's truth of a value that may be missing: not
// missing, null, false, 0, "" or empty.
func jinjaTruthy(v jsonNode, ok bool) bool {
	switch {
	case !ok:
		return false
	case v.kind == 'n' || v.kind == 'f':
		return false
	case v.kind == '"':
		return v.text != ""
	case v.kind == '0':
		return strings.Trim(v.text, "-0.eE+") != "" // 0, -0.0, 0e5 are false
	case v.kind == '{' || v.kind == '[':
		return len(v.items) > 0
	}
	return true
}

// upperType is the template's "value['type'] | upper": a string type
// upper-cased, anything else "".
func upperType(schema jsonNode) string {
	if t, ok := schema.get("type"); ok && t.kind == '"' {
		return strings.ToUpper(t.text)
	}
	return ""
}

// gemma4Strings is a list of strings as the template writes a required
// list: [<|"|>a<|"|>,<|"|>b<|"|>].
func gemma4Strings(list jsonNode) string {
	parts := make([]string, 0, len(list.items))
	for _, item := range list.items {
		parts = append(parts, gemma4Quote+item.text+gemma4Quote)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// gemma4Declaration is the template's format_function_declaration: the
// tool's name and description, and its parameters (their properties as
// gemma4Properties writes them, the required list, the type). A
// parameters object without a type is left unclosed, as the template
// leaves it.
func gemma4Declaration(tool Tool) string {
	var b strings.Builder
	b.WriteString("declaration:" + tool.Name + "{description:" + gemma4Quote + tool.Description + gemma4Quote)
	params, err := parseJSON(string(tool.Parameters))
	if tool.Parameters != nil && err == nil && jinjaTruthy(params, true) {
		b.WriteString(",parameters:{")
		if props, ok := params.get("properties"); jinjaTruthy(props, ok) {
			b.WriteString("properties:{" + gemma4Properties(props) + "},")
		}
		if req, ok := params.get("required"); jinjaTruthy(req, ok) {
			b.WriteString("required:" + gemma4Strings(req) + ",")
		}
		if t, ok := params.get("type"); jinjaTruthy(t, ok) {
			b.WriteString("type:" + gemma4Quote + upperType(params) + gemma4Quote + "}")
		}
	}
	b.WriteString("}")
	return b.String()
}

// gemma4StandardKeys are the schema keys format_parameters does not list
// as properties.
var gemma4StandardKeys = []string{"description", "type", "properties", "required", "nullable"}

// gemma4Properties is the template's format_parameters: each property
// (sorted; one named like a standard key is skipped, as the template
// skips it) as name:{description, enum (strings), items (arrays), nullable,
// properties and required (objects), type}.
func gemma4Properties(props jsonNode) string {
	var b strings.Builder
	found := false
	for _, k := range dictSorted(props) {
		key, value := props.keys[k], props.items[k]
		if slices.Contains(gemma4StandardKeys, key) {
			continue
		}
		if found {
			b.WriteByte(',')
		}
		found = true
		b.WriteString(key + ":{")
		comma := false
		sep := func() {
			if comma {
				b.WriteByte(',')
			}
			comma = true
		}
		if d, ok := value.get("description"); jinjaTruthy(d, ok) {
			b.WriteString("description:" + gemma4Quote + d.text + gemma4Quote)
			comma = true
		}
		typ := upperType(value)
		switch typ {
		case "STRING":
			if e, ok := value.get("enum"); jinjaTruthy(e, ok) {
				sep()
				b.WriteString("enum:" + gemma4Value(e, true))
			}
		case "ARRAY":
			if items, ok := value.get("items"); ok && items.kind == '{' && len(items.items) > 0 {
				sep()
				b.WriteString("items:{" + gemma4Items(items) + "}")
			}
		}
		if n, ok := value.get("nullable"); jinjaTruthy(n, ok) {
			sep()
			b.WriteString("nullable:true")
		}
		if typ == "OBJECT" {
			sep()
			if p, ok := value.get("properties"); ok && p.kind == '{' {
				b.WriteString("properties:{" + gemma4Properties(p) + "}")
			} else {
				b.WriteString("properties:{" + gemma4Properties(value) + "}")
			}
			if req, ok := value.get("required"); jinjaTruthy(req, ok) {
				sep()
				b.WriteString("required:" + gemma4Strings(req))
			}
		}
		sep()
		b.WriteString("type:" + gemma4Quote + typ + gemma4Quote + "}")
	}
	return b.String()
}

// gemma4Items is an array schema's items as the template writes them: each
// member (sorted, nulls left out), properties and required as for a
// parameter, the type upper-cased, anything else as a value.
func gemma4Items(items jsonNode) string {
	var b strings.Builder
	found := false
	for _, k := range dictSorted(items) {
		key, v := items.keys[k], items.items[k]
		if v.kind == 'n' {
			continue
		}
		if found {
			b.WriteByte(',')
		}
		found = true
		switch key {
		case "properties":
			b.WriteString("properties:{")
			if v.kind == '{' {
				b.WriteString(gemma4Properties(v))
			}
			b.WriteString("}")
		case "required":
			b.WriteString("required:" + gemma4Strings(v))
		case "type":
			if v.kind == '"' {
				b.WriteString("type:" + gemma4Value(jsonString(strings.ToUpper(v.text)), true))
			} else {
				upper := jsonNode{kind: '['}
				for _, t := range v.items {
					upper.items = append(upper.items, jsonString(strings.ToUpper(t.text)))
				}
				b.WriteString("type:" + gemma4Value(upper, true))
			}
		default:
			b.WriteString(key + ":" + gemma4Value(v, true))
		}
	}
	return b.String()
}
