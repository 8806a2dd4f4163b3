package grammar

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// alternation is `root ::= ( "\"v0\"" | "\"v1\"" | ... )` with n values,
// each prefixed by prefix: an enum as a schema converter writes it.
func alternation(n int, prefix string) string {
	var b strings.Builder
	b.WriteString("root ::= (")
	for i := range n {
		if i > 0 {
			b.WriteString(" | ")
		}
		fmt.Fprintf(&b, `%s"\"v%d\""`, prefix, i)
	}
	b.WriteString(")\n")
	return b.String()
}

// objects is an anyOf of n objects, each beginning with "{" and optional
// blanks, as the JSON schema converter writes them.
func objects(n int) string {
	var b strings.Builder
	b.WriteString("root ::= ")
	for i := range n {
		if i > 0 {
			b.WriteString(" | ")
		}
		fmt.Fprintf(&b, "o%d", i)
	}
	b.WriteString("\nspace ::= | \" \" | \"\\n\" [ \\t]{0,20}\n")
	for i := range n {
		fmt.Fprintf(&b, "o%d ::= \"{\" space \"\\\"k%d\\\"\" space \":\" space [0-9] \"}\"\n", i, i)
	}
	return b.String()
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
// generation never meets the limit; one at the limit is matched.
func TestParseRefusesWideAlternations(t *testing.T) {
	for _, tc := range []struct {
		name, src, rule string
		path            []string
	}{
		{"enum", alternation(maxParses+1, ""), "root_1", []string{"root", "root_1"}},
		{"objects", objects(maxParses/3 + 1), "root", []string{"root"}},
		{"nested", "root ::= \"[\" item \"]\"\nitem ::= big\n" + strings.Replace(alternation(maxParses+1, ""), "root", "big", 1), "big_3", []string{"root", "item", "big", "big_3"}},
		// Alternatives that begin alike are all held past their common
		// first character.
		{"prefixed", alternation(maxParses+1, `"x" `), "root_1", []string{"root", "root_1"}},
	} {
		_, err := Parse(tc.src)
		require.ErrorIs(t, err, ErrTooComplex, tc.name)
		var re *RuleError
		require.True(t, errors.As(err, &re), tc.name)
		require.Equal(t, tc.rule, re.Rule, tc.name)
		require.Equal(t, tc.path, re.Path, tc.name)
		require.Contains(t, err.Error(), fmt.Sprintf("limit of %d", maxParses), tc.name)
	}
	for name, src := range map[string]string{
		"enum":    alternation(maxParses-1, ""),
		"objects": objects(maxParses/3 - 1),
	} {
		g, err := Parse(src)
		require.NoError(t, err, name)
		require.True(t, g.Accepts(`"v7"`) || g.Accepts(`{"k7":1}`), name)
	}
}
