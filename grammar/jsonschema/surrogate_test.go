package jsonschema

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/wasmlm/wasmlm/grammar"
)

// TestPatternSurrogates: a pattern's \u escapes of UTF-16 surrogates are
// either the characters their pairs encode (an escaped pair, a class of
// high surrogates before one of low surrogates) or an error at the
// "pattern" keyword naming the escape — never dropped, never an empty
// class left for the grammar parser to refuse under an internal rule's
// name.
func TestPatternSurrogates(t *testing.T) {
	for _, tt := range []struct {
		name, pattern string
		gbnf          string // the string's rule, when it converts
		err           error
		msg           string // in the message, when it fails
	}{
		{"escaped pair", `^\\uD83D\\uDE00$`, `"\"" ("😀") "\""`, nil, ""},
		{"escaped pair in lower case", `^\\ud83d\\ude00$`, `"\"" ("😀") "\""`, nil, ""},
		{"escaped pair repeated", `^a\\uD83D\\uDE00+$`, `"\"" ("a" [\U0001F600]+) "\""`, nil, ""},
		{"escaped pairs as a range", `^[\\uD83D\\uDE00-\\uD83D\\uDE4F]$`, `"\"" ([\U0001F600-\U0001F64F]) "\""`, nil, ""},
		{"any astral character", `^x[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]$`, `"\"" ("x" [\U00010000-\U0010FFFF]) "\""`, nil, ""},
		{"astral characters repeated in a group", `^(?:[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])+$`, `"\"" (([\U00010000-\U0010FFFF])+) "\""`, nil, ""},
		{"one high surrogate, a low range", `^[\\uD83D][\\uDE00-\\uDE4F]$`, `"\"" ([\U0001F600-\U0001F64F]) "\""`, nil, ""},
		{"two high surrogates, two lows", `^[\\uD83C\\uD83D][\\uDC00\\uDE00]$`, `"\"" ([\U0001F000\U0001F200\U0001F400\U0001F600]) "\""`, nil, ""},
		{"escaped high, all lows", `^\\uD83D[\\uDC00-\\uDFFF]$`, `"\"" ([\U0001F400-\U0001F7FF]) "\""`, nil, ""},

		{"lone high surrogate", `^ab\\uD800$`, "", ErrUnsupported, `at offset 3: \uD800 is half of a UTF-16 surrogate pair, which no UTF-8 text holds; write the character or the pair`},
		{"lone low surrogate", `^\\uDE00$`, "", ErrUnsupported, `\uDE00 is half of a UTF-16 surrogate pair`},
		{"reversed pair", `^\\uDE00\\uD83D$`, "", ErrUnsupported, `at offset 1: \uDE00 is half`},
		{"high before a character", `^\\uD83Da$`, "", ErrUnsupported, `\uD83D is half`},
		{"high at the end", `\\uD83D`, "", ErrUnsupported, `\uD83D is half`},
		{"high before an alternative", `^\\uD83D|a$`, "", ErrUnsupported, `\uD83D is half`},
		{"class of low surrogates", `^[\\uDC00-\\uDFFF]+$`, "", ErrUnsupported, `\uDC00 is half`},
		{"surrogates mixed with characters", `^[a\\uD800-\\uDFFF]$`, "", ErrUnsupported, `\uD800 is half`},
		{"negated surrogate", `^[^\\uD800]$`, "", ErrUnsupported, `\uD800 is half`},
		{"high class quantified", `^[\\uD800-\\uDBFF]+[\\uDC00-\\uDFFF]$`, "", ErrUnsupported, `\uD800 is half`},
		{"low class quantified", `^[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]+$`, "", ErrUnsupported, `a quantifier on the low half of a surrogate pair`},
		{"high class before a mixed class", `^[\\uD800-\\uDBFF][a\\uDC00-\\uDFFF]$`, "", ErrUnsupported, `\uDC00 is half`},
		{"high class before a group", `^[\\uD800-\\uDBFF]([\\uDC00-\\uDFFF])$`, "", ErrUnsupported, `\uD800 is half`},
		{"pairs past the ranges bound", `^[\\uD800-\\uDBFF][\\uDC00\\uDC02]$`, "", ErrLimit, `more than 256 ranges`},
		{"surrogates alone, written as characters", `^[^\\u0000-\\uD7FF\\uE000-\\uFFFF𐀀-` + "\U0010FFFF" + `]$`, "", ErrUnsupported, `a class of UTF-16 surrogates alone`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			schema := `{"type":"object","properties":{"k":{"type":"string","pattern":"` + tt.pattern + `"}},"required":["k"]}`
			g, err := ToGBNF([]byte(schema))
			if tt.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(g, "k ::= "+tt.gbnf+"\n") {
					t.Errorf("got\n%s\nwant the rule k ::= %s", g, tt.gbnf)
				}
				if _, err := grammar.Parse(g); err != nil {
					t.Errorf("the grammar does not parse: %v\n%s", err, g)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v (grammar %q), want an *Error", err, g)
			}
			if !errors.Is(err, tt.err) || e.Pointer != "/properties/k" || e.Keyword != "pattern" || !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("got %v (%v) at %q keyword %q, want %v at /properties/k keyword pattern with %q", err, e.Err, e.Pointer, e.Keyword, tt.err, tt.msg)
			}
			if regexp.MustCompile(`\bk_\d|grammar`).MatchString(e.Msg) {
				t.Errorf("the message %q names an internal rule or the grammar", e.Msg)
			}
		})
	}
}
