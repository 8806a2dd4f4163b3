package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// literalKind names the kind of the JSON value b holds as encoding/json's
// type errors do ("array", "string", "number", "bool", "object").
func literalKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "value"
	case b[0] == '[':
		return "array"
	case b[0] == '{':
		return "object"
	case b[0] == '"':
		return "string"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	case b[0] == 'n':
		return "null"
	}
	return "number"
}

// Decode unmarshals a request body into v, turning every failure into
// the 400 that names the field at fault.
func Decode(body []byte, v any) *Error {
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var (
		ae  *Error
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF), len(bytes.TrimSpace(body)) == 0:
		return BadRequest("", "invalid_json", "the request body is not valid JSON: %v", err)
	case errors.As(err, &ute) && ute.Field == "":
		return BadRequest("", "invalid_type", "the request body must be a JSON object, got %s", jsonValue(ute.Value))
	case errors.As(err, &ute):
		// encoding/json names a field of an embedded struct with the struct's
		// type name first, and an array's element by the array's name; the
		// client knows the JSON path, with the element's index.
		field := withoutEmbedded(ute.Field, reflect.TypeOf(v))
		if p, named := pathAt(body, ute.Offset); named == field {
			field = p
		}
		return BadRequest(field, "invalid_type", "%s must be %s", field, typeMismatch(ute))
	}
	return BadRequest("", "invalid_json", "the request body is not valid JSON: %v", err)
}

// withoutEmbedded is field, a dotted path as encoding/json's type errors
// name it, without the segments that name an embedded struct of t (the Go
// type decoded into): a member of an embedded struct is a member of the
// struct that embeds it in JSON.
func withoutEmbedded(field string, t reflect.Type) string {
	embedded := map[string]bool{}
	collectEmbedded(t, embedded, map[reflect.Type]bool{})
	segments := strings.Split(field, ".")
	kept := segments[:0]
	for _, s := range segments {
		if !embedded[s] {
			kept = append(kept, s)
		}
	}
	return strings.Join(kept, ".")
}

// collectEmbedded adds to names the type names of the embedded structs
// found anywhere in t (through pointers, slices, arrays and maps).
func collectEmbedded(t reflect.Type, names map[string]bool, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			names[f.Name] = true
		}
		collectEmbedded(f.Type, names, seen)
	}
}

// typeMismatch says what a field must be and what it got, as the JS API
// words it ("an integer, got 1.5"). encoding/json reports a number that does
// not fit the field's Go type (1e30 for an int64, 1e400 for a float64) as a
// type error; the client reads it as a range.
func typeMismatch(ute *json.UnmarshalTypeError) string {
	goType := strings.TrimPrefix(ute.Type.String(), "*")
	literal, isNumber := strings.CutPrefix(ute.Value, "number ")
	kind := jsonKind(goType)
	if !isNumber || (kind != "an integer" && kind != "a number") {
		return kind + ", got " + jsonValue(ute.Value)
	}
	f, _ := strconv.ParseFloat(literal, 64) // ±Inf when out of float64's range
	if kind == "a number" || (f == math.Trunc(f) && math.Abs(f) >= 1<<63) {
		return kind + " that fits in 64 bits, got " + literal
	}
	return kind + ", got " + literal
}

// jsonKind names a Go type the way a JSON client thinks of it.
func jsonKind(goType string) string {
	switch {
	case goType == "int" || goType == "int64":
		return "an integer"
	case goType == "float64":
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	}
	return "an object"
}

// jsonValue names a JSON value as encoding/json describes it: "string",
// "number", "array", "object" or "bool".
func jsonValue(v string) string {
	switch v {
	case "array", "object":
		return "an " + v
	case "bool":
		return "a boolean"
	case "null":
		return v
	}
	return "a " + v
}

// Describe names the kind of the JSON value raw as encoding/json's type
// errors do, with its article: "a string", "an array", "a boolean", ...
func Describe(raw []byte) string { return jsonValue(literalKind(raw)) }

// IsNull reports whether a raw JSON value is absent or null.
func IsNull(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// pathAt is the JSON path ("messages[1].role") of the value of body that
// ends at offset, where encoding/json reports a type error (or that begins
// just before it: a composite value it refused at its first byte), and the
// path without its indexes as the error's Field names it ("messages.role");
// "" when body has none. Decode calls it with a body encoding/json found
// valid, so a scan of its bytes suffices; on any other it stops, with "".
func pathAt(body []byte, offset int64) (path, named string) {
	// Each open object or array: the index of the element being read, or
	// the key of the member (wantKey: a key comes next).
	type level struct {
		array   bool
		wantKey bool
		index   int
		key     []byte
	}
	var stack []level
	for i := 0; i < len(body); i++ {
		depth := len(stack) // the levels the path of a value ending at i goes through
		switch c := body[i]; c {
		case '"':
			start := i
			for i++; i < len(body) && body[i] != '"'; i++ {
				if body[i] == '\\' {
					i++
				}
			}
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				stack[n-1].key, stack[n-1].wantKey = body[start+1:min(i, len(body))], false
				continue
			}
		case '{', '[':
			stack = append(stack, level{array: c == '[', wantKey: c == '{'})
		case '}', ']':
			if depth == 0 {
				return "", ""
			}
			stack = stack[:depth-1]
			depth--
		case ',':
			if depth == 0 {
				return "", ""
			}
			if l := &stack[depth-1]; l.array {
				l.index++
			} else {
				l.wantKey = true
			}
			continue
		case ' ', '\t', '\n', '\r', ':':
			continue
		default: // a number, true, false or null
			for i+1 < len(body) && body[i+1] > ' ' && body[i+1] != ',' && body[i+1] != ']' && body[i+1] != '}' {
				i++
			}
		}
		if int64(i+1) < offset {
			continue
		}
		for _, l := range stack[:depth] {
			if l.array {
				path += "[" + strconv.Itoa(l.index) + "]"
				continue
			}
			if path != "" {
				path, named = path+".", named+"."
			}
			path, named = path+string(l.key), named+string(l.key)
		}
		return path, named
	}
	return "", ""
}
