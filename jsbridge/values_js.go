package jsbridge

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine"
)

// Values from JavaScript are untrusted: an options object may have getters
// or be a Proxy whose traps throw. js.Value.Get and Index do not catch a
// JavaScript exception, which would unwind through the Go stack and leave the
// runtime unusable; Call and Invoke do catch it and panic with a js.Error,
// which the bridge recovers. So every property of a caller's object is read
// with Reflect.get through Call.

// get reads obj[key] (key a string or an int) through Reflect.get.
func (b *Binding) get(obj js.Value, key any) js.Value {
	return b.reflect.Call("get", obj, key)
}

// isNullish reports whether v is undefined or null: an option given as
// either is treated as omitted, as JSON-minded callers send null for absent.
func isNullish(v js.Value) bool { return v.IsUndefined() || v.IsNull() }

// typeBigInt is what typeOf says of a BigInt, a type syscall/js does not
// know: no argument or option takes one, so it is always the wrong type.
const typeBigInt js.Type = -1

// typeOf is v.Type(), which panics ("bad type flag") on a BigInt, the one
// JavaScript type syscall/js has no flag for: typeOf says typeBigInt
// instead, so that a BigInt where the bridge wants a number, a string or an
// object is an invalid argument naming the field, as any other wrong type.
func typeOf(v js.Value) (t js.Type) {
	defer func() {
		if recover() != nil {
			t = typeBigInt
		}
	}()
	return v.Type()
}

// describe renders v for an error message: numbers and booleans as
// JavaScript prints them, strings quoted (and shortened), BigInts as
// "bigint 1", objects by kind.
func (b *Binding) describe(v js.Value) string {
	switch typeOf(v) {
	case typeBigInt:
		return "bigint " + b.stringFn.Invoke(v).String()
	case js.TypeUndefined:
		return "undefined"
	case js.TypeNull:
		return "null"
	case js.TypeBoolean:
		return "boolean " + strconv.FormatBool(v.Bool())
	case js.TypeNumber:
		return formatNumber(v.Float())
	case js.TypeString:
		s := v.String()
		if r := []rune(s); len(r) > 40 {
			s = string(r[:40]) + "…"
		}
		return "string " + strconv.Quote(s)
	case js.TypeSymbol:
		return "a symbol"
	case js.TypeFunction:
		return "a function"
	}
	if b.array.Call("isArray", v).Bool() {
		return "an array"
	}
	return "an object"
}

// formatNumber prints f as JavaScript's String(f) does for the values error
// messages show.
func formatNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if a := math.Abs(f); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	// JavaScript writes 1e+21 and 1.5e-7 where Go writes 1e+21 and 1.5e-07.
	s := strconv.FormatFloat(f, 'g', -1, 64)
	s = strings.Replace(s, "e-0", "e-", 1)
	return strings.Replace(s, "e+0", "e+", 1)
}

// describeThrown renders a thrown JavaScript value (usually an Error) as
// String(value) does: "Error: message".
func (b *Binding) describeThrown(v js.Value) (s string) {
	defer func() {
		if recover() != nil { // String(v) itself threw
			s = "an exception that cannot be printed"
		}
	}()
	return b.stringFn.Invoke(v).String()
}

// invalid is the error of an argument or option named field (as JavaScript
// spells it: "maxTokens", "messages[0].role") whose value is wrong as
// format, args say ("must be a number, got ..."): an *engine.OptionError,
// whose Field is the snake_case name every host shares, so that jsError
// names it in JavaScript's spelling as it does the engine's own.
func invalid(field, format string, args ...any) error {
	return &engine.OptionError{Field: snakeCase(field), Problem: fmt.Sprintf(format, args...)}
}

// invalidCall is the error of a call that is wrong as a whole, not in one
// argument.
func invalidCall(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}

