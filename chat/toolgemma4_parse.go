package chat

import (
	"fmt"
	"strings"
)

// Reading Gemma 4's calls back, as llama.cpp's Gemma 4 parser does
// (common/chat.cpp's gemma4-* rules, turned into JSON by
// common/chat-peg-parser.cpp's gemma4_to_json), and the grammar of a
// forced call.

// parseGemma4Call reads "call:NAME{key:value,...}<tool_call|>" (the text
// after <|tool_call>); the closing marker may be missing at the very end.
// Values are Gemma 4's: a string between <|"|> markers (any text but the
// marker), a dict, a list, a JSON number, true, false or null. A dict's key
// is the text before its ':' (no ':' or '}' in it), kept as written, as
// llama.cpp keeps it; white space may follow '{', '[', ':' and ',' and
// precede the closing bracket, as llama.cpp's rules allow.
func parseGemma4Call(rest string) ([]ToolCall, int, bool) {
	p := gemma4Parser{pyParser{s: rest}}
	if !p.eat("call:") {
		return nil, 0, false
	}
	name := p.name(true)
	if name == "" || !strings.HasPrefix(p.s[p.i:], "{") {
		return nil, 0, false
	}
	args, ok := p.value(0)
	if !ok {
		return nil, 0, false
	}
	call := []ToolCall{{Name: name, Arguments: args.format(compactJSON)}}
	switch tail := p.s[p.i:]; {
	case strings.HasPrefix(tail, gemma4CallClose):
		return call, p.i + len(gemma4CallClose), true
	case tail == "":
		return call, p.i, true
	}
	return nil, 0, false
}

// gemma4Parser reads Gemma 4's values from s, from offset i, with
// pyParser's space, eat and name.
type gemma4Parser struct{ pyParser }

// value reads one value as JSON, trying llama.cpp's alternatives in its
// order: string, dict, list, number, boolean, null.
func (p *gemma4Parser) value(depth int) (jsonNode, bool) {
	if depth > maxJSONDepth {
		return jsonNode{}, false
	}
	switch {
	case p.eat(gemma4Quote):
		end := strings.Index(p.s[p.i:], gemma4Quote)
		if end < 0 {
			return jsonNode{}, false
		}
		v := jsonString(p.s[p.i : p.i+end])
		p.i += end + len(gemma4Quote)
		return v, true
	case p.eat("{"):
		n := jsonNode{kind: '{'}
		p.space()
		if p.eat("}") {
			return n, true
		}
		for {
			end := strings.IndexAny(p.s[p.i:], ":}")
			if end <= 0 || p.s[p.i+end] != ':' {
				return jsonNode{}, false
			}
			key := p.s[p.i : p.i+end]
			p.i += end + 1
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return jsonNode{}, false
			}
			n.keys = append(n.keys, key)
			n.items = append(n.items, v)
			if !p.eat(",") {
				break
			}
			p.space()
		}
		p.space()
		return n, p.eat("}")
	case p.eat("["):
		n := jsonNode{kind: '['}
		p.space()
		if p.eat("]") {
			return n, true
		}
		for {
			v, ok := p.value(depth + 1)
			if !ok {
				return jsonNode{}, false
			}
			n.items = append(n.items, v)
			if !p.eat(",") {
				break
			}
			p.space()
		}
		p.space()
		return n, p.eat("]")
	}
	if n := jsonNumberLen(p.s[p.i:]); n > 0 {
		v := jsonNode{kind: '0', text: p.s[p.i : p.i+n]}
		p.i += n
		return v, true
	}
	for _, lit := range []struct {
		text string
		kind byte
	}{{"true", 't'}, {"false", 'f'}, {"null", 'n'}} {
		if p.eat(lit.text) {
			return jsonNode{kind: lit.kind}, true
		}
	}
	return jsonNode{}, false
}

// jsonNumberLen is the length of the JSON number s starts with
// (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?), 0 if none.
func jsonNumberLen(s string) int {
	digits := func(i int) int {
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(i)
	default:
		return 0
	}
	if i+1 < len(s) && s[i] == '.' && s[i+1] >= '0' && s[i+1] <= '9' {
		i = digits(i + 1)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			i = digits(j)
		}
	}
	return i
}

// gemma4CallGrammar returns the GBNF body of one forced Gemma 4 call of
// tool, its rules added to conv as tool-<i>-...: "call:NAME" and the
// arguments dict (gemma4DictGrammar) of its parameters schema.
func gemma4CallGrammar(conv schemaConverter, i int, tool Tool, schema []byte) (string, error) {
	params, err := parseJSON(string(schema))
	if err != nil {
		return "", err
	}
	args, err := gemma4DictGrammar(conv, fmt.Sprintf("tool-%d", i), params)
	if err != nil {
		return "", err
	}
	return gbnfLiteral("call:"+tool.Name) + " " + args, nil
}

