package jsonschema

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestErrors: each schema fails with the sentinel and a message naming the
// construct at its pointer.
func TestErrors(t *testing.T) {
	deep := strings.Repeat(`{"type":"array","items":`, MaxDepth+1) + "{}" + strings.Repeat("}", MaxDepth+1)
	manyProps := `{"type":"object","properties":{` + func() string {
		var b strings.Builder
		for i := range MaxRules {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d":{"type":"object","properties":{"a":{"type":"integer"}}}`, i)
		}
		return b.String()
	}() + `}}`
	tests := []struct {
		name, schema string
		err          error
		want         string // in the message
	}{
		{"not", `{"type":"object","properties":{"a":{"type":"integer","not":{"const":3}}}}`, ErrUnsupported, `jsonschema: /properties/a: "not" is not supported`},
		{"if", `{"type":"string","if":{"minLength":2},"then":{"pattern":"^a"}}`, ErrUnsupported, `jsonschema: /: "if" is not supported`},
		{"patternProperties", `{"type":"object","properties":{"a":{}},"patternProperties":{"^x":{}}}`, ErrUnsupported, `/: "patternProperties" is not supported`},
		{"uniqueItems", `{"type":"array","items":{"type":"integer"},"uniqueItems":true}`, ErrUnsupported, `"uniqueItems"`},
		{"multipleOf", `{"type":"integer","minimum":0,"multipleOf":5}`, ErrUnsupported, `"multipleOf"`},
		{"multipleOf alone", `{"type":"integer","multipleOf":5}`, ErrUnsupported, `"multipleOf"`},
		{"minProperties", `{"type":"object","properties":{"a":{}},"minProperties":1}`, ErrUnsupported, `"minProperties"`},
		{"remote ref", `{"$ref":"https://example.com/s.json"}`, ErrUnsupported, `"$ref" "https://example.com/s.json" is not supported`},
		{"relative ref", `{"properties":{"a":{"$ref":"other.json#/x"}}}`, ErrUnsupported, `/properties/a: "$ref" "other.json#/x"`},
		{"missing ref", `{"$ref":"#/$defs/nope"}`, ErrInvalid, `"#/$defs/nope": "$defs" not found`},
		{"ref sibling", `{"$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a","maxLength":3}`, ErrUnsupported, `"maxLength" beside "$ref"`},
		{"ref loop", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},"$ref":"#/$defs/a"}`, ErrUnsupported, "left-recursive"},
		{"unknown format", `{"type":"string","format":"email"}`, ErrUnsupported, `"format" "email" is not supported`},
		{"pattern lookahead", `{"type":"string","pattern":"^(?=a)a$"}`, ErrUnsupported, `lookaround`},
		{"pattern backreference", `{"type":"string","pattern":"^(a)\\1$"}`, ErrUnsupported, `\1`},
		{"pattern word boundary", `{"type":"string","pattern":"\\bx"}`, ErrUnsupported, `word boundaries`},
		{"pattern unbalanced", `{"type":"string","pattern":"^(a"}`, ErrInvalid, `"pattern"`},
		{"pattern with minLength", `{"type":"string","pattern":"^a+$","minLength":2}`, ErrUnsupported, `"minLength" is not supported together with "pattern"`},
		{"pattern inner anchor", `{"type":"string","pattern":"a^b"}`, ErrUnsupported, `'^'`},
		{"pattern repeating an empty group", `{"type":"string","pattern":"^(a?)+$"}`, ErrUnsupported, `at offset 6: a group that matches the empty string, repeated without bound`},
		{"pattern repeating an empty alternative", `{"type":"string","pattern":"^x(a|)*$"}`, ErrUnsupported, `a group that matches the empty string, repeated without bound`},
		{"pattern repeating nothing", `{"type":"string","pattern":"^(?:){2,}$"}`, ErrUnsupported, `a group that matches the empty string, repeated without bound`},
		{"pattern repeating a nested empty group", `{"type":"string","pattern":"^(?:(?:a?)?b*)*$"}`, ErrUnsupported, `a group that matches the empty string, repeated without bound`},
		{"number fraction bound", `{"type":"number","minimum":0.5}`, ErrUnsupported, `"minimum" 0.5`},
		{"draft 4 exclusive", `{"type":"integer","minimum":0,"exclusiveMinimum":true}`, ErrInvalid, `"exclusiveMinimum" must be a number`},
		{"empty range", `{"type":"integer","minimum":5,"maximum":4}`, ErrInvalid, "no value"},
		{"oneOf overlap", `{"oneOf":[{"type":"integer"},{"type":"number"}]}`, ErrUnsupported, `"oneOf" alternatives 0 and 1`},
		{"oneOf beside", `{"type":"object","properties":{"a":{}},"oneOf":[{"type":"object"},{"type":"null"}]}`, ErrUnsupported, `"type" beside "oneOf"`},
		{"required not listed", `{"type":"object","properties":{"a":{}},"required":["b"]}`, ErrUnsupported, `required property "b"`},
		{"allOf anyOf", `{"allOf":[{"anyOf":[{"properties":{"a":{}}},{"properties":{"b":{}}}]},{"properties":{"c":{}}}]}`, ErrUnsupported, `/allOf/0: an "allOf" component`},
		{"allOf conflict", `{"allOf":[{"properties":{"a":{"type":"string"}}},{"properties":{"a":{"type":"integer"}}}]}`, ErrUnsupported, `/allOf/1/properties/a: property "a" has different schemas`},
		{"allOf empty enum", `{"allOf":[{"enum":[1,2]},{"enum":[3]}]}`, ErrInvalid, "no value in common"},
		{"type beside anyOf", `{"type":"string","anyOf":[{"minLength":1},{"const":5}]}`, ErrUnsupported, `"type" beside "anyOf"`},
		{"type beside ref", `{"$defs":{"a":{}},"type":"string","$ref":"#/$defs/a"}`, ErrUnsupported, `"type" beside "$ref"`},
		{"allOf objects as string", `{"type":"string","allOf":[{"properties":{"a":{}}},{"required":["a"]}]}`, ErrUnsupported, `"type": "string"`},
		{"allOf enums of another type", `{"type":"integer","allOf":[{"enum":["a",1]},{"enum":["a"]}]}`, ErrUnsupported, `"allOf"`},
		{"const type", `{"type":"string","const":3}`, ErrInvalid, `no value of "const"`},
		{"minItems without type", `{"minItems":2}`, ErrUnsupported, `"minItems" is not supported without "type": "array"`},
		{"false", `false`, ErrUnsupported, "the schema false"},
		{"bad type", `{"type":"text"}`, ErrInvalid, `"type" must be one of`},
		{"not an object", `[1]`, ErrInvalid, "a schema must be an object"},
		{"not JSON", `{"type":`, ErrInvalid, "not JSON"},
		{"duplicate key", `{"type":"string","type":"integer"}`, ErrInvalid, `duplicate key "type"`},
		{"trailing data", `{} {}`, ErrInvalid, "data after the schema"},
		{"maxItems limit", `{"type":"array","maxItems":100001}`, ErrLimit, "MaxRepeat"},
		{"minLength limit", `{"type":"string","minLength":99999999999999999999}`, ErrLimit, "MaxRepeat"},
		{"pattern repeat limit", `{"type":"string","pattern":"^a{20000}$"}`, ErrLimit, "MaxRepeat"},
		{"minLength past the grammar's minimum", `{"type":"object","properties":{"k":{"type":"string","minLength":5000}}}`, ErrLimit, `/properties/k: "minLength" is 5000, more than MaxMinRepeat (2000)`},
		{"minItems past the grammar's minimum", `{"type":"array","minItems":2001}`, ErrLimit, `"minItems" is 2001, more than MaxMinRepeat`},
		{"pattern minimum past the grammar's", `{"type":"string","pattern":"^a{2001,}$"}`, ErrLimit, "MaxMinRepeat (2000)"},
		{"maxLength past the grammar's maximum", `{"type":"object","properties":{"k":{"type":"string","maxLength":2001}}}`, ErrLimit, `/properties/k: "maxLength" is 2001, more than MaxMaxRepeat (2000)`},
		{"maxItems past the grammar's maximum", `{"type":"array","minItems":1,"maxItems":5000}`, ErrLimit, `"maxItems" is 5000, more than MaxMaxRepeat (2000)`},
		{"pattern maximum past the grammar's", `{"type":"string","pattern":"^a{1,2001}$"}`, ErrLimit, "repeating at most 2001 times, more than MaxMaxRepeat (2000)"},
		{"bound limit", `{"type":"integer","minimum":1e300}`, ErrLimit, "2^62"},
		{"depth limit", deep, ErrLimit, "MaxDepth"},
		{"rules limit", manyProps, ErrLimit, "MaxRules"},
		{"size limit", `{"description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`, ErrLimit, "MaxSchemaBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ToGBNF([]byte(tt.schema))
			if err == nil {
				t.Fatal("no error")
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tt.err) {
				t.Errorf("%v: want an *Error wrapping %v", err, tt.err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v: want it to say %s", err, tt.want)
			}
		})
	}
}