// snakeCase turns a JavaScript name into the shared snake_case one:
// "maxTokens" → "max_tokens" (camelCase undoes it).
func snakeCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// jsField is the JavaScript name of the option a shared snake_case field
// names: its first part in camelCase, the rest as it is
// ("response_format.json_schema.schema" → "responseFormat.json_schema.schema",
// "messages[0].tool_calls" as it is), because what follows the first part
// is inside an OpenAI-shaped object, whose keys JavaScript spells as
// OpenAI does.
func jsField(field string) string {
	i := strings.IndexAny(field, ".[")
	if i < 0 {
		return camelCase(field)
	}
	return camelCase(field[:i]) + field[i:]
}

// camelCase turns snake_case into camelCase: "bos_token_id" → "bosTokenId".
func camelCase(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if p := parts[i]; p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "")
}

// fields reads the properties of one options object, checking each value's
// type and range and naming the JavaScript field in every error.
type fields struct {
	b   *Binding
	obj js.Value // undefined when the caller passed no options
}

// readFields checks that v (named what in errors) is an options object with
// no property outside known; undefined and null mean no options.
func (b *Binding) readFields(v js.Value, what string, known []string) (fields, error) {
	f := fields{b: b, obj: js.Undefined()}
	if isNullish(v) {
		return f, nil
	}
	if typeOf(v) != js.TypeObject || b.array.Call("isArray", v).Bool() {
		return f, invalid(what, "must be an object, got %s", b.describe(v))
	}
	keys := b.object.Call("keys", v)
	for i := range keys.Length() {
		k := keys.Index(i).String()
		if !slices.Contains(known, k) {
			return f, invalidCall("unknown option %q in %s (known: %s)", k, what, strings.Join(known, ", "))
		}
	}
	f.obj = v
	return f, nil
}

// value returns the field's value, or ok = false when it is absent,
// undefined or null.
func (f fields) value(name string) (v js.Value, ok bool) {
	if f.obj.IsUndefined() {
		return v, false
	}
	v = f.b.get(f.obj, name)
	return v, !isNullish(v)
}

// float32Field reads a number field for a float32 parameter: a finite
// number that fits in a float32 (the engine checks its range); def when
// absent.
func (f fields) float32Field(name string, def float32) (float32, error) {
	v, present := f.value(name)
	if !present {
		return def, nil
	}
	if typeOf(v) != js.TypeNumber {
		return 0, invalid(name, "must be a number, got %s", f.b.describe(v))
	}
	x := v.Float()
	if !(math.Abs(x) <= math.MaxFloat32) { // NaN fails too
		return 0, invalid(name, "must be a finite number, got %s", formatNumber(x))
	}
	return float32(x), nil
}

// integer reads an integer field in [lo, hi], described by rule (">= 0");
// def when absent.
func (f fields) integer(name string, def, lo, hi int, rule string) (int, error) {
	v, present := f.value(name)
	if !present {
		return def, nil
	}
	if typeOf(v) != js.TypeNumber {
		return 0, invalid(name, "must be an integer, got %s", f.b.describe(v))
	}
	x := v.Float()
	if x != math.Trunc(x) || x < float64(lo) || x > float64(hi) { // NaN and ±Inf fail too
		return 0, invalid(name, "must be an integer %s, got %s", rule, formatNumber(x))
	}
	return int(x), nil
}

// boolean reads a boolean field; def when absent.
func (f fields) boolean(name string, def bool) (bool, error) {
	v, present := f.value(name)
	if !present {
		return def, nil
	}
	if typeOf(v) != js.TypeBoolean {
		return false, invalid(name, "must be a boolean, got %s", f.b.describe(v))
	}
	return v.Bool(), nil
}

// signal reads the signal option: an AbortSignal, or undefined when absent.
func (f fields) signal() (js.Value, error) {
	sig, ok := f.value("signal")
	if !ok {
		return js.Undefined(), nil
	}
	if f.b.abortSignal.Type() != js.TypeFunction || !sig.InstanceOf(f.b.abortSignal) {
		return js.Undefined(), invalid("signal", "must be an AbortSignal, got %s", f.b.describe(sig))
	}
	return sig, nil
}

