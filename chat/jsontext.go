package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Tool calls travel as JSON, and every format prints that JSON its own way:
// Jinja's tojson (Python's json.dumps: ", " and ": "), tojson(indent=4),
// llama.cpp's dump(2), and the compact text of ToolCall.Arguments. So JSON
// is read into a small ordered tree, which keeps the keys in the order the
// model or the caller wrote them (as Python's dicts and nlohmann's
// ordered_json do, and Go's maps do not) and each number's text as written,
// and printed in the style asked for.

// jsonNode is one JSON value: kind is one of '{', '[', '"', '0' (a number,
// text as written), 't', 'f', 'n'.
type jsonNode struct {
	kind  byte
	text  string     // a string's value, a number's text
	keys  []string   // an object's keys, in order
	items []jsonNode // an object's values (parallel to keys) or an array's items
}

// maxJSONDepth bounds the nesting of JSON read from a model's reply or a
// request, so that hostile input cannot exhaust the stack.
const maxJSONDepth = 256

var errJSONDepth = errors.New("JSON nested too deeply")

// parseJSON reads exactly one JSON value from s (surrounding whitespace
// allowed).
func parseJSON(s string) (jsonNode, error) {
	n, end, err := parseJSONPrefix(s)
	if err != nil {
		return jsonNode{}, err
	}
	if trimLeftSpace(s[end:]) != "" {
		return jsonNode{}, fmt.Errorf("text after the JSON value at offset %d", end)
	}
	return n, nil
}

// parseJSONPrefix reads the JSON value that s starts with (after optional
// whitespace) and returns it with the offset just past it.
func parseJSONPrefix(s string) (jsonNode, int, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	n, err := readJSONNode(d, 0)
	if err != nil {
		return jsonNode{}, 0, err
	}
	return n, int(d.InputOffset()), nil
}

func readJSONNode(d *json.Decoder, depth int) (jsonNode, error) {
	if depth > maxJSONDepth {
		return jsonNode{}, errJSONDepth
	}
	tok, err := d.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return jsonNode{}, err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			n := jsonNode{kind: '{'}
			for d.More() {
				key, err := d.Token()
				if err != nil {
					return jsonNode{}, err
				}
				k, ok := key.(string)
				if !ok {
					return jsonNode{}, fmt.Errorf("object key %v is not a string", key)
				}
				item, err := readJSONNode(d, depth+1)
				if err != nil {
					return jsonNode{}, err
				}
				n.keys = append(n.keys, k)
				n.items = append(n.items, item)
			}
			if _, err := d.Token(); err != nil { // '}'
				return jsonNode{}, err
			}
			return n, nil
		case '[':
			n := jsonNode{kind: '['}
			for d.More() {
				item, err := readJSONNode(d, depth+1)
				if err != nil {
					return jsonNode{}, err
				}
				n.items = append(n.items, item)
			}
			if _, err := d.Token(); err != nil { // ']'
				return jsonNode{}, err
			}
			return n, nil
		}
		return jsonNode{}, fmt.Errorf("unexpected %v", v)
	case string:
		return jsonNode{kind: '"', text: v}, nil
	case json.Number:
		return jsonNode{kind: '0', text: string(v)}, nil
	case bool:
		if v {
			return jsonNode{kind: 't'}, nil
		}
		return jsonNode{kind: 'f'}, nil
	case nil:
		return jsonNode{kind: 'n'}, nil
	}
	return jsonNode{}, fmt.Errorf("unexpected token %v", tok)
}

// get returns the value of key in an object (the last, if repeated).
func (n jsonNode) get(key string) (jsonNode, bool) {
	if n.kind != '{' {
		return jsonNode{}, false
	}
	for i := len(n.keys) - 1; i >= 0; i-- {
		if n.keys[i] == key {
			return n.items[i], true
		}
	}
	return jsonNode{}, false
}

func jsonString(s string) jsonNode { return jsonNode{kind: '"', text: s} }

// jsonObject builds an object from key, value pairs.
func jsonObject(keys []string, values ...jsonNode) jsonNode {
	return jsonNode{kind: '{', keys: keys, items: values}
}

// jsonStyle is how a JSON value is printed.
type jsonStyle struct {
	indent  string // one level of indentation; "" prints one line
	itemSep string // between items on one line
	keySep  string // between a key and its value
}

var (
	// compactJSON has no spaces: ToolCall.Arguments.
	compactJSON = jsonStyle{itemSep: ",", keySep: ":"}
	// pyJSON is Python's json.dumps and Jinja's tojson: ", " and ": ".
	pyJSON = jsonStyle{itemSep: ", ", keySep: ": "}
)

// indentedJSON is json.dumps(indent=n), nlohmann's dump(n) and
// tojson(indent=n): one item a line, "," at line ends, ": " after keys.
func indentedJSON(n int) jsonStyle {
	return jsonStyle{indent: strings.Repeat(" ", n), itemSep: ",", keySep: ": "}
}

func (n jsonNode) format(style jsonStyle) string {
	var b strings.Builder
	n.write(&b, style, 0)
	return b.String()
}

func (n jsonNode) write(b *strings.Builder, style jsonStyle, depth int) {
	switch n.kind {
	case '{', '[':
		open, end := byte('{'), byte('}')
		if n.kind == '[' {
			open, end = '[', ']'
		}
		b.WriteByte(open)
		if len(n.items) == 0 {
			b.WriteByte(end)
			return
		}
		for i, item := range n.items {
			if i > 0 {
				b.WriteString(style.itemSep)
			}
			if style.indent != "" {
				b.WriteByte('\n')
				b.WriteString(strings.Repeat(style.indent, depth+1))
			}
			if n.kind == '{' {
				writeJSONString(b, n.keys[i])
				b.WriteString(style.keySep)
			}
			item.write(b, style, depth+1)
		}
		if style.indent != "" {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(style.indent, depth))
		}
		b.WriteByte(end)
	case '"':
		writeJSONString(b, n.text)
	case '0':
		b.WriteString(n.text)
	case 't':
		b.WriteString("true")
	case 'f':
		b.WriteString("false")
	default:
		b.WriteString("null")
	}
}

// writeJSONString quotes s as Python's json.dumps(ensure_ascii=False),
// JavaScript's JSON.stringify and nlohmann's dump all do: only '"', '\\'
// and control characters are escaped (\b \f \n \r \t, the rest as \u00xx),
// never '<', '>', '&' or U+2028 (which Go's encoder escapes).
func writeJSONString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteString("\ufffd")
			} else {
				b.WriteString(s[i : i+size])
			}
			i += size
			continue
		}
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			} else {
				b.WriteByte(c)
			}
		}
		i++
	}
	b.WriteByte('"')
}

// quoteJSON returns s as a JSON string literal (see writeJSONString).
func quoteJSON(s string) string {
	var b strings.Builder
	writeJSONString(&b, s)
	return b.String()
}
