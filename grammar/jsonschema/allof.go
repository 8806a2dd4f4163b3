package jsonschema

import (
	"strconv"
	"strings"
)

// allOf merges its components where llama.cpp does, more strictly:
//
//   - one component and nothing else that restricts: that component;
//   - components that are all object schemas ("properties", "required",
//     "type": "object", a "$ref" to one): one object with every property
//     (a property in two components must have the same schema in both)
//     and the union of their "required" lists (llama.cpp requires every
//     property of a component, whatever its "required" says);
//   - components that are all "enum" or "const": the values in every one.
//
// A component with "anyOf" (llama.cpp makes its properties optional,
// accepting objects with none of them) or any other keyword is an error.
func (v *visitor) allOf(s *value, name, ruleName, ptr string) (string, error) {
	all := s.get("allOf")
	if all.kind != kindArray || len(all.arr) == 0 {
		return "", failAt(ptr, "allOf", ErrInvalid, `"allOf" must be a non-empty array`)
	}
	if len(all.arr) == 1 {
		if err := v.check(s, ptr, "", "allOf"); err == nil {
			r, err := v.visit(all.arr[0], name, ptr+"/allOf/0")
			if err != nil {
				return "", err
			}
			return v.c.addRule(ruleName, r), nil
		}
	}
	// The schema's own properties merge as one more component.
	comps := []property{}
	if hasAny(s, "properties", "required") {
		own := &value{kind: kindObject}
		for _, m := range s.obj {
			if m.key != "allOf" {
				own.obj = append(own.obj, m)
			}
		}
		comps = append(comps, property{schema: own, ptr: ptr})
	} else if err := v.check(s, ptr, "", "allOf", "type"); err != nil {
		return "", err
	}
	typ, err := typeOf(s, ptr)
	if err != nil {
		return "", err
	}
	for i, c := range all.arr {
		comps = append(comps, property{schema: c, ptr: ptr + "/allOf/" + strconv.Itoa(i)})
	}
	var props []property
	var required []string
	propIndex, isRequired := map[string]int{}, map[string]bool{}
	var enums [][]*value
	objects := 0
	for _, comp := range comps {
		c, cptr := comp.schema, comp.ptr
		for depth := 0; c.kind == kindObject && c.has("$ref"); depth++ {
			if err := v.check(c, cptr, "", "$ref"); err != nil {
				return "", err
			}
			r := c.get("$ref")
			frag, ok := strings.CutPrefix(r.str, "#")
			if r.kind != kindString || !ok || depth >= MaxDepth {
				return "", fail(cptr, ErrUnsupported, `"$ref" in "allOf" must refer inside the schema ("#/...")`)
			}
			t, err := v.pointer(frag, cptr, r.str)
			if err != nil {
				return "", err
			}
			c, cptr = t, frag
		}
		if c.kind != kindObject {
			return "", fail(cptr, ErrUnsupported, `an "allOf" component must be an object schema or an enum`)
		}
		switch {
		case c.has("enum") || c.has("const"):
			if err := v.check(c, cptr, "", "enum", "const"); err != nil {
				return "", err
			}
			if c.has("const") {
				enums = append(enums, []*value{c.get("const")})
			} else if e := c.get("enum"); e.kind == kindArray {
				enums = append(enums, e.arr)
			} else {
				return "", fail(cptr, ErrInvalid, `"enum" must be an array`)
			}
		default:
			typ, err := typeOf(c, cptr)
			if err != nil {
				return "", err
			}
			if typ != "" && typ != "object" || !hasAny(c, "properties", "required", "type") {
				return "", fail(cptr, ErrUnsupported, `an "allOf" component must be an object schema ("properties", "required") or an enum`)
			}
			if err := v.check(c, cptr, "object", "properties", "required"); err != nil {
				return "", err
			}
			cprops, err := properties(c, cptr)
			if err != nil {
				return "", err
			}
			for _, p := range cprops {
				i, ok := propIndex[p.name]
				if !ok {
					propIndex[p.name] = len(props)
					props = append(props, p)
				} else if !equal(props[i].schema, p.schema) {
					return "", fail(p.ptr, ErrUnsupported, `property %q has different schemas in two "allOf" components`, p.name)
				}
			}
			req, err := requiredSet(c, cptr)
			if err != nil {
				return "", err
			}
			for _, r := range req {
				if !isRequired[r] {
					isRequired[r] = true
					required = append(required, r)
				}
			}
			objects++
		}
	}
	if objects > 0 && typ == "string" {
		return "", failAt(ptr, "allOf", ErrUnsupported, `"allOf" of objects beside "type": "string" is not supported`)
	}
	if len(enums) > 0 {
		if objects > 0 {
			return "", failAt(ptr, "allOf", ErrUnsupported, `"allOf" mixing objects and enums is not supported`)
		}
		if typ != "" {
			enums = append(enums, nil) // only values of the type: filtered below
		}
		sets := make([]map[string]bool, len(enums))
		for i, e := range enums {
			sets[i] = map[string]bool{}
			for _, o := range e {
				sets[i][canonical(o)] = true
			}
			if e == nil { // the type's values
				for _, o := range enums[0] {
					if hasType(o, typ) {
						sets[i][canonical(o)] = true
					}
				}
			}
		}
		var alts []string
		seen := map[string]bool{}
		for _, e := range enums[0] {
			inAll := true
			for _, set := range sets[1:] {
				inAll = inAll && set[canonical(e)]
			}
			if l := formatLiteral(e.text()); inAll && !seen[l] {
				seen[l] = true
				alts = append(alts, l)
			}
		}
		if len(alts) == 0 {
			return "", failAt(ptr, "allOf", ErrInvalid, `the "allOf" enums have no value in common`)
		}
		return v.c.addRule(ruleName, "("+strings.Join(alts, " | ")+")"), nil
	}
	body, err := v.buildObject(props, required, nil, name, ptr)
	if err != nil {
		return "", err
	}
	return v.c.addRule(ruleName, body), nil
}
