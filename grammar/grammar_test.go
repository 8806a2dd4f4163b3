package grammar

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func mustParse(t testing.TB, src string) *Grammar {
	t.Helper()
	g, err := Parse(src)
	require.NoError(t, err)
	return g
}

func exampleGrammars(t testing.TB) map[string]string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.gbnf")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		out[strings.TrimSuffix(filepath.Base(f), ".gbnf")] = string(b)
	}
	return out
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{``, "no rule named root"},
		{`root ::= foo`, `undefined rule "foo"`},
		{`root ::= "a`, "unterminated string literal"},
		{`root ::= [a-`, "unterminated character class"},
		{`root ::= [abc`, "unterminated character class"},
		{`root ::= (a`, "expecting ) to close the group"},
		{"root ::= \"a\"\nroot ::= \"b\"", `rule "root" is defined twice`},
		{`root = "a"`, "expecting ::="},
		{`root ::= *`, "follows nothing it could repeat"},
		{`root ::= "a"{3,2}`, "the maximum is below the minimum"},
		{`root ::= "a"{2001}`, "at most 2000"},
		// A maximum past the limit is refused, not read as no maximum.
		{`root ::= "a"{0,2001}`, "repeating at most 2001 times: at most 2000 (write {0,} for no maximum)"},
		{`root ::= "a"{3,50000}`, "line 1 column 13: repeating at most 50000 times"},
		{`root ::= "a"{1`, "expecting } to close the repetition"},
		{`root ::= "\q"`, `unknown escape \q`},
		{`root ::= "\x4"`, "expecting 2 hex digits"},
		{`root ::= "\U00110000"`, "beyond Unicode"},
		{`root ::= <[12]>`, "token references"},
		{`root ::= root "a" | "b"`, `rule "root" is left-recursive`},
		{"root ::= a \"x\"\na ::= b a | \"y\"\nb ::= \"\" | \"z\"", `rule "a" is left-recursive`},
		{`root ::= "a" )`, "expecting a line break or the end"},
		{"root ::= \"\xff\"", "not valid UTF-8"},
		{`root ::= "a"{99999999999}`, "integer too large"},
	} {
		_, err := Parse(tc.src)
		require.Error(t, err, tc.src)
		require.Contains(t, err.Error(), tc.want, tc.src)
		require.True(t, errors.Is(err, ErrSyntax), tc.src)
	}
}

func TestRepetitionBlowupIsRefused(t *testing.T) {
	var src strings.Builder
	src.WriteString("root ::= r0\n")
	for i := range 30 {
		fmt.Fprintf(&src, "r%d ::= \"abcdefghijklmnopqrstuvwxyz0123456789\"{2000}\n", i)
	}
	_, err := Parse(src.String())
	require.ErrorIs(t, err, ErrTooComplex)
}

// TestAcceptsMatchesReference runs texts through the matcher and through
// the naive recognizer: whole matches and viable prefixes must agree.
func TestAcceptsMatchesReference(t *testing.T) {
	texts := map[string][]string{
		"json": {`{}`, `{"a": 1}`, `{"a": [1, 2.5e3, "x\u00e9\n"]}`, `{"a"`, `[]`, `{"é": true}`, `{"a": nul}`,
			`{"a":-0.5E+7}`, `{"a": "\uZZZZ"}`, "{\"a\": \"\x01\"}", `{"a":{"b":{"c":[]}}}`, `{"日本": "語"}`, `{"a": 01}`},
		"arithmetic": {"x=1\n", "1+2\n", "(a*b)=c\n", "x=1\ny=2\n", "x = 1", "x=(1\n"},
		"list":       {"- a\n", "- a\n- b\n", "a", "- \n"},
		"japanese":   {"こんにちは", "hello", "日本語。", ""},
		"chess":      {"1. e4 e5 ", "1. Nf3 Nf6 2. c4 g6 ", "e4"},
		"c":          {"int main(int a) { return a; }", "int x", "void f() {}"},
	}
	for name, src := range exampleGrammars(t) {
		g := mustParse(t, src)
		for _, text := range texts[name] {
			viable, whole := refMatch(g, []byte(text))
			require.Equal(t, whole, g.Accepts(text), "%s: %q", name, text)
			for i := 0; i <= len(text); i++ {
				v, _ := refMatch(g, []byte(text[:i]))
				require.Equal(t, v, g.Continues(text[:i]), "%s: prefix %q", name, text[:i])
			}
			_ = viable
		}
	}
}

