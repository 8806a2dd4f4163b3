package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
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
		// type name first; the client knows only the JSON path.
		field := strings.TrimPrefix(ute.Field, "SamplingRequest.")
		return BadRequest(field, "invalid_type", "%s must be %s", field, typeMismatch(ute))
	}
	return BadRequest("", "invalid_json", "the request body is not valid JSON: %v", err)
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
