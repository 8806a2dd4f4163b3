//go:build !js

package grammarref

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestRun checks the harness on verdicts that need no reference to know.
func TestRun(t *testing.T) {
	r := Need(t)
	grammars := []GrammarJob{
		{Grammar: `root ::= "a" [0-9]+`, Texts: []string{"a1", "a12", "a", "b1", "", "a1 "}},
		{Grammar: `root ::= undefined-rule`, Texts: []string{"x"}},
		{Grammar: "root ::= \"é\" \"\\\"\"", Texts: []string{`é"`, `e"`}},
	}
	schemas := []SchemaJob{
		{Schema: json.RawMessage(`{"type":"object","properties":{"d":{"type":"string","format":"date"}},"required":["d"]}`),
			Texts: []string{`{"d":"2024-02-29"}`, `{"d":"2023-02-29"}`, `{}`, `not json`}},
		{Schema: json.RawMessage(`{"type":"nonsense"}`), Texts: []string{`1`}},
	}
	gs, ss, err := r.Run(grammars, schemas)
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, true, false, false, false, false}; !slices.Equal(gs[0].Accepts, want) || gs[0].Error != "" {
		t.Errorf("grammar 0: %+v, want %v", gs[0], want)
	}
	if gs[1].Error == "" || !strings.Contains(gs[1].Error, "undefined-rule") {
		t.Errorf("grammar 1: %+v, want an error naming the undefined rule", gs[1])
	}
	if want := []bool{true, false}; !slices.Equal(gs[2].Accepts, want) {
		t.Errorf("grammar 2: %+v, want %v", gs[2], want)
	}
	if want := []bool{true, false, false, false}; !slices.Equal(ss[0].Valid, want) || ss[0].Error != "" {
		t.Errorf("schema 0: %+v, want %v", ss[0], want)
	}
	if ss[1].Error == "" {
		t.Errorf("schema 1: %+v, want an error", ss[1])
	}
}
