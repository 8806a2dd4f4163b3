//go:build !js

package jsonschema

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/wasmlm/wasmlm/internal/grammarref"
)

// stricter are the corpus texts that are valid (ajv) and that ToGBNF's
// grammar rejects by design, as llama.cpp's does: the reason says which
// rule. Every other corpus text gets ajv's verdict from the grammar.
var stricter = map[string]map[string]string{
	"person": {
		`{"name":"Ada","age":36,"phone":"1"}`: "no property but those listed, unless additionalProperties allows more",
		`{"age":36,"name":"Ada"}`:             "the properties in the schema's order",
	},
	"address": {
		`{"street": "Unter den Linden 5", "city": "Berlin", "postcode": "10117", "country": "DE"}`: "required properties before optional ones",
		`{"street":"","city":"","postcode":"00000","country":"GB"}`:                                "required properties before optional ones",
	},
	"tool_search": {
		`{"query": "gbnf", "filters": {"languages": ["go", "rust"], "min_stars": 100}, "limit": 5}`: "required properties before optional ones",
		`{"query":"x","filters":{},"limit":50}`:                                                     "required properties before optional ones",
		`{"query": "y", "filters": {"updated_after": "2024-01-31"}, "limit": 1}`:                    "required properties before optional ones",
	},
	"tuple": {`["a",1]`: "every prefixItems item"},
}

// llamaDiffers are the corpus schemas where llama.cpp's own grammar
// (NAME.llamacpp.gbnf) gives other verdicts than ToGBNF's, or where
// llama.cpp's converter fails (NAME.llamacpp.err): why, and which of the
// two agrees with ajv. On every other schema the two grammars agree on
// every text, the corpus's and the variants. In detail:
// llama.cpp's _not_strings makes a key that is a prefix of a property
// name ("c", "cur" beside "currency") continue: ToGBNF's agrees with ajv.
// llama.cpp requires every property of an allOf component ("name"),
// whatever its "required" says: ToGBNF's agrees with ajv.
// llama.cpp's one-sided integer range recurses on "000", losing the
// digits' count: its grammar accepts 10 for "minimum": 1000.
// llama.cpp's date takes days 01-31 in every month.
// llama.cpp's converter has no bounds for "number": it ignores them.
// llama.cpp's converter needs ^ and $ around a pattern (its C++
// converter accepts any string instead, with a warning).
// llama.cpp copies \d and \s into literals, which its parser refuses.
// llama.cpp does not follow a "$ref" inside a schema that is itself a
// "$ref" (here the root): the inner reference is never resolved.
// llama.cpp's converter takes every schema for an object: items false
// crashes it.
// With both prefixItems and items llama.cpp takes items alone.
//
// The list is testdata/llamacpp-differs.json (schema name: why), which the
// sampling tests of internal/grammarref read too.
var llamaDiffers = func() map[string]string {
	b, err := os.ReadFile("testdata/llamacpp-differs.json")
	if err != nil {
		panic(err) // a test binary without its testdata
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return m
}()

// TestCorpusDifferential holds ToGBNF's grammars to llama.cpp's (parsed and
// run by llama.cpp itself, through node-llama-cpp) and to ajv: on the
// corpus's texts, ajv's verdict is the file's (valid or invalid), ToGBNF's
// grammar gives ajv's verdict (but stricter) and llama.cpp's grammar gives
// the same (but llamaDiffers). On the variants of the valid texts
// (truncations, whitespace) ToGBNF's grammar accepts only what ajv
// accepts, and agrees with llama.cpp's grammar (but llamaDiffers).
func TestCorpusDifferential(t *testing.T) {
	runner := grammarref.Need(t)
	cases := loadCorpus(t)
	type job struct {
		c                       corpusCase
		texts                   []string
		corpus                  int // texts[:corpus] are the files', valid ones first
		ours, theirs, schemaJob int
	}
	var grammars []grammarref.GrammarJob
	var schemas []grammarref.SchemaJob
	jobs := make([]job, len(cases))
	for i, c := range cases {
		g, err := ToGBNF(c.schema)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		texts := append(append([]string{}, c.valid...), c.invalid...)
		corpus := len(texts)
		for _, v := range c.valid {
			texts = append(texts, variants(v)...)
		}
		j := job{c: c, texts: texts, corpus: corpus, ours: len(grammars), theirs: -1, schemaJob: len(schemas)}
		grammars = append(grammars, grammarref.GrammarJob{Grammar: g, Texts: texts})
		if c.llama != "" {
			j.theirs = len(grammars)
			grammars = append(grammars, grammarref.GrammarJob{Grammar: c.llama, Texts: texts})
		}
		schemas = append(schemas, grammarref.SchemaJob{Schema: c.schema, Texts: texts})
		jobs[i] = j
	}
	gs, ss, err := runner.Run(grammars, schemas)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		t.Run(j.c.name, func(t *testing.T) {
			ours, ajv := gs[j.ours], ss[j.schemaJob]
			if ours.Error != "" {
				t.Fatalf("llama.cpp refuses ToGBNF's grammar: %s", ours.Error)
			}
			if ajv.Error != "" {
				t.Fatalf("ajv refuses the schema: %s", ajv.Error)
			}
			var theirs []bool
			reason, differs := llamaDiffers[j.c.name]
			switch {
			case j.theirs < 0 && !differs:
				t.Errorf("llama.cpp's converter fails (%s): say why in llamaDiffers", j.c.llamaErr)
			case j.theirs >= 0 && gs[j.theirs].Error != "":
				if !differs {
					t.Errorf("llama.cpp refuses its own grammar (%s): say why in llamaDiffers", gs[j.theirs].Error)
				}
			case j.theirs >= 0:
				theirs = gs[j.theirs].Accepts
			}
			agreed := true
			for k, text := range j.texts {
				if k < j.corpus {
					if want := k < len(j.c.valid); ajv.Valid[k] != want {
						t.Errorf("ajv finds %q valid=%v, but it is in the %s file", text, ajv.Valid[k], map[bool]string{true: "valid", false: "invalid"}[want])
					}
					why, ok := stricter[j.c.name][text]
					switch {
					case ours.Accepts[k] != ajv.Valid[k] && !(ok && ajv.Valid[k]):
						t.Errorf("ToGBNF's grammar accepts=%v %q, ajv valid=%v", ours.Accepts[k], text, ajv.Valid[k])
					case ok && ours.Accepts[k]:
						t.Errorf("ToGBNF's grammar accepts %q, listed as stricter (%s)", text, why)
					}
				} else if ours.Accepts[k] && !ajv.Valid[k] {
					t.Errorf("ToGBNF's grammar accepts %q, which ajv finds invalid", text)
				}
				if theirs != nil && theirs[k] != ours.Accepts[k] {
					agreed = false
					if !differs {
						t.Errorf("on %q ToGBNF's grammar accepts=%v, llama.cpp's %v (ajv: %v)", text, ours.Accepts[k], theirs[k], ajv.Valid[k])
					}
				}
			}
			if differs && theirs != nil && agreed {
				t.Errorf("llama.cpp's grammar agrees with ToGBNF's on every text: drop the llamaDiffers entry (%s)", reason)
			}
		})
	}
}