// testVocab is a vocabulary of every single byte, JSON-ish and story-ish
// pieces, multi-byte characters whole and cut, and a few control tokens
// (no bytes).
func testVocab(r *rand.Rand) [][]byte {
	var pieces [][]byte
	for b := range 256 {
		pieces = append(pieces, []byte{byte(b)})
	}
	for _, p := range []string{"", "", `{"`, `":`, `",`, `"}`, ` "`, `": "`, "true", "false", "null", " the", "ing",
		"12", "3.5", "e+", `\n`, `\u00`, "é", "日本", "語。", "\xe6\x97", "\xa5", "- ", "\n- ", "x=", "(1", ")\n",
		"   ", "\n\n", "},{", "]}", "[1,", "-0", "é\"", "\"é"} {
		pieces = append(pieces, []byte(p))
	}
	for range 200 {
		n := 1 + r.IntN(6)
		var p []byte
		for range n {
			const chars = " {}[]\":,abcxyz0123456789.-+e\\n\t"
			p = append(p, chars[r.IntN(len(chars))])
		}
		pieces = append(pieces, p)
	}
	return pieces
}

// TestMaskMatchesReference walks random generations under each example
// grammar and, at every step, checks each token's verdict in the mask
// against the naive recognizer on the text so far plus the token.
func TestMaskMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := testVocab(r)
	v := NewVocab(pieces)
	const eos = 256 // the first empty piece
	for name, src := range exampleGrammars(t) {
		g := mustParse(t, src)
		for walk := range 4 {
			c := NewConstraint(g, v, []int{eos})
			var text []byte
			for step := range 24 {
				logits := make([]float32, len(pieces))
				complete, err := c.Mask(logits, 0)
				require.NoError(t, err, "%s walk %d step %d after %q", name, walk, step, text)
				var allowed []int
				for id, p := range pieces {
					viable, whole := refMatch(g, append(append([]byte(nil), text...), p...))
					if len(p) == 0 {
						_, whole = refMatch(g, text)
						viable = id == eos && whole
					}
					_ = whole
					banned := math.IsInf(float64(logits[id]), -1)
					require.Equal(t, viable, !banned, "%s: token %q after %q", name, p, text)
					if viable && len(p) > 0 {
						allowed = append(allowed, id)
					}
				}
				_, whole := refMatch(g, text)
				require.Equal(t, whole && len(allowed) == 0, complete, "%s after %q", name, text)
				if len(allowed) == 0 {
					break
				}
				id := allowed[r.IntN(len(allowed))]
				require.NoError(t, c.Accept(pieces[id]))
				text = append(text, pieces[id]...)
			}
		}
	}
}

func TestAcceptRejectsAndKeepsState(t *testing.T) {
	g := mustParse(t, `root ::= "ab" | "ac"`)
	v := NewVocab([][]byte{[]byte("a"), []byte("b"), []byte("x")})
	c := NewConstraint(g, v, nil)
	require.NoError(t, c.Accept([]byte("a")))
	require.ErrorIs(t, c.Accept([]byte("x")), ErrRejected)
	require.NoError(t, c.Accept([]byte("b")))
	require.True(t, c.Accepting())
	c.Reset()
	require.False(t, c.Accepting())
}

func TestDeadEnd(t *testing.T) {
	g := mustParse(t, `root ::= "é"`)
	v := NewVocab([][]byte{[]byte("a"), []byte("e")})
	_, err := NewConstraint(g, v, nil).Mask(make([]float32, 2), 0)
	require.ErrorIs(t, err, ErrDeadEnd)
}

func FuzzParse(f *testing.F) {
	for _, src := range exampleGrammars(f) {
		f.Add(src, "{\"a\": 1}")
	}
	f.Add(`root ::= [^"\\]* "x"{2,5} (a | "b")?`+"\na ::= \"\\u00e9\"+", "éébxx")
	f.Fuzz(func(t *testing.T, src, text string) {
		g, err := Parse(src)
		if err != nil {
			require.ErrorIs(t, err, ErrSyntax)
			return
		}
		if len(g.elems) < 1000 && len(text) < 64 {
			_, whole := refMatch(g, []byte(text))
			require.Equal(t, whole, g.Accepts(text))
		}
	})
}

// TestBudgetEndsInAWholeMatch picks tokens at random among those the mask
// allows, under a token budget: whatever is picked, the text is a whole
// match when the budget runs out (the vocabulary has every byte), if the
// budget can hold the grammar's shortest text at all.
func TestBudgetEndsInAWholeMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pieces := testVocab(r)
	v := NewVocab(pieces)
	const eos = 256
	for name, src := range exampleGrammars(t) {
		g := mustParse(t, src)
		for _, budget := range []int{12, 25, 40, 80} {
			for walk := range 5 {
				c := NewConstraint(g, v, []int{eos})
				var text []byte
				for left := budget; left > 0; left-- {
					logits := make([]float32, len(pieces))
					complete, err := c.Mask(logits, left)
					require.NoError(t, err)
					if complete {
						break
					}
					var allowed []int
					for id := range pieces {
						if !math.IsInf(float64(logits[id]), -1) {
							allowed = append(allowed, id)
						}
					}
					require.NotEmpty(t, allowed, "%s budget %d after %q", name, budget, text)
					id := allowed[r.IntN(len(allowed))]
					if id == eos {
						break
					}
					require.NoError(t, c.Accept(pieces[id]))
					text = append(text, pieces[id]...)
				}
				g.mu.Lock()
				shortest := int(g.t.stateFinish(g.t.start))
				g.mu.Unlock()
				if shortest <= budget {
					require.True(t, g.Accepts(string(text)), "%s budget %d walk %d: %q", name, budget, walk, text)
				}
			}
		}
	}
}

