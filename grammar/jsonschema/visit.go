package jsonschema

import (
	"fmt"
	"slices"
	"strings"
)

// visitor converts the subschemas of one schema (one Add).
type visitor struct {
	c     *Converter
	root  *value
	refs  map[string]*ref // by JSON pointer
	depth int
	// nested counts the objects and arrays around the subschema being
	// visited: a "$ref" cycle that encloses none would be a left-recursive
	// grammar, which llama.cpp refuses.
	nested int
	// shapeSteps counts shapeOf's calls (maxShapeSteps).
	shapeSteps int
}

// ref is one "$ref" target.
type ref struct {
	name      string // its rule, reserved while it is converted
	resolving bool
	nested    int  // visitor.nested when its conversion began
	used      bool // referred to while being converted
}

// fail is an error at ptr.
func fail(ptr string, err error, format string, args ...any) error {
	return &Error{Pointer: ptr, Msg: fmt.Sprintf(format, args...), Err: err}
}

// schemaTypes are the values "type" may name.
var schemaTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

// typeOf is s's "type" when it is one name ("" when absent).
func typeOf(s *value, ptr string) (string, error) {
	t := s.get("type")
	if t == nil || t.kind == kindArray {
		return "", nil
	}
	if t.kind != kindString || !slices.Contains(schemaTypes, t.str) {
		return "", failAt(ptr, "type", ErrInvalid, `"type" must be one of %s or an array of them`, strings.Join(schemaTypes, ", "))
	}
	return t.str, nil
}

// alternativesKeyword is the keyword whose values or subschemas s's rule
// chooses among ("enum", "anyOf", "oneOf"), or "".
func alternativesKeyword(s *value) string {
	for _, k := range []string{"enum", "anyOf", "oneOf"} {
		if s.kind == kindObject && s.has(k) {
			return k
		}
	}
	return ""
}

