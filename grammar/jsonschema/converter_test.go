package jsonschema

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestConverterNames: schemas added under one name hint get rules that do
// not clash, "$ref"s resolve within their own schema, a failed Add leaves
// the Converter as it was, and Rule adjusts built-in names.
func TestConverterNames(t *testing.T) {
	c := NewConverter()
	a, err := c.Add("fn", []byte(`{"type":"object","properties":{"u":{"$ref":"#/$defs/unit"}},"required":["u"],"$defs":{"unit":{"enum":["c","f"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Add("fn", []byte(`{"type":"object","properties":{"u":{"$ref":"#/$defs/unit"}},"required":["u"],"$defs":{"unit":{"enum":["m","km"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a != "fn" || b != "fn0" {
		t.Errorf("rules %q and %q, want fn and fn0", a, b)
	}
	before := c.GBNF()
	if _, err := c.Add("fn", []byte(`{"type":"object","properties":{"z":{"type":"string"},"u":{"not":{}}}}`)); err == nil {
		t.Fatal("no error for not")
	}
	if after := c.GBNF(); after != before {
		t.Errorf("a failed Add changed the grammar:\n%s\nwas\n%s", after, before)
	}
	if r := c.Rule("string", `"x"`); r != "string-" {
		t.Errorf("Rule(string) = %q, want string-", r)
	}
	root := c.Rule("root", a+" | "+b)
	g := c.GBNF()
	if root != "root" || checkRefs(g) != "" {
		t.Errorf("root %q, grammar (%s):\n%s", root, checkRefs(g), g)
	}
	for _, want := range []string{`("\"c\"" | "\"f\"")`, `("\"m\"" | "\"km\"")`} {
		if !strings.Contains(g, want) {
			t.Errorf("no %s in\n%s", want, g)
		}
	}
	if !strings.Contains(JSONObject(), `root ::= "{" space`) {
		t.Errorf("JSONObject:\n%s", JSONObject())
	}
}

// TestHostileSchemas: schemas built to blow up a converter end, in well
// under a second each on an idle machine (the bound leaves room for a
// loaded one), in a grammar or a limit's error.
// hostileSchemas are schemas built to make a converter take unbounded time or
// memory, by name.
func hostileSchemas() map[string]string {
	many := func(n int, f func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		return strings.Join(parts, ",")
	}
	return map[string]string{
		// oneOf over references that branch ten ways at every level
		"branching refs": `{"$defs":{"a":{"anyOf":[` + many(10, func(int) string { return `{"$ref":"#/$defs/a"}` }) +
			`]}},"oneOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}]}`,
		// thousands of references whose names sanitise alike
		"alike names": `{"type":"object","properties":{` + many(3000, func(i int) string {
			return fmt.Sprintf(`"p%d":{"$ref":"#/$defs/a%s"}`, i, strings.Repeat("_", i%60)+fmt.Sprint(i/60))
		}) +
			`},"$defs":{` + many(3000, func(i int) string {
			return fmt.Sprintf(`"a%s":{"const":%d}`, strings.Repeat("_", i%60)+fmt.Sprint(i/60), i)
		}) + `}}`,
		"wide object":   `{"type":"object","properties":{` + many(40000, func(i int) string { return fmt.Sprintf(`"p%d":{}`, i) }) + `},"required":[` + many(40000, func(i int) string { return fmt.Sprintf(`"p%d"`, i) }) + `]}`,
		"huge enum":     `{"enum":[` + many(60000, func(i int) string { return fmt.Sprint(i) }) + `]}`,
		"allOf pile":    `{"$defs":{"o":{"properties":{` + many(300, func(i int) string { return fmt.Sprintf(`"p%d":{"type":"integer"}`, i) }) + `}}},"allOf":[` + many(300, func(int) string { return `{"$ref":"#/$defs/o"}` }) + `]}`,
		"long pattern":  `{"type":"string","pattern":"^` + strings.Repeat(`([^a-z\\d]{2,9}|.)`, 200) + `$"}`,
		"nested repeat": `{"type":"string","pattern":"^(((a{10000}){10000}){10000})$"}`,
	}
}

// TestHostileSchemas: each hostile schema is converted or refused as past a
// limit (an exponential blow-up would hang to the test's timeout; the time
// each takes is BenchmarkHostileSchemas's).
func TestHostileSchemas(t *testing.T) {
	for name, schema := range hostileSchemas() {
		t.Run(name, func(t *testing.T) {
			g, err := ToGBNF([]byte(schema))
			if err != nil && !errors.Is(err, ErrLimit) && !errors.Is(err, ErrUnsupported) {
				t.Errorf("%v", err)
			}
			if len(g) > MaxGrammarBytes {
				t.Errorf("a grammar of %d bytes, past MaxGrammarBytes (%d)", len(g), MaxGrammarBytes)
			}
			t.Logf("%.60v", err)
		})
	}
}

// BenchmarkHostileSchemas times the conversion of the schemas TestHostileSchemas
// holds to the package's limits: each is answered (a grammar or ErrLimit) in
// well under a second natively.
func BenchmarkHostileSchemas(b *testing.B) {
	for name, schema := range hostileSchemas() {
		b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			for b.Loop() {
				ToGBNF([]byte(schema))
			}
		})
	}
}

func ExampleToGBNF() {
	g, err := ToGBNF([]byte(`{
		"type": "object",
		"properties": {
			"city": {"type": "string"},
			"days": {"type": "integer", "minimum": 1, "maximum": 7}
		},
		"required": ["city"]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(g)
	// Output:
	// char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
	// city-kv ::= "\"city\"" space ":" space string
	// days ::= ([1-7])
	// days-kv ::= "\"days\"" space ":" space days
	// root ::= "{" space city-kv ( "," space ( days-kv ) )? space "}"
	// space ::= | " " | "\n"{1,2} [ \t]{0,20}
	// string ::= "\"" char* "\""
}

func ExampleConverter() {
	c := NewConverter()
	weather, _ := c.Add("weather", []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`))
	c.Rule("root", `"<tool_call>" space `+weather+` space "</tool_call>"`)
	fmt.Print(c.GBNF())
	// Output:
	// char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
	// root ::= "<tool_call>" space weather space "</tool_call>"
	// space ::= | " " | "\n"{1,2} [ \t]{0,20}
	// string ::= "\"" char* "\""
	// weather ::= "{" space weather-city-kv space "}"
	// weather-city-kv ::= "\"city\"" space ":" space string
}
