package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// kind is the JSON type of a value.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// value is a JSON value that keeps its objects' keys in the order they were
// written: llama.cpp orders an object's properties as its schema lists them.
type value struct {
	kind kind
	b    bool
	num  json.Number // the number's text, as written
	str  string
	arr  []*value
	obj  []member
}

// member is one key of an object.
type member struct {
	key string
	val *value
}

// get is the value of key in an object, or nil.
func (v *value) get(key string) *value {
	if v == nil || v.kind != kindObject {
		return nil
	}
	for _, m := range v.obj {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// has reports whether the object v has key.
func (v *value) has(key string) bool { return v.get(key) != nil }

// decode reads one JSON value from data, keeping key order, refusing
// duplicate keys, trailing data, and nesting deeper than maxDepth.
func decode(data []byte) (*value, error) {
	if len(data) > MaxSchemaBytes {
		return nil, &Error{Pointer: "", Msg: fmt.Sprintf("the schema is %d bytes, more than MaxSchemaBytes (%d)", len(data), MaxSchemaBytes), Err: ErrLimit}
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d, 0, "")
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, &Error{Msg: "data after the schema", Err: ErrInvalid}
	}
	return v, nil
}

func decodeValue(d *json.Decoder, depth int, ptr string) (*value, error) {
	tok, err := d.Token()
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, &Error{Pointer: ptr, Msg: "not JSON: " + err.Error(), Err: ErrInvalid}
		}
		return nil, &Error{Pointer: ptr, Msg: "not JSON: " + err.Error(), Err: ErrInvalid}
	}
	switch t := tok.(type) {
	case nil:
		return &value{kind: kindNull}, nil
	case bool:
		return &value{kind: kindBool, b: t}, nil
	case json.Number:
		return &value{kind: kindNumber, num: t}, nil
	case string:
		return &value{kind: kindString, str: t}, nil
	case json.Delim:
		if depth >= MaxDepth {
			return nil, &Error{Pointer: ptr, Msg: fmt.Sprintf("nested deeper than MaxDepth (%d)", MaxDepth), Err: ErrLimit}
		}
		v := &value{kind: kindArray}
		var keys map[string]bool // an object's, to refuse duplicates
		if t == '{' {
			v.kind, keys = kindObject, map[string]bool{}
		}
		for d.More() {
			if v.kind == kindArray {
				e, err := decodeValue(d, depth+1, ptr+"/"+strconv.Itoa(len(v.arr)))
				if err != nil {
					return nil, err
				}
				v.arr = append(v.arr, e)
				continue
			}
			kt, err := d.Token()
			if err != nil {
				return nil, &Error{Pointer: ptr, Msg: "not JSON: " + err.Error(), Err: ErrInvalid}
			}
			key, _ := kt.(string)
			if keys[key] {
				return nil, &Error{Pointer: ptr, Msg: fmt.Sprintf("duplicate key %q", key), Err: ErrInvalid}
			}
			e, err := decodeValue(d, depth+1, ptr+"/"+escapePointer(key))
			if err != nil {
				return nil, err
			}
			keys[key] = true
			v.obj = append(v.obj, member{key, e})
		}
		if _, err := d.Token(); err != nil { // the closing delimiter
			return nil, &Error{Pointer: ptr, Msg: "not JSON: " + err.Error(), Err: ErrInvalid}
		}
		return v, nil
	}
	return nil, &Error{Pointer: ptr, Msg: fmt.Sprintf("not JSON: unexpected %v", tok), Err: ErrInvalid}
}

// escapePointer escapes a key as a JSON pointer's reference token (RFC 6901).
func escapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// unescapePointer undoes escapePointer.
func unescapePointer(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}

// encode writes v as compact JSON, keys in their order and numbers as
// written: the text a const or enum value must be generated as (llama.cpp's
// C++ converter dumps values the same way, compact and unescaped UTF-8).
func (v *value) encode(b *strings.Builder) {
	switch v.kind {
	case kindNull:
		b.WriteString("null")
	case kindBool:
		b.WriteString(strconv.FormatBool(v.b))
	case kindNumber:
		b.WriteString(v.num.String())
	case kindString:
		encodeString(b, v.str)
	case kindArray:
		b.WriteByte('[')
		for i, e := range v.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			e.encode(b)
		}
		b.WriteByte(']')
	case kindObject:
		b.WriteByte('{')
		for i, m := range v.obj {
			if i > 0 {
				b.WriteByte(',')
			}
			encodeString(b, m.key)
			b.WriteByte(':')
			m.val.encode(b)
		}
		b.WriteByte('}')
	}
}

// encodeString writes s as a JSON string as nlohmann::json dumps it: the
// short escapes, \u00XX for other control characters, the rest as is.
func encodeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
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
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// text is v encoded.
func (v *value) text() string {
	var b strings.Builder
	v.encode(&b)
	return b.String()
}

// equal reports whether a and b are the same JSON value (numbers by their
// text, as written).
func equal(a, b *value) bool {
	return a.text() == b.text()
}