// visit is llama.cpp's visit: it adds the rules matching s's values and
// returns the name of the one matching them all.
func (v *visitor) visit(s *value, name, ptr string) (rule string, err error) {
	defer func() {
		if err == nil {
			v.c.note(rule, ptr, alternativesKeyword(s))
		}
	}()
	if v.c.err != nil {
		return "", v.c.err
	}
	if v.depth >= MaxDepth {
		return "", fail(ptr, ErrLimit, "subschemas nested deeper than MaxDepth (%d)", MaxDepth)
	}
	v.depth++
	defer func() { v.depth-- }()
	if s.kind == kindBool {
		if !s.b {
			return "", fail(ptr, ErrUnsupported, "the schema false (no value) is supported only as a property, items or additionalProperties")
		}
		s = &value{kind: kindObject}
	}
	if s.kind != kindObject {
		return "", fail(ptr, ErrInvalid, "a schema must be an object or a boolean")
	}
	ruleName := name
	if reserved(name) {
		ruleName = name + "-"
	} else if name == "" {
		ruleName = "root"
	}
	typ, err := typeOf(s, ptr)
	if err != nil {
		return "", err
	}
	c := v.c
	switch {
	case s.has("$ref"):
		if err := v.check(s, ptr, "", "$ref"); err != nil {
			return "", err
		}
		target, err := v.resolveRef(s.get("$ref"), ptr)
		if err != nil {
			return "", err
		}
		return c.addRule(ruleName, target), nil

	case s.has("oneOf") || s.has("anyOf"):
		return v.union(s, name, ruleName, ptr)

	case s.get("type") != nil && s.get("type").kind == kindArray:
		return v.typeUnion(s, name, ruleName, ptr)

	case s.has("const") || s.has("enum"):
		return v.literals(s, typ, ruleName, ptr)

	case (typ == "" || typ == "object") && (s.has("properties") || s.has("additionalProperties") && !isTrue(s.get("additionalProperties"))):
		if err := v.check(s, ptr, "object", "properties", "required", "additionalProperties"); err != nil {
			return "", err
		}
		body, err := v.object(s, name, ptr)
		if err != nil {
			return "", err
		}
		return c.addRule(ruleName, body), nil

	case (typ == "" || typ == "object" || typ == "string") && s.has("allOf"):
		return v.allOf(s, name, ruleName, ptr)

	case (typ == "" || typ == "array") && (s.has("items") || s.has("prefixItems")) ||
		typ == "array" && (s.has("minItems") || s.has("maxItems")):
		if err := v.check(s, ptr, "array", "items", "prefixItems", "additionalItems", "minItems", "maxItems"); err != nil {
			return "", err
		}
		body, err := v.array(s, name, ptr)
		if err != nil {
			return "", err
		}
		return c.addRule(ruleName, body), nil

	case (typ == "" || typ == "string") && s.has("pattern"):
		if err := v.check(s, ptr, "string", "pattern"); err != nil {
			return "", err
		}
		p := s.get("pattern")
		if p.kind != kindString {
			return "", failAt(ptr, "pattern", ErrInvalid, `"pattern" must be a string`)
		}
		body, err := patternRule(p.str)
		if err != nil {
			return "", failAt(ptr, "pattern", errKind(err), `"pattern" %q: %v`, p.str, err)
		}
		if strings.Contains(body, "char*") {
			c.addPrimitive("char", primitives["char"])
		}
		return c.addRule(ruleName, `"\"" (`+body+`) "\""`), nil

	case (typ == "" || typ == "string") && s.has("format"):
		return v.format(s, ruleName, ptr)

	case (typ == "" || typ == "string") && (s.has("minLength") || s.has("maxLength")):
		if err := v.check(s, ptr, "string", "minLength", "maxLength"); err != nil {
			return "", err
		}
		lo, hi, err := bounds(s, ptr, "minLength", "maxLength")
		if err != nil {
			return "", err
		}
		char := c.addPrimitive("char", primitives["char"])
		return c.addRule(ruleName, `"\"" `+repetition(char, lo, hi, "")+` "\""`), nil

	case (typ == "" || typ == "integer" || typ == "number") && hasAny(s, "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
		if typ == "" {
			typ = "number"
		}
		if err := v.check(s, ptr, typ, "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"); err != nil {
			return "", err
		}
		lo, hi, err := numberBounds(s, ptr, typ == "integer")
		if err != nil {
			return "", err
		}
		var body string
		if typ == "integer" {
			body = "(" + intRange(lo, hi) + ")"
		} else {
			body = numberRange(lo, hi)
		}
		return c.addRule(ruleName, body), nil

	case typ == "object" || typ == "":
		if err := v.check(s, ptr, typ, "additionalProperties"); err != nil {
			return "", err
		}
		if typ == "" {
			return c.addRule(ruleName, c.addPrimitive("value", primitives["value"])), nil
		}
		return c.addRule(ruleName, c.addPrimitive("object", primitives["object"])), nil

	default:
		if err := v.check(s, ptr, typ); err != nil {
			return "", err
		}
		if ruleName != "root" {
			ruleName = typ
		}
		return c.addPrimitive(ruleName, primitives[typ]), nil
	}
}

// check fails on a keyword of s that restricts the values the branch
// generates (of type typ, "" for all types) other than those it handles
// (handled, and "type" when typ is set): the grammar would accept values
// the schema rejects. Annotations, unknown keywords and keywords about other types
// pass.
func (v *visitor) check(s *value, ptr, typ string, handled ...string) error {
	for _, m := range s.obj {
		k := m.key
		// "type" is the branch's own when it generates one type.
		if annotations[k] || k == "type" && typ != "" || slices.Contains(handled, k) {
			continue
		}
		types, known := keywordTypes[k]
		if !known || typ != "" && types != nil && !slices.Contains(types, typ) && !(typ == "integer" && slices.Contains(types, "number")) {
			continue
		}
		if vacuous(k, m.val) {
			continue
		}
		switch {
		case len(handled) > 0 && slices.Contains([]string{"$ref", "anyOf", "oneOf", "enum", "const", "allOf"}, handled[0]):
			return failAt(ptr, k, ErrUnsupported, "%q beside %q is not supported", k, handled[0])
		case types != nil && typ == "":
			return failAt(ptr, k, ErrUnsupported, "%q is not supported without \"type\": %q", k, types[0])
		case len(handled) > 0 && types != nil && !neverSupported[k]:
			return failAt(ptr, k, ErrUnsupported, "%q is not supported together with %q", k, handled[0])
		}
		return failAt(ptr, k, ErrUnsupported, "%q is not supported", k)
	}
	return nil
}

// neverSupported are the restricting keywords no branch takes: an error
// names them alone, not beside another keyword of the schema.
var neverSupported = map[string]bool{
	"multipleOf": true, "patternProperties": true, "propertyNames": true, "minProperties": true,
	"maxProperties": true, "dependentRequired": true, "dependentSchemas": true, "dependencies": true,
	"unevaluatedProperties": true, "uniqueItems": true, "contains": true, "minContains": true,
	"maxContains": true, "unevaluatedItems": true, "additionalItems": true,
}

// vacuous reports whether keyword k with value val restricts nothing.
func vacuous(k string, val *value) bool {
	switch k {
	case "uniqueItems":
		return val.kind == kindBool && !val.b
	case "minItems", "minLength", "minProperties", "minContains":
		return val.kind == kindNumber && val.num == "0"
	case "additionalItems", "unevaluatedItems", "unevaluatedProperties", "propertyNames", "contains":
		return isTrue(val) && k != "contains"
	}
	return false
}

// isTrue reports whether a schema is true or {} (either accepts anything).
func isTrue(s *value) bool {
	return s != nil && (s.kind == kindBool && s.b || s.kind == kindObject && len(s.obj) == 0)
}

// isFalse reports whether a schema is false.
func isFalse(s *value) bool { return s != nil && s.kind == kindBool && !s.b }

// hasAny reports whether s has one of keys.
func hasAny(s *value, keys ...string) bool {
	return slices.ContainsFunc(keys, s.has)
}

// count reads a non-negative integer keyword, bounded by MaxRepeat (-1 when
// absent).
func count(s *value, ptr, key string) (int, error) {
	n := s.get(key)
	if n == nil {
		return -1, nil
	}
	f, ok := integerValue(n)
	if !ok || f.sign() < 0 {
		return 0, failAt(ptr, key, ErrInvalid, "%q must be a non-negative integer", key)
	}
	v, ok := f.int64()
	if !ok || v > MaxRepeat {
		return 0, failAt(ptr, key, ErrLimit, "%q is %s, more than MaxRepeat (%d)", key, n.num, MaxRepeat)
	}
	return int(v), nil
}

// failAt is an error at keyword key of the schema at ptr.
func failAt(ptr, key string, err error, format string, args ...any) error {
	return &Error{Pointer: ptr, Keyword: key, Msg: fmt.Sprintf(format, args...), Err: err}
}

// bounds reads a minimum and maximum count (hi -1: no maximum).
func bounds(s *value, ptr, minKey, maxKey string) (lo, hi int, err error) {
	if lo, err = count(s, ptr, minKey); err != nil {
		return 0, 0, err
	}
	if hi, err = count(s, ptr, maxKey); err != nil {
		return 0, 0, err
	}
	lo = max(lo, 0)
	if hi >= 0 && hi < lo {
		return 0, 0, failAt(ptr, maxKey, ErrInvalid, "%q is less than %q: no value is valid", maxKey, minKey)
	}
	if lo > MaxMinRepeat {
		return 0, 0, failAt(ptr, minKey, ErrLimit, "%q is %d, more than MaxMinRepeat (%d), the largest minimum a grammar repetition takes", minKey, lo, MaxMinRepeat)
	}
	if hi > MaxMaxRepeat {
		return 0, 0, failAt(ptr, maxKey, ErrLimit, "%q is %d, more than MaxMaxRepeat (%d), the largest maximum a grammar repetition takes", maxKey, hi, MaxMaxRepeat)
	}
	return lo, hi, nil
}

// integerValue is a number's value when it is an integer (1.0 is).
func integerValue(n *value) (decimal, bool) {
	if n.kind != kindNumber {
		return decimal{}, false
	}
	d, ok := parseDecimal(n.num.String())
	return d, ok && d.isInt()
}

// repetition is llama.cpp's build_repetition: item repeated lo to hi times
// (hi -1: no maximum), separated by separator when it is not "".
func repetition(item string, lo, hi int, separator string) string {
	if hi == 0 {
		return ""
	}
	if lo == 0 && hi == 1 {
		return item + "?"
	}
	if separator == "" {
		switch {
		case lo == 1 && hi < 0:
			return item + "+"
		case lo == 0 && hi < 0:
			return item + "*"
		case hi < 0:
			return fmt.Sprintf("%s{%d,}", item, lo)
		}
		return fmt.Sprintf("%s{%d,%d}", item, lo, hi)
	}
	restHi := hi
	if hi > 0 {
		restHi = hi - 1
	}
	result := item + " " + repetition("("+separator+" "+item+")", max(lo-1, 0), restHi, "")
	if lo == 0 {
		return "(" + result + ")?"
	}
	return result
}