// TestErrorKeyword: an error about one keyword's value names it, so a host
// can point at the request's field (…schema.properties.k.minLength); an
// error about the subschema as a whole (not an object) names none.
func TestErrorKeyword(t *testing.T) {
	for _, tt := range []struct{ schema, pointer, keyword string }{
		{`{"type":"object","properties":{"k":{"type":"string","minLength":5000}}}`, "/properties/k", "minLength"},
		{`{"type":"string","minLength":3,"maxLength":2}`, "", "maxLength"},
		{`{"type":"object","properties":{"k":{"type":"string","maxLength":3000}}}`, "/properties/k", "maxLength"},
		{`{"type":"array","items":{"type":"array","maxItems":2001}}`, "/items", "maxItems"},
		{`{"type":"array","minItems":-1}`, "", "minItems"},
		{`{"type":"object","properties":{"p":{"type":"string","pattern":"(a"}}}`, "/properties/p", "pattern"},
		{`{"type":"object","properties":{"p":{"type":"string","pattern":"^(a?)+$"}}}`, "/properties/p", "pattern"},
		{`{"type":"text"}`, "", "type"},
		{`{"type":"object","properties":{"a":{"enum":[]}}}`, "/properties/a", "enum"},
		{`{"type":"integer","minimum":5,"maximum":2}`, "", "minimum"},
		{`{"type":"integer","exclusiveMinimum":2,"maximum":2}`, "", "exclusiveMinimum"},
		{`{"type":"object","properties":{"a":{"$ref":5}}}`, "/properties/a", "$ref"},
		{`{"type":"object","required":["b"],"properties":{"a":{}}}`, "", "required"},
		{`{"type":"integer","maximum":true}`, "", "maximum"},
		{`{"allOf":[]}`, "", "allOf"},
		{`{"type":"string","format":"email"}`, "", "format"},
		{`{"type":"array","prefixItems":5}`, "", "prefixItems"},
		{`{"type":"string","enum":[1,2]}`, "", "enum"},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":5}`, "", "additionalProperties"},
		{`{"type":"object","properties":{"a":5}}`, "/properties/a", ""},
	} {
		_, err := ToGBNF([]byte(tt.schema))
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: %v: want an *Error", tt.schema, err)
		}
		if e.Pointer != tt.pointer || e.Keyword != tt.keyword {
			t.Errorf("%s: at %q keyword %q, want %q %q", tt.schema, e.Pointer, e.Keyword, tt.pointer, tt.keyword)
		}
	}
}
