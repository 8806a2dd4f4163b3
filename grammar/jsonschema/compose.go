package jsonschema

import (
	"strconv"
	"strings"
)

// resolveRef converts the target of a "$ref" (a JSON pointer into the
// schema: "#", "#/$defs/a", "#/definitions/a", any "#/..." path) once, and
// returns its rule. A target referred to from inside itself gets its rule's
// name before its conversion ends (recursive schemas).
func (v *visitor) resolveRef(r *value, ptr string) (string, error) {
	if r.kind != kindString {
		return "", failAt(ptr, "$ref", ErrInvalid, `"$ref" must be a string`)
	}
	frag, ok := strings.CutPrefix(r.str, "#")
	if !ok || frag != "" && !strings.HasPrefix(frag, "/") {
		return "", failAt(ptr, "$ref", ErrUnsupported, `"$ref" %q is not supported: only references inside the schema ("#/...") are`, r.str)
	}
	if st, ok := v.refs[frag]; ok {
		if st.resolving {
			if st.nested == v.nested {
				return "", failAt(ptr, "$ref", ErrUnsupported, `"$ref" %q refers to itself with no object or array between (a left-recursive grammar)`, r.str)
			}
			st.used = true
		}
		return st.name, nil
	}
	target, err := v.pointer(frag, ptr, r.str)
	if err != nil {
		return "", err
	}
	// llama.cpp's name: "ref" and the pointer, sanitised.
	st := &ref{name: v.c.reserve("ref" + frag), resolving: true, nested: v.nested}
	v.refs[frag] = st
	claim := v.c.claim
	v.c.claim = st.name
	name, err := v.visit(target, st.name, frag)
	v.c.claim = claim
	st.resolving = false
	if err != nil {
		return "", err
	}
	if name != st.name {
		if st.used {
			v.c.set(st.name, name, v.c.family[st.name]) // the rules inside refer to it by its name
		} else {
			delete(v.c.pending, st.name)
			st.name = name
		}
	}
	return st.name, nil
}

// pointer follows a JSON pointer from the schema's root.
func (v *visitor) pointer(frag, ptr, ref string) (*value, error) {
	target := v.root
	if frag == "" {
		return target, nil
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = unescapePointer(tok)
		var next *value
		switch target.kind {
		case kindObject:
			next = target.get(tok)
		case kindArray:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(target.arr) {
				next = target.arr[i]
			}
		}
		if next == nil {
			return nil, failAt(ptr, "$ref", ErrInvalid, `"$ref" %q: %q not found`, ref, tok)
		}
		target = next
	}
	return target, nil
}

// union is anyOf or oneOf: llama.cpp's union of the alternatives. oneOf
// (exactly one alternative matches) is taken only when no two alternatives
// can match the same value.
func (v *visitor) union(s *value, name, ruleName, ptr string) (string, error) {
	key := "anyOf"
	if s.has("oneOf") {
		if s.has("anyOf") {
			return "", failAt(ptr, "anyOf", ErrUnsupported, `"anyOf" beside "oneOf" is not supported`)
		}
		key = "oneOf"
	}
	if err := v.check(s, ptr, "", key); err != nil {
		return "", err
	}
	alts := s.get(key)
	if alts.kind != kindArray || len(alts.arr) == 0 {
		return "", failAt(ptr, key, ErrInvalid, "%q must be a non-empty array", key)
	}
	if key == "oneOf" {
		shapes := make([]shape, len(alts.arr))
		for i, a := range alts.arr {
			shapes[i] = v.shapeOf(a, 0)
			for j := range i {
				if shapes[j].overlaps(shapes[i]) {
					return "", failAt(ptr, "oneOf", ErrUnsupported, `"oneOf" alternatives %d and %d may both match a value, which "oneOf" forbids: not supported (use "anyOf")`, j, i)
				}
			}
		}
	}
	return v.alternatives(alts.arr, name, ruleName, ptr+"/"+key)
}

// alternatives adds the rule matching any of alts (llama.cpp's
// _generate_union_rule).
func (v *visitor) alternatives(alts []*value, name, ruleName, ptr string) (string, error) {
	rules := make([]string, len(alts))
	for i, a := range alts {
		sub := name + "-" + strconv.Itoa(i)
		if name == "" {
			sub = "alternative-" + strconv.Itoa(i)
		}
		r, err := v.visit(a, sub, ptr+"/"+strconv.Itoa(i))
		if err != nil {
			return "", err
		}
		rules[i] = r
	}
	return v.c.addRule(ruleName, strings.Join(rules, " | ")), nil
}

