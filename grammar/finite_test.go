package grammar

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rootOf is `root ::= ALT0 | ALT1 | ...`, n alternatives written by alt,
// then the rules in after.
func rootOf(n int, alt func(i int) string, after string) string {
	alts := make([]string, n)
	for i := range alts {
		alts[i] = alt(i)
	}
	return "root ::= " + strings.Join(alts, " | ") + "\n" + after
}

// alternation is `root ::= "\"v0\"" | "\"v1\"" | ...` with n values, each
// prefixed by prefix: an enum as a schema converter writes it.
func alternation(n int, prefix string) string {
	return rootOf(n, func(i int) string { return fmt.Sprintf(`%s"\"v%d\""`, prefix, i) }, "")
}

// distinct is `root ::= "\u0100" "x0" | "\u0101" "x1" | ...`: n
// alternatives that each go on after prefix with their own character and
// then their own text, which nothing merges.
func distinct(n int, prefix string) string {
	return rootOf(n, func(i int) string { return fmt.Sprintf(`%s"\u%04x" "x%d"`, prefix, 0x100+i, i) }, "")
}

// objects is an anyOf of n objects, each beginning with "{" and optional
// blanks, as the JSON schema converter writes them.
func objects(n int) string {
	var rules strings.Builder
	rules.WriteString("space ::= | \" \" | \"\\n\" [ \\t]{0,20}\n")
	for i := range n {
		fmt.Fprintf(&rules, "o%d ::= \"{\" space \"\\\"k%d\\\"\" space \":\" space [0-9] \"}\"\n", i, i)
	}
	return rootOf(n, func(i int) string { return fmt.Sprintf("o%d", i) }, rules.String())
}

// TestParseRefusesGrammarsThatCannotEnd: a grammar whose root can never
// end is refused, naming the rule at the bottom of it and why; one whose
// endless rule is only an alternative it can avoid is not.
func TestParseRefusesGrammarsThatCannotEnd(t *testing.T) {
	for _, tc := range []struct {
		name, src, rule, want string
		path                  []string
	}{
		{"self", `root ::= "a" root`, "root", `needs rule "root" again`, []string{"root"}},
		{"cycle", "root ::= \"<\" item \">\"\nitem ::= \"x\" other\nother ::= \"y\" item", "other",
			`needs rule "item", which needs it again`, []string{"root", "item", "other"}},
		{"repetition of an endless rule", "root ::= item+\nitem ::= \"a\" item", "item", `needs rule "item" again`, []string{"root", "item"}},
		{"empty class", `root ::= "a" [z-a]`, "root", "the character class [z-a] at line 1 column 14, which matches no character", []string{"root"}},
		{"negated full class", `root ::= [^\x00-\U0010FFFF]`, "root", `which matches no character`, []string{"root"}},
	} {
		_, err := Parse(tc.src)
		require.ErrorIs(t, err, ErrEndless, tc.name)
		var re *RuleError
		require.True(t, errors.As(err, &re), tc.name)
		require.Equal(t, tc.rule, re.Rule, tc.name)
		require.Equal(t, tc.path, re.Path, tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
		require.Contains(t, err.Error(), "can never end", tc.name)
	}
	for _, src := range []string{
		`root ::= "a" root | "b"`,
		"root ::= \"a\" | dead\ndead ::= \"b\" dead",
		`root ::= [a-z] | [z-a]`,
		`root ::= ("a" root)?`,
	} {
		_, err := Parse(src)
		require.NoError(t, err, src)
	}
}

// TestParseRefusesWideAlternations: a rule whose alternatives begin more
// parses than the matcher holds (maxParses), where it begins or after its
// first character, is refused when parsed, naming it and the limit, so a
// generation never meets the limit; one at the limit is matched, and so
// are an enum and an anyOf of objects of any width, whose alternatives
// Parse merges into a trie (through the rules that begin them).
func TestParseRefusesWideAlternations(t *testing.T) {
	for _, tc := range []struct {
		name, src, rule string
		path            []string
	}{
		{"distinct first characters", distinct(maxParses+1, ""), "root", []string{"root"}},
		{"nested", "root ::= \"[\" item \"]\"\nitem ::= big\n" + strings.Replace(distinct(maxParses+1, ""), "root", "big", 1), "big", []string{"root", "item", "big"}},
		// One-character strings: after their common quote, each its own.
		{"distinct second characters", distinct(maxParses+1, `"\"" `), "root_1", []string{"root", "root_1"}},
	} {
		_, err := Parse(tc.src)
		require.ErrorIs(t, err, ErrTooComplex, tc.name)
		var re *RuleError
		require.True(t, errors.As(err, &re), tc.name)
		require.Equal(t, tc.rule, re.Rule, tc.name)
		require.Equal(t, tc.path, re.Path, tc.name)
		require.Contains(t, err.Error(), fmt.Sprintf("limit of %d", maxParses), tc.name)
	}
	for _, tc := range []struct {
		name, src, match, not string
	}{
		{"distinct first characters", distinct(maxParses-1, ""), "\u0107x7", "\u0107x"},
		// One-character strings, whose characters go on alike: one class.
		{"one-character enum", rootOf(20000, func(i int) string { return fmt.Sprintf(`"\"\u%04x\""`, 0x4E00+i) }, ""), "\"\u4e07\"", "\"\u4e07"},
		{"objects", objects(10000), `{"k9999":1}`, `{"k10000":1}`},
		{"enum", alternation(20000, ""), `"v19999"`, `"v20000"`},
		{"prefixed enum", alternation(20000, `"x" `), `x"v123"`, `"v123"`},
		{"same value twice", `root ::= "a" | "a" | "ab"`, "ab", "b"},
	} {
		g, err := Parse(tc.src)
		require.NoError(t, err, tc.name)
		require.True(t, g.Accepts(tc.match), tc.name)
		require.False(t, g.Accepts(tc.not), tc.name)
	}
}