// TestConverterToolCalls: one grammar holding two tools' parameters (the
// corpus's tool_weather and tool_search), under a root written by hand as
// a tool call, accepts a call exactly when ajv finds its arguments valid
// against the named tool's schema (but stricter): llama.cpp runs the
// grammar.
func TestConverterToolCalls(t *testing.T) {
	runner := grammarref.Need(t)
	cases := map[string]corpusCase{}
	for _, c := range loadCorpus(t) {
		cases[c.name] = c
	}
	tools := []struct{ name, corpus string }{{"get_weather", "tool_weather"}, {"search", "tool_search"}}
	conv := NewConverter()
	var calls []string
	for _, tool := range tools {
		rule, err := conv.Add(tool.name, cases[tool.corpus].schema)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, conv.Rule(tool.name+"-call",
			`"{" space "\"name\"" space ":" space `+formatLiteral(`"`+tool.name+`"`)+` "," space "\"arguments\"" space ":" space `+rule+` space "}"`))
	}
	conv.Rule("root", `"<tool_call>" space (`+strings.Join(calls, " | ")+`) space "</tool_call>"`)
	var texts []string
	var schemas []grammarref.SchemaJob
	var args [][]string // by tool: the arguments of its calls
	for i, tool := range tools {
		args = append(args, nil)
		for _, c := range tools {
			// Every tool's instances, as this tool's arguments.
			for _, a := range append(append([]string{}, cases[c.corpus].valid...), cases[c.corpus].invalid...) {
				args[i] = append(args[i], a)
				texts = append(texts, "<tool_call>\n"+`{"name": "`+tool.name+`", "arguments": `+a+"}</tool_call>")
			}
		}
		schemas = append(schemas, grammarref.SchemaJob{Schema: cases[tool.corpus].schema, Texts: args[i]})
	}
	gs, ss, err := runner.Run([]grammarref.GrammarJob{{Grammar: conv.GBNF(), Texts: texts}}, schemas)
	if err != nil {
		t.Fatal(err)
	}
	if gs[0].Error != "" {
		t.Fatalf("llama.cpp refuses the grammar: %s\n%s", gs[0].Error, conv.GBNF())
	}
	k := 0
	for i, tool := range tools {
		for j, a := range args[i] {
			valid, accepts := ss[i].Valid[j], gs[0].Accepts[k]
			_, strict := stricter[tools[i].corpus][a]
			if accepts != valid && !(strict && valid) {
				t.Errorf("%s(%s): llama.cpp accepts=%v, ajv valid=%v", tool.name, a, accepts, valid)
			}
			k++
		}
	}
}
