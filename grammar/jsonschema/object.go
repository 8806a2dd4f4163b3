package jsonschema

import (
	"slices"
	"strconv"
	"strings"
)

// property is one property of an object schema.
type property struct {
	name   string
	schema *value
	ptr    string
}

// object is the body of an object schema's rule, llama.cpp's
// _build_object_rule over its "properties", "required" and
// "additionalProperties".
func (v *visitor) object(s *value, name, ptr string) (string, error) {
	props, err := properties(s, ptr)
	if err != nil {
		return "", err
	}
	required, err := requiredSet(s, ptr)
	if err != nil {
		return "", err
	}
	return v.buildObject(props, required, s.get("additionalProperties"), name, ptr)
}

// properties reads "properties", in their order.
func properties(s *value, ptr string) ([]property, error) {
	p := s.get("properties")
	if p == nil {
		return nil, nil
	}
	if p.kind != kindObject {
		return nil, failAt(ptr, "properties", ErrInvalid, `"properties" must be an object`)
	}
	props := make([]property, len(p.obj))
	for i, m := range p.obj {
		props[i] = property{m.key, m.val, ptr + "/properties/" + escapePointer(m.key)}
	}
	return props, nil
}

// requiredSet reads "required".
func requiredSet(s *value, ptr string) ([]string, error) {
	r := s.get("required")
	if r == nil {
		return nil, nil
	}
	if r.kind != kindArray {
		return nil, failAt(ptr, "required", ErrInvalid, `"required" must be an array of strings`)
	}
	var names []string
	for _, e := range r.arr {
		if e.kind != kindString {
			return nil, failAt(ptr, "required", ErrInvalid, `"required" must be an array of strings`)
		}
		names = append(names, e.str)
	}
	return names, nil
}

// buildObject is llama.cpp's _build_object_rule: the required properties
// in their order, then the optional ones in theirs, each of which may be
// left out, then additional properties (when allowed) in any number.
// Properties whose schema is false are left out; the grammar allows no
// property but those listed unless additional (nil or false: none).
func (v *visitor) buildObject(props []property, required []string, additional *value, name, ptr string) (string, error) {
	prefix := name
	if name != "" {
		prefix += "-"
	}
	index := make(map[string]int, len(props))
	for i, p := range props {
		index[p.name] = i
	}
	isRequired := make(map[string]bool, len(required))
	for _, r := range required {
		isRequired[r] = true
		i, ok := index[r]
		if !ok {
			return "", failAt(ptr, "required", ErrUnsupported, `required property %q is not in "properties"`, r)
		}
		if isFalse(props[i].schema) {
			return "", failAt(ptr, "required", ErrInvalid, `required property %q has the schema false: no value is valid`, r)
		}
	}
	kv := map[string]string{}
	var requiredProps, optionalProps, names []string
	v.nested++
	defer func() { v.nested-- }()
	for _, p := range props {
		names = append(names, p.name)
		if isFalse(p.schema) {
			continue
		}
		rule, err := v.visit(p.schema, prefix+p.name, p.ptr)
		if err != nil {
			return "", err
		}
		kv[p.name] = v.c.addRule(prefix+p.name+"-kv", formatLiteral((&value{kind: kindString, str: p.name}).text())+` space ":" space `+rule)
		v.c.note(kv[p.name], p.ptr, "")
		if isRequired[p.name] {
			requiredProps = append(requiredProps, p.name)
		} else {
			optionalProps = append(optionalProps, p.name)
		}
	}
	if additional != nil && !isFalse(additional) {
		if additional.kind != kindBool && additional.kind != kindObject {
			return "", failAt(ptr, "additionalProperties", ErrInvalid, `"additionalProperties" must be a schema`)
		}
		sub := prefix + "additional"
		var valueRule string
		if additional.kind == kindObject {
			r, err := v.visit(additional, sub+"-value", ptr+"/additionalProperties")
			if err != nil {
				return "", err
			}
			valueRule = r
		} else {
			valueRule = v.c.addPrimitive("value", primitives["value"])
		}
		var keyRule string
		if len(names) == 0 {
			keyRule = v.c.addPrimitive("string", primitives["string"])
		} else {
			body, err := v.notStrings(names, ptr)
			if err != nil {
				return "", err
			}
			keyRule = v.c.addRule(sub+"-k", body)
		}
		kv["*"] = v.c.addRule(sub+"-kv", keyRule+` ":" space `+valueRule)
		optionalProps = append(optionalProps, "*")
	}
	if len(requiredProps) == 0 && len(optionalProps) == 0 {
		return `"{" space "}"`, nil
	}
	var b strings.Builder
	b.WriteString(`"{" space `)
	for i, p := range requiredProps {
		if i > 0 {
			b.WriteString(` "," space `)
		}
		b.WriteString(kv[p])
	}
	if len(optionalProps) > 0 {
		b.WriteString(" (")
		if len(requiredProps) > 0 {
			b.WriteString(` "," space ( `)
		}
		// Each alternative starts at one optional property; the ones
		// after it follow, each optional, in a rule of their own
		// (llama.cpp's get_recursive_refs, built once from the end: its
		// recursion builds the same rules once per alternative).
		n := len(optionalProps)
		rest := make([]string, n+1) // rest[i]: the rule of optionalProps[i:], each optional
		for i := n - 1; i >= 1; i-- {
			k := optionalProps[i]
			body := `( "," space ` + kv[k] + ` )?`
			if k == "*" {
				body = `( "," space ` + kv[k] + ` )*`
			}
			if rest[i+1] != "" {
				body += " " + rest[i+1]
			}
			rest[i] = v.c.addRule(prefix+optionalProps[i-1]+"-rest", body)
		}
		for i, k := range optionalProps {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(kv[k])
			if k == "*" {
				b.WriteString(` ( "," space ` + kv[k] + ` )*`)
			}
			if rest[i+1] != "" {
				b.WriteString(" " + rest[i+1])
			}
		}
		if len(requiredProps) > 0 {
			b.WriteString(" )")
		}
		b.WriteString(" )?")
	}
	b.WriteString(` space "}"`)
	return b.String(), nil
}

