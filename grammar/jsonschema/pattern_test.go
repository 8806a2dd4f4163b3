package jsonschema

import (
	"testing"

	"github.com/wasmlm/wasmlm/grammar"
)

// TestPatternRepeatsParse: a group that may match the empty string,
// repeated a bounded number of times, and a repeated group that always
// takes a character convert into grammars the GBNF parser takes (no rule
// that reaches itself before reading a character).
func TestPatternRepeatsParse(t *testing.T) {
	for _, pattern := range []string{`^(a?){0,5}$`, `^(a?){3}$`, `^(a?b?)?$`, `^((a?)b)+$`, `^(a|b?)(c)*$`, `^(?:(a)?b?)x*$`, `^(a?b|c)+$`, `^(?:[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])*$`} {
		g, err := ToGBNF([]byte(`{"type":"object","properties":{"k":{"type":"string","pattern":"` + pattern + `"}},"required":["k"]}`))
		if err != nil {
			t.Errorf("%s: %v", pattern, err)
			continue
		}
		if _, err := grammar.Parse(g); err != nil {
			t.Errorf("%s: %v\n%s", pattern, err, g)
		}
	}
}