// TestMaskNeverEntersARuleThatCannotEnd: a grammar whose root can end may
// still hold an alternative that cannot ("b" x, x only recursing); the mask
// bans the tokens that would enter it, however far the token limit, so a
// generation can always finish with a match.
func TestMaskNeverEntersARuleThatCannotEnd(t *testing.T) {
	tests := []struct {
		name, src string
		after     string // the text so far
		allowed   []string
		banned    []string
	}{
		{"a dead alternative at the root", "root ::= \"a\" | \"b\" x\nx ::= \"c\" x", "", []string{"a"}, []string{"b", "bc"}},
		{"a dead optional part", "root ::= \"a\" (\"b\" x)?\nx ::= \"c\" x", "a", []string{}, []string{"b", "bc"}},
		{"a dead repetition", "root ::= (\"a\" | \"b\" x)+\nx ::= \"c\" x", "aa", []string{"a"}, []string{"b"}},
		{"the live alternative shares the prefix", "root ::= \"ab\" x | \"ac\"\nx ::= \"c\" x", "a", []string{"c"}, []string{"b"}},
	}
	pieces := [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("bc"), []byte("ab"), []byte("ac")}
	v := NewVocab(pieces)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := mustParse(t, tt.src)
			c := NewConstraint(g, v, nil)
			if tt.after != "" {
				require.NoError(t, c.Accept([]byte(tt.after)))
			}
			logits := make([]float32, len(pieces))
			_, err := c.Mask(logits, 0)
			require.NoError(t, err)
			for id, p := range pieces {
				banned := math.IsInf(float64(logits[id]), -1)
				if slices.Contains(tt.allowed, string(p)) {
					require.False(t, banned, "%q after %q", p, tt.after)
				}
				if slices.Contains(tt.banned, string(p)) {
					require.True(t, banned, "%q after %q", p, tt.after)
				}
			}
		})
	}
}

// TestSurrogatesMatchNothing: UTF-16 surrogates are no characters of UTF-8
// text: a grammar that needs one can never end (refused, saying why), a
// class of them matches nothing, and ranges and negated classes that span
// them hold every other character.
func TestSurrogatesMatchNothing(t *testing.T) {
	refused := []struct{ src, want string }{
		{`root ::= "abc" "\uD800"`, `\uD800 at line 1 column 17, half of a UTF-16 surrogate pair`},
		{`root ::= "a"+ [\uDC00-\uDFFF]`, `[\uDC00-\uDFFF] at line 1 column 15, which holds only halves of UTF-16 surrogate pairs`},
		{`root ::= ("a" | "b")* "\uDFFF"`, `half of a UTF-16 surrogate pair`},
		{`root ::= "hello" [\uD800-\uDBFF][\uDC00-\uDFFF]`, `which holds only halves of UTF-16 surrogate pairs`},
		{`root ::= "\uD83D\uDE00"`, `\uD83D at line 1 column 11, half of a UTF-16 surrogate pair`},
	}
	for _, tt := range refused {
		_, err := Parse(tt.src)
		require.ErrorIs(t, err, ErrEndless, tt.src)
		require.Contains(t, err.Error(), tt.want, tt.src)
	}
	accepted := []struct {
		src      string
		match    []string
		mismatch []string
	}{
		{`root ::= [\u0000-\uFFFF]`, []string{"a", "\uFFFD", "\uE000", "\uD7FF"}, []string{"\U0001F600"}},
		{`root ::= [^a]`, []string{"b", "\U0001F600", "\uE000"}, []string{"a"}},
		{`root ::= "a" | [\uD800]`, []string{"a"}, []string{"\xed\xa0\x80"}},
		{`root ::= .`, []string{"\U0010FFFF"}, []string{"\xed\xa0\x80", "\xed\xbf\xbf"}},
		{`root ::= "\U0001F600"`, []string{"\U0001F600"}, nil},
	}
	for _, tt := range accepted {
		g := mustParse(t, tt.src)
		for _, m := range tt.match {
			require.True(t, g.Accepts(m), "%s accepts %q", tt.src, m)
		}
		for _, m := range tt.mismatch {
			require.False(t, g.Accepts(m), "%s refuses %q", tt.src, m)
		}
	}
}
