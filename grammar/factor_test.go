package grammar

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFactoringKeepsTheLanguage: a grammar factored (as Parse does) and the
// same grammar as written accept the same texts and the same prefixes —
// every text of up to 6 characters over the grammars' alphabet, the
// factored one through the matcher, the written one through the naive
// recognizer of reference_test.go — and so do the example grammars on
// their texts.
func TestFactoringKeepsTheLanguage(t *testing.T) {
	small := map[string]string{
		"shared prefixes": `root ::= "ab" | "abc" | "a" | "b" "a"* | "abc" "a"`,
		"shared rule":     "root ::= x \"a\" | x \"b\" | x\nx ::= \"c\" | \"c\" \"c\" | \"\"",
		"repeated values": `root ::= ("a" | "a" | "ab" | "b")+`,
		"nested groups":   `root ::= ("a" ("b" | "bc") | "a" "b" "c" "c"?) "a"?`,
		"enum":            `root ::= ("\"ab\"" | "\"abc\"" | "\"b\"" | "\"ba\"") ","?`,
		"recursion":       "root ::= \"a\" root \"b\" | \"a\" \"b\" | \"a\" root \"c\"",
		"inlined leads":   inlined(),
		"classes":         `root ::= "a" "," | "b" "," | "c" | "\"" | "a" "b" | [bc] "a"`,
	}
	alphabet := []byte(`abc",`)
	var texts [][]byte
	var grow func(prefix []byte)
	grow = func(prefix []byte) {
		texts = append(texts, prefix)
		if len(prefix) == 6 {
			return
		}
		for _, c := range alphabet {
			grow(append(prefix[:len(prefix):len(prefix)], c))
		}
	}
	grow(nil)
	check := func(name, src string, texts [][]byte) {
		factored := mustParse(t, src)
		written, err := parse(src, false)
		require.NoError(t, err, name)
		for _, text := range texts {
			viable, whole := refMatch(written, text)
			require.Equal(t, whole, factored.Accepts(string(text)), "%s: %q", name, text)
			require.Equal(t, viable, factored.Continues(string(text)), "%s: %q", name, text)
		}
	}
	for name, src := range small {
		check(name, src, texts)
	}
	examples := [][]byte{[]byte(`{"a": [1, 2.5e3, "x"]}`), []byte(`{"a"`), []byte("x=(1+2)*3\n"), []byte("- a\n- b\n"),
		[]byte("1. e4 e5 2. Nf3 "), []byte("int main() { return 0; }"), []byte("こんにちは。")}
	for name, src := range exampleGrammars(t) {
		var prefixes [][]byte
		for _, e := range examples {
			for i := range len(e) + 1 {
				prefixes = append(prefixes, e[:i])
			}
		}
		check(name, src, prefixes)
	}
}

// inlined is a rule of 20 alternatives, each a reference to a rule of one
// alternative (which Parse inlines, then merges), some recursive.
func inlined() string {
	var b strings.Builder
	b.WriteString(rootOf(20, func(i int) string { return fmt.Sprintf("r%d", i) }, ""))
	for i := range 20 {
		fmt.Fprintf(&b, "r%d ::= \"a\" q%d\n", i, i%3)
	}
	b.WriteString("q0 ::= \"b\"\nq1 ::= \"b\" \"c\" | \"c\"\nq2 ::= \"\\\"\" root? \",\"\n")
	return b.String()
}