// str reads a string argument (not an options field) named what.
func (b *Binding) str(v js.Value, what string) (string, error) {
	if typeOf(v) != js.TypeString {
		return "", invalid(what, "must be a string, got %s", b.describe(v))
	}
	return v.String(), nil
}

// strings reads an array of at most limit strings named what.
func (b *Binding) strings(v js.Value, what string, limit int) ([]string, error) {
	n, err := b.arrayLen(v, what, limit, false)
	if err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		e := b.get(v, i)
		if typeOf(e) != js.TypeString {
			return nil, invalid(fmt.Sprintf("%s[%d]", what, i), "must be a string, got %s", b.describe(e))
		}
		out[i] = e.String()
	}
	return out, nil
}

// stringOrStrings reads a string (one element) or an array of at most
// limit strings named what; listed says which it was.
func (b *Binding) stringOrStrings(v js.Value, what string, limit int) (_ []string, listed bool, _ error) {
	if typeOf(v) == js.TypeString {
		return []string{v.String()}, false, nil
	}
	if !b.array.Call("isArray", v).Bool() {
		return nil, false, invalid(what, "must be a string or an array of strings, got %s", b.describe(v))
	}
	out, err := b.strings(v, what, limit)
	return out, true, err
}

// arg returns args[i], or undefined when the caller passed fewer.
func arg(args []js.Value, i int) js.Value {
	if i < len(args) {
		return args[i]
	}
	return js.Undefined()
}

// maxArrayLen bounds the arrays read element by element (token ids,
// messages, stop strings), so a bogus length cannot make a huge allocation.
const maxArrayLen = 1 << 24

// arrayLen checks that v is an array (or a typed array, when typed is true)
// of at most limit elements and returns its length.
func (b *Binding) arrayLen(v js.Value, what string, limit int, typed bool) (int, error) {
	isArray := b.array.Call("isArray", v).Bool()
	if !isArray && !(typed && b.arrayBuffer.Call("isView", v).Bool() && !v.InstanceOf(b.dataView)) {
		return 0, invalid(what, "must be an array, got %s", b.describe(v))
	}
	n := b.get(v, "length")
	if typeOf(n) != js.TypeNumber || n.Float() > float64(limit) {
		return 0, invalid(what, "must have at most %d elements, got %s", limit, b.describe(n))
	}
	return n.Int(), nil
}

// maxModelBytes bounds a model's size: it is copied into the Go heap, which
// lives in 32-bit WebAssembly memory (4 GiB at most, shared with the KV
// cache and everything else), and a failed allocation would kill the
// runtime instead of returning an error.
const maxModelBytes = 3 << 30

// bytes copies a Uint8Array, another ArrayBuffer view or an ArrayBuffer
// into Go memory.
func (b *Binding) bytes(v js.Value, what string) ([]byte, error) {
	var u8 js.Value
	switch {
	case v.InstanceOf(b.uint8Array):
		u8 = v
	case v.InstanceOf(b.arrayBuffer):
		u8 = b.uint8Array.New(v)
	case typeOf(v) == js.TypeObject && b.arrayBuffer.Call("isView", v).Bool():
		u8 = b.uint8Array.New(b.get(v, "buffer"), b.get(v, "byteOffset"), b.get(v, "byteLength"))
	default:
		return nil, invalid(what, "must be a Uint8Array or an ArrayBuffer, got %s", b.describe(v))
	}
	n := u8.Length()
	if n > maxModelBytes {
		return nil, invalid(what, "is %d bytes; the WebAssembly heap holds at most %d", n, maxModelBytes)
	}
	data := make([]byte, n)
	js.CopyBytesToGo(data, u8)
	return data, nil
}
