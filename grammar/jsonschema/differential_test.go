//go:build !js

package jsonschema

import (
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
// every text, the corpus's and the variants.
var llamaDiffers = map[string]string{
	// llama.cpp's _not_strings makes a key that is a prefix of a property
	// name ("c", "cur" beside "currency") continue: ToGBNF's agrees with ajv.
	"additional_schema": "llama.cpp refuses additional keys that are prefixes of a property name",
	// llama.cpp requires every property of an allOf component ("name"),
	// whatever its "required" says: ToGBNF's agrees with ajv.
	"allof_merge": "llama.cpp requires every property of an allOf component",
	// llama.cpp's one-sided integer range recurses on "000", losing the
	// digits' count: its grammar accepts 10 for "minimum": 1000.
	"big_number": "llama.cpp's grammar for minimum 1000 accepts 10",
	// llama.cpp's date takes days 01-31 in every month.
	"date_format":   "llama.cpp's date accepts 2023-02-29 and 2024-04-31",
	"uuid_datetime": "llama.cpp's date accepts 2023-02-29",
	// llama.cpp's converter has no bounds for "number": it ignores them.
	"number_bounds": "llama.cpp ignores the bounds of a number",
	"shapes_anyof":  "llama.cpp ignores the bounds of a number (radius >= 0)",
	// llama.cpp's converter needs ^ and $ around a pattern (its C++
	// converter accepts any string instead, with a warning).
	"pattern_unanchored": "llama.cpp's converter fails on an unanchored pattern",
	"oneof_tagged":       `llama.cpp's converter fails on the unanchored pattern "^https://"`,
	// llama.cpp copies \d and \s into literals, which its parser refuses.
	"pattern_classes": `llama.cpp's grammar has \d and \s, which its own parser refuses`,
	// llama.cpp does not follow a "$ref" inside a schema that is itself a
	// "$ref" (here the root): the inner reference is never resolved.
	"tree": "llama.cpp's converter fails on a recursive $ref under a root $ref",
	// llama.cpp's converter takes every schema for an object: items false
	// crashes it.
	"tuple": `llama.cpp's converter fails on "items": false`,
	// With both prefixItems and items llama.cpp takes items alone.
	"tuple_rest": "llama.cpp ignores prefixItems beside items",
}

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