// notStrings is llama.cpp's _not_strings: a JSON string that is none of
// names (the keys an additional property may not have). Unlike llama.cpp's,
// the character where a key leaves every name may not be a backslash, so
// that no escape spells a listed name and no lone backslash ends a key; and
// a key may end inside a name ("c" beside "currency"), which llama.cpp's
// refuses.
func (v *visitor) notStrings(names []string, ptr string) (string, error) {
	type node struct {
		children map[rune]*node
		order    []rune
		end      bool
	}
	root := &node{children: map[rune]*node{}}
	for _, n := range names {
		if strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' || r == 0x7f }) {
			return "", failAt(ptr, "additionalProperties", ErrUnsupported, `"additionalProperties" beside property %q, which needs escapes, is not supported`, n)
		}
		cur := root
		for _, r := range n {
			next, ok := cur.children[r]
			if !ok {
				next = &node{children: map[rune]*node{}}
				cur.children[r] = next
				cur.order = append(cur.order, r)
			}
			cur = next
		}
		cur.end = true
	}
	char := v.c.addPrimitive("char", primitives["char"])
	var b strings.Builder
	b.WriteString(`["] ( `)
	var visit func(n *node)
	visit = func(n *node) {
		rs := slices.Clone(n.order)
		slices.Sort(rs)
		for i, r := range rs {
			if i > 0 {
				b.WriteString(" | ")
			}
			child := n.children[r]
			b.WriteString("[" + classChar(r) + "]")
			if len(child.children) > 0 {
				b.WriteString(" (")
				visit(child)
				b.WriteString(")")
				if !child.end {
					b.WriteString("?") // a key may be a prefix of a name
				}
			} else if child.end {
				b.WriteString(" " + char + "+")
			}
		}
		if len(rs) > 0 {
			b.WriteString(` | [^"\\`)
			for _, r := range rs {
				b.WriteString(classChar(r))
			}
			b.WriteString("] " + char + "*")
		}
	}
	visit(root)
	b.WriteString(" )")
	if !root.end {
		b.WriteString("?")
	}
	b.WriteString(` ["]`)
	return b.String(), nil
}

