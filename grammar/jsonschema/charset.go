package jsonschema

import (
	"slices"
	"strings"
)

// charset is a set of code points: sorted, disjoint, non-adjacent ranges.
type charset []rng

type rng struct{ lo, hi rune }

const maxRune = 0x10FFFF

func single(r rune) charset { return charset{{r, r}} }

// union is a ∪ b.
func (a charset) union(b charset) charset {
	all := append(slices.Clone(a), b...)
	slices.SortFunc(all, func(x, y rng) int { return int(x.lo - y.lo) })
	var out charset
	for _, r := range all {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// complement is every code point not in a.
func (a charset) complement() charset {
	var out charset
	next := rune(0)
	for _, r := range a {
		if r.lo > next {
			out = append(out, rng{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= maxRune {
		out = append(out, rng{next, maxRune})
	}
	return out
}

// minus is a \ b.
func (a charset) minus(b charset) charset {
	return a.complement().union(b).complement()
}

func (a charset) contains(c rune) bool {
	for _, r := range a {
		if c >= r.lo && c <= r.hi {
			return true
		}
	}
	return false
}

// The classes of ECMAScript regular expressions (JSON Schema's dialect).
var (
	digitSet = charset{{'0', '9'}}
	wordSet  = charset{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}
	spaceSet = charset{{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
		{0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}}
	// dotSet is "." without the s flag: all but line terminators.
	dotSet = charset{{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}.complement()
	// rawSet are the characters a JSON string holds unescaped (llama.cpp's
	// char rule also escapes DEL); surrogates are no characters.
	rawSet = charset{{0x20, maxRune}}.minus(charset{{'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}, {0xD800, 0xDFFF}})
)

// jsonEscapes are the short escapes of JSON strings.
var jsonEscapes = map[rune]string{'"': `\"`, '\\': `\\`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}

// gbnf is a GBNF expression matching one character of the set as it
// appears inside a JSON string: unescaped when it may be, else escaped
// (\" \\ \n ..., \u00XX for other control characters). It reports
// whether the expression is a single item (needs no parentheses).
func (a charset) gbnf() (string, bool) {
	var alts []string
	if raw := a.minus(rawSet.complement()); len(raw) > 0 {
		var b strings.Builder
		b.WriteByte('[')
		for _, r := range raw {
			b.WriteString(classChar(r.lo))
			if r.hi > r.lo {
				b.WriteByte('-')
				b.WriteString(classChar(r.hi))
			}
		}
		b.WriteByte(']')
		alts = append(alts, b.String())
	}
	for _, r := range a {
		for c := r.lo; c <= r.hi && c < 0x80; c++ {
			if rawSet.contains(c) {
				continue
			}
			esc, ok := jsonEscapes[c]
			if !ok {
				esc = `\u00` + strings.ToLower(hex(int(c), 2))
			}
			alts = append(alts, formatLiteral(esc))
		}
	}
	if len(alts) == 1 {
		return alts[0], true
	}
	return "(" + strings.Join(alts, " | ") + ")", true
}