// typeUnion is a "type" array: one alternative per type, each the schema
// with that type.
func (v *visitor) typeUnion(s *value, name, ruleName, ptr string) (string, error) {
	types := s.get("type").arr
	if len(types) == 0 {
		return "", failAt(ptr, "type", ErrInvalid, `"type" must not be an empty array`)
	}
	alts := make([]*value, len(types))
	for i, t := range types {
		if t.kind != kindString || !containsString(schemaTypes, t.str) {
			return "", failAt(ptr, "type", ErrInvalid, `"type" must be one of %s or an array of them`, strings.Join(schemaTypes, ", "))
		}
		alt := &value{kind: kindObject}
		for _, m := range s.obj {
			if m.key == "type" {
				m.val = t
			}
			alt.obj = append(alt.obj, m)
		}
		alts[i] = alt
	}
	// The alternatives' keywords are the schema's: errors point at it.
	rules := make([]string, len(alts))
	for i, a := range alts {
		sub := name + "-" + strconv.Itoa(i)
		if name == "" {
			sub = "alternative-" + strconv.Itoa(i)
		}
		r, err := v.visit(a, sub, ptr)
		if err != nil {
			return "", err
		}
		rules[i] = r
	}
	return v.c.addRule(ruleName, strings.Join(rules, " | ")), nil
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// literals is const or enum: the values' JSON texts, compact (see
// value.encode), those of another type than "type" left out.
func (v *visitor) literals(s *value, typ, ruleName, ptr string) (string, error) {
	key := "enum"
	if s.has("const") {
		if s.has("enum") {
			return "", failAt(ptr, "enum", ErrUnsupported, `"enum" beside "const" is not supported`)
		}
		key = "const"
	}
	if err := v.check(s, ptr, "", key, "type"); err != nil {
		return "", err
	}
	vals := []*value{s.get("const")}
	if key == "enum" {
		e := s.get("enum")
		if e.kind != kindArray || len(e.arr) == 0 {
			return "", failAt(ptr, "enum", ErrInvalid, `"enum" must be a non-empty array`)
		}
		vals = e.arr
	}
	var alts []string
	for _, val := range vals {
		if typ != "" && !hasType(val, typ) {
			continue
		}
		alts = append(alts, formatLiteral(val.text()))
	}
	if len(alts) == 0 {
		return "", failAt(ptr, key, ErrInvalid, "no value of %q has \"type\" %q", key, typ)
	}
	if key == "const" {
		return v.c.addRule(ruleName, alts[0]), nil
	}
	return v.c.addRule(ruleName, "("+strings.Join(alts, " | ")+")"), nil
}

// hasType reports whether val is of JSON Schema type typ.
func hasType(val *value, typ string) bool {
	switch typ {
	case "integer":
		_, ok := integerValue(val)
		return ok
	case "number":
		return val.kind == kindNumber
	}
	return kindNames[val.kind] == typ
}

var kindNames = [...]string{kindNull: "null", kindBool: "boolean", kindNumber: "number", kindString: "string", kindArray: "array", kindObject: "object"}

// format is a string format: uuid (and llama.cpp's uuid1 to uuid5, the
// same rule: the version is not checked), date, time, date-time.
func (v *visitor) format(s *value, ruleName, ptr string) (string, error) {
	if err := v.check(s, ptr, "string", "format"); err != nil {
		return "", err
	}
	f := s.get("format")
	if f.kind != kindString {
		return "", failAt(ptr, "format", ErrInvalid, `"format" must be a string`)
	}
	if isUUIDFormat(f.str) {
		name := f.str
		if ruleName == "root" {
			name = "root"
		}
		return v.c.addPrimitive(name, primitives["uuid"]), nil
	}
	prim, ok := formats[f.str+"-string"]
	if !ok {
		return "", failAt(ptr, "format", ErrUnsupported, `"format" %q is not supported (date, time, date-time, uuid are)`, f.str)
	}
	return v.c.addRule(ruleName, v.c.addPrimitive(f.str+"-string", prim)), nil
}

// isUUIDFormat reports whether a "format" is uuid, or uuid1 to uuid5:
// llama.cpp's ^uuid[1-5]?$. (Not a regexp: package regexp would add 120 KB,
// gzipped, to the edge worker.)
func isUUIDFormat(f string) bool {
	rest, ok := strings.CutPrefix(f, "uuid")
	return ok && (rest == "" || len(rest) == 1 && '1' <= rest[0] && rest[0] <= '5')
}

// shape is what a oneOf alternative may match, to tell whether two can
// match one value: the JSON types, and for literals their texts; for
// objects, their required properties that are literals.
type shape struct {
	kinds    uint8           // 1<<kind
	literals map[string]bool // nil: not only literals
	tags     map[string]map[string]bool
}

func (a shape) overlaps(b shape) bool {
	if a.kinds&b.kinds == 0 {
		return false
	}
	if a.literals != nil && b.literals != nil {
		for l := range a.literals {
			if b.literals[l] {
				return true
			}
		}
		return false
	}
	if a.kinds == 1<<kindObject && b.kinds == 1<<kindObject {
		for p, av := range a.tags {
			if bv, ok := b.tags[p]; ok && !intersect(av, bv) {
				return false
			}
		}
	}
	return true
}

func intersect(a, b map[string]bool) bool {
	for k := range a {
		if b[k] {
			return true
		}
	}
	return false
}

// maxShapeSteps bounds the work of the oneOf checks of one schema: past it
// a shape is "anything", and alternatives overlap.
const maxShapeSteps = 100000

const anyKind = 1<<kindNull | 1<<kindBool | 1<<kindNumber | 1<<kindString | 1<<kindArray | 1<<kindObject

// shapeOf is a conservative shape of s: never narrower than its values.
func (v *visitor) shapeOf(s *value, depth int) shape {
	all := shape{kinds: anyKind}
	// A budget keeps branching references from taking exponential time.
	if v.shapeSteps++; s.kind != kindObject || depth > 8 || v.shapeSteps > maxShapeSteps {
		return all
	}
	if r := s.get("$ref"); r != nil && r.kind == kindString {
		if frag, ok := strings.CutPrefix(r.str, "#"); ok {
			if t, err := v.pointer(frag, "", r.str); err == nil {
				return v.shapeOf(t, depth+1)
			}
		}
		return all
	}
	var lits []*value
	if c := s.get("const"); c != nil {
		lits = []*value{c}
	} else if e := s.get("enum"); e != nil && e.kind == kindArray {
		lits = e.arr
	}
	if lits != nil {
		sh := shape{literals: map[string]bool{}}
		for _, l := range lits {
			sh.kinds |= 1 << l.kind
			sh.literals[canonical(l)] = true
		}
		return sh
	}
	if alts := s.get("anyOf"); alts != nil && alts.kind == kindArray {
		return v.shapeUnion(alts.arr, depth)
	}
	if alts := s.get("oneOf"); alts != nil && alts.kind == kindArray {
		return v.shapeUnion(alts.arr, depth)
	}
	sh := all
	switch t := s.get("type"); {
	case t != nil && t.kind == kindString:
		sh.kinds = kindBit(t.str)
	case t != nil && t.kind == kindArray:
		sh.kinds = 0
		for _, e := range t.arr {
			if e.kind == kindString {
				sh.kinds |= kindBit(e.str)
			}
		}
	case s.has("properties") || s.has("additionalProperties"):
		sh.kinds = 1 << kindObject
	case s.has("items") || s.has("prefixItems"):
		sh.kinds = 1 << kindArray
	case hasAny(s, "pattern", "format", "minLength", "maxLength"):
		sh.kinds = 1 << kindString
	}
	if sh.kinds == 1<<kindObject {
		sh.tags = v.tags(s, depth)
	}
	return sh
}

func (v *visitor) shapeUnion(alts []*value, depth int) shape {
	sh := shape{literals: map[string]bool{}}
	for _, a := range alts {
		as := v.shapeOf(a, depth+1)
		sh.kinds |= as.kinds
		if as.literals == nil || sh.literals == nil {
			sh.literals = nil
			continue
		}
		for l := range as.literals {
			sh.literals[l] = true
		}
	}
	return sh
}

// tags are an object schema's required properties whose values are
// literals: two objects differing in one cannot both match.
func (v *visitor) tags(s *value, depth int) map[string]map[string]bool {
	props, req := s.get("properties"), s.get("required")
	if props == nil || req == nil || req.kind != kindArray {
		return nil
	}
	tags := map[string]map[string]bool{}
	for _, r := range req.arr {
		if r.kind != kindString || props.get(r.str) == nil {
			continue
		}
		if sh := v.shapeOf(props.get(r.str), depth+1); sh.literals != nil {
			tags[r.str] = sh.literals
		}
	}
	return tags
}

// canonical is a literal's identity: numbers by value, as JSON compares
// them (1 and 1.0 are one value).
func canonical(l *value) string {
	if l.kind == kindNumber {
		if d, ok := parseDecimal(l.num.String()); ok {
			return "n" + d.key()
		}
	}
	return l.text()
}

func kindBit(t string) uint8 {
	switch t {
	case "integer", "number":
		return 1 << kindNumber
	case "null":
		return 1 << kindNull
	case "boolean":
		return 1 << kindBool
	case "string":
		return 1 << kindString
	case "array":
		return 1 << kindArray
	case "object":
		return 1 << kindObject
	}
	return anyKind
}