// classChar is r written inside a GBNF character class.
func classChar(r rune) string {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == ' ':
		return string(r)
	case r < 0x100:
		return `\x` + hex(int(r), 2)
	case r < 0x10000:
		return `\u` + hex(int(r), 4)
	}
	return `\U` + hex(int(r), 8)
}

func hex(n, width int) string {
	s := strconv.FormatInt(int64(n), 16)
	return strings.Repeat("0", max(width-len(s), 0)) + strings.ToUpper(s)
}

// array is the body of an array schema's rule: "items" repeated between
// "minItems" and "maxItems" times (llama.cpp's), or a tuple: "prefixItems"
// (or an "items" array, draft 7), then the further items "items" (or
// "additionalItems") allows. llama.cpp takes a tuple alone as the whole
// array; so does this converter when nothing says how many items follow
// it, and it takes every item of the tuple.
func (v *visitor) array(s *value, name, ptr string) (string, error) {
	prefix := name
	if name != "" {
		prefix += "-"
	}
	lo, hi, err := bounds(s, ptr, "minItems", "maxItems")
	if err != nil {
		return "", err
	}
	var tuple []*value
	tuplePtr := ptr + "/prefixItems"
	rest, restPtr := s.get("items"), ptr+"/items"
	if t := s.get("prefixItems"); t != nil {
		if t.kind != kindArray {
			return "", failAt(ptr, "prefixItems", ErrInvalid, `"prefixItems" must be an array`)
		}
		tuple = t.arr
	} else if rest != nil && rest.kind == kindArray {
		tuple, tuplePtr = rest.arr, restPtr
		rest, restPtr = s.get("additionalItems"), ptr+"/additionalItems"
	}
	if len(tuple) > MaxRepeat {
		return "", failAt(ptr, "prefixItems", ErrLimit, "more than MaxRepeat (%d) tuple items", MaxRepeat)
	}
	v.nested++
	defer func() { v.nested-- }()
	if tuple == nil || len(tuple) == 0 && rest != nil {
		if rest == nil {
			rest = &value{kind: kindBool, b: true}
		}
		if isFalse(rest) {
			hi = 0
		}
		item := ""
		if hi != 0 {
			if item, err = v.visit(rest, prefix+"item", restPtr); err != nil {
				return "", err
			}
		}
		return `"[" space ` + repetition(item, lo, hi, `"," space`) + ` space "]"`, nil
	}
	if hi >= 0 && hi < len(tuple) {
		return "", failAt(ptr, "maxItems", ErrUnsupported, `"maxItems" less than the %d tuple items is not supported`, len(tuple))
	}
	var b strings.Builder
	b.WriteString(`"[" space `)
	for i, t := range tuple {
		if i > 0 {
			b.WriteString(` "," space `)
		}
		r, err := v.visit(t, prefix+"tuple-"+strconv.Itoa(i), tuplePtr+"/"+strconv.Itoa(i))
		if err != nil {
			return "", err
		}
		b.WriteString(r)
	}
	if rest == nil && lo > len(tuple) {
		rest = &value{kind: kindBool, b: true} // nothing restricts the items minItems asks for
	}
	if rest != nil && !isFalse(rest) {
		item, err := v.visit(rest, prefix+"item", restPtr)
		if err != nil {
			return "", err
		}
		restHi := -1
		if hi >= 0 {
			restHi = hi - len(tuple)
		}
		if r := repetition(`("," space `+item+`)`, max(lo-len(tuple), 0), restHi, ""); r != "" {
			b.WriteString(" " + r)
		}
	} else if lo > len(tuple) {
		return "", failAt(ptr, "minItems", ErrInvalid, `"minItems" is more than the tuple's %d items, and no other item is allowed`, len(tuple))
	}
	b.WriteString(` space "]"`)
	return b.String(), nil
}