// gemma4SchemaGrammar returns the rule of a value of schema in Gemma 4's
// syntax, its rules added to conv under name: a string (its enum's
// strings; a date for format "date"; else text without "<|" of at least
// minLength characters, with maxLength minLength to maxLength characters,
// none a "<") between <|"|> markers; an object as a dict of
// its properties (gemma4DictGrammar); an array of its items' values
// (minItems, maxItems); numbers, integers, booleans and null as the JSON
// schema converter writes them (Gemma 4 writes them as JSON does); any
// other schema, any Gemma 4 value.
func gemma4SchemaGrammar(conv schemaConverter, name string, schema jsonNode) (string, error) {
	if e, ok := schema.get("enum"); ok && e.kind == '[' && len(e.items) > 0 {
		alts := make([]string, len(e.items))
		for j, v := range e.items {
			alts[j] = gbnfLiteral(gemma4Value(v, false))
		}
		return conv.Rule(name, strings.Join(alts, " | ")), nil
	}
	switch upperType(schema) {
	case "STRING":
		if f, ok := schema.get("format"); ok && f.text == "date" {
			return conv.Rule(name, gbnfLiteral(gemma4Quote)+` [0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) `+gbnfLiteral(gemma4Quote)), nil
		}
		text := stringLengthGrammar(schema, `[^<] | "<" [^|]`, `[^<]`)
		return conv.Rule(name, gbnfLiteral(gemma4Quote)+" "+text+" "+gbnfLiteral(gemma4Quote)), nil
	case "OBJECT":
		return gemma4DictGrammar(conv, name, schema)
	case "ARRAY":
		item := gemma4AnyValue(conv)
		if items, ok := schema.get("items"); ok && items.kind == '{' {
			var err error
			if item, err = gemma4SchemaGrammar(conv, name+"-item", items); err != nil {
				return "", err
			}
		}
		lo, hi := 0, -1
		if v, ok := schema.get("minItems"); ok {
			fmt.Sscan(v.text, &lo)
		}
		if v, ok := schema.get("maxItems"); ok {
			fmt.Sscan(v.text, &hi)
		}
		return conv.Rule(name, gbnfLiteral("[")+" "+gbnfList(item, gbnfLiteral(","), lo, hi)+" "+gbnfLiteral("]")), nil
	case "NUMBER", "INTEGER", "BOOLEAN", "NULL":
		return conv.Add(name, []byte(schema.format(compactJSON)))
	}
	return gemma4AnyValue(conv), nil
}

// gbnfList is lo to hi (-1: no bound) items separated by sep.
func gbnfList(item, sep string, lo, hi int) string {
	if hi == 0 {
		return ""
	}
	more := "*"
	switch {
	case hi > 0:
		more = fmt.Sprintf("{%d,%d}", max(lo-1, 0), hi-1)
	case lo > 1:
		more = fmt.Sprintf("{%d,}", lo-1)
	}
	list := item + " ( " + sep + " " + item + " )" + more
	if lo == 0 {
		return "( " + list + " )?"
	}
	return list
}

// gemma4AnyValue is the rule of any Gemma 4 value, llama.cpp's
// gemma4-value (without white space).
func gemma4AnyValue(conv schemaConverter) string {
	conv.Rule("gemma4-string", gbnfLiteral(gemma4Quote)+` ( [^<] | "<" [^|] )* `+gbnfLiteral(gemma4Quote))
	conv.Rule("gemma4-number", `"-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [+-]? [0-9]+ )?`)
	conv.Rule("gemma4-dict", `"{" ( gemma4-key ":" gemma4-value ( "," gemma4-key ":" gemma4-value )* )? "}"`)
	conv.Rule("gemma4-key", `[^:}<]+`)
	conv.Rule("gemma4-array", `"[" ( gemma4-value ( "," gemma4-value )* )? "]"`)
	return conv.Rule("gemma4-value", `gemma4-string | gemma4-dict | gemma4-array | gemma4-number | "true" | "false" | "null"`)
}

// gemma4DictGrammar is the rule of an object of schema as a Gemma 4 dict:
// each property as key:value (keys bare, as the template writes a call's),
// the required ones in the schema's order, then any optional ones in
// order (argListGrammar), "," between two; an object without properties
// is "{}" when additionalProperties is false, else any dict.
func gemma4DictGrammar(conv schemaConverter, name string, schema jsonNode) (string, error) {
	props, ok := schema.get("properties")
	if !ok || props.kind != '{' || len(props.keys) == 0 {
		if extra, ok := schema.get("additionalProperties"); ok && extra.kind == 'f' {
			return conv.Rule(name, gbnfLiteral("{}")), nil
		}
		gemma4AnyValue(conv)
		return "gemma4-dict", nil
	}
	req, _ := schema.get("required")
	args := make([]string, len(props.keys))
	required := make([]bool, len(props.keys))
	for j, key := range props.keys {
		value, err := gemma4SchemaGrammar(conv, fmt.Sprintf("%s-arg-%d", name, j), props.items[j])
		if err != nil {
			return "", fmt.Errorf("properties.%s: %v", key, err)
		}
		args[j] = gbnfLiteral(key+":") + " " + value
		required[j] = holdsString(req, key)
	}
	return conv.Rule(name, argListGrammar(gbnfLiteral("{"), args, required, gbnfLiteral(","), gbnfLiteral("}"))), nil
}
