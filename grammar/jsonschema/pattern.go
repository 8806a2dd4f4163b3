package jsonschema

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Patterns are ECMAScript regular expressions (JSON Schema's dialect, with
// the u flag as ajv compiles them), matched against a string's characters,
// unanchored. llama.cpp's converter copies a pattern's text into the
// grammar: it needs ^ and $ around it (else it accepts any string), takes
// none of \d \w \s, and its "." and negated classes match a raw '"' or
// '\', ending the JSON string early or leaving a lone backslash. Here a
// pattern is parsed, and every character class becomes the JSON encodings
// of its characters (charset.gbnf); a side without its anchor matches any
// characters there. Lookaround, backreferences, word boundaries, Unicode
// property classes and flags are errors.

// errPatternUnsupported and errPatternInvalid tell errKind which sentinel
// a pattern's error wraps.
var (
	errPatternUnsupported = errors.New("not supported")
	errPatternInvalid     = errors.New("invalid")
)

type patternError struct {
	kind error
	msg  string
}

func (e *patternError) Error() string { return e.msg }
func (e *patternError) Unwrap() error { return e.kind }

// errKind is the sentinel of a pattern's error.
func errKind(err error) error {
	if errors.Is(err, errPatternUnsupported) {
		return ErrUnsupported
	}
	if errors.Is(err, errPatternLimit) {
		return ErrLimit
	}
	return ErrInvalid
}

var errPatternLimit = errors.New("limit")

const maxPatternNesting = 100

// patternParser parses one pattern into GBNF.
type patternParser struct {
	src   []rune
	i     int
	depth int
	surr  loneSurrogate // in the atom being parsed
	empty bool          // the atom parsed last matches the empty string
}

func (p *patternParser) errorf(kind error, format string, args ...any) error {
	return &patternError{kind, fmt.Sprintf("at offset %d: ", p.i) + fmt.Sprintf(format, args...)}
}

// patternRule is the body of a JSON string (without its quotes) whose
// characters match pattern; it uses the rule "char" when a side of the
// pattern is not anchored.
func patternRule(pattern string) (string, error) {
	if len(pattern) > maxPatternBytes {
		return "", &patternError{errPatternLimit, fmt.Sprintf("longer than %d bytes", maxPatternBytes)}
	}
	if !utf8.ValidString(pattern) {
		return "", &patternError{errPatternInvalid, "not UTF-8"}
	}
	p := &patternParser{src: []rune(pattern)}
	alts, _, err := p.alternatives(true)
	if err != nil {
		return "", err
	}
	if p.i < len(p.src) {
		return "", p.errorf(errPatternInvalid, "unbalanced ')'")
	}
	return strings.Join(alts, " | "), nil
}

// alternatives parses a|b|... up to ')' or the end. At the top, each
// alternative may start with ^ and end with $; without them it is
// surrounded by char*. empty is whether one of them matches the empty
// string.
func (p *patternParser) alternatives(top bool) (alts []string, empty bool, err error) {
	for {
		anchoredStart := false
		if top && p.peek('^') {
			p.i++
			anchoredStart = true
		}
		seq, anchoredEnd, seqEmpty, err := p.sequence(top)
		if err != nil {
			return nil, false, err
		}
		empty = empty || seqEmpty
		if top {
			if !anchoredStart {
				seq = append([]string{"char*"}, seq...)
			}
			if !anchoredEnd {
				seq = append(seq, "char*")
			}
		}
		alt := strings.Join(seq, " ")
		if alt == "" {
			alt = `""`
		}
		alts = append(alts, alt)
		if !p.peek('|') {
			return alts, empty, nil
		}
		p.i++
	}
}

func (p *patternParser) peek(r rune) bool { return p.i < len(p.src) && p.src[p.i] == r }

// sequence parses items up to '|', ')' or the end; at the top a final $
// anchors it. empty is whether it matches the empty string.
func (p *patternParser) sequence(top bool) (items []string, anchoredEnd, empty bool, err error) {
	empty = true
	var lit strings.Builder // pending literal characters
	flush := func() {
		if lit.Len() > 0 {
			items = append(items, formatLiteral(lit.String()))
			lit.Reset()
		}
	}
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch c {
		case '|', ')':
			flush()
			return items, false, empty, nil
		case '$':
			p.i++
			if !top || p.i < len(p.src) && p.src[p.i] != '|' {
				return nil, false, false, p.errorf(errPatternUnsupported, "'$' is supported only at the end")
			}
			flush()
			return items, true, empty, nil
		case '^':
			return nil, false, false, p.errorf(errPatternUnsupported, "'^' is supported only at the start")
		case '*', '+', '?', '{':
			return nil, false, false, p.errorf(errPatternInvalid, "nothing to repeat")
		}
		p.surr = loneSurrogate{}
		atom, set, err := p.atom()
		if err != nil {
			return nil, false, false, err
		}
		if p.surr.text != "" {
			if atom, set, err = p.surrogatePairs(set); err != nil {
				return nil, false, false, err
			}
		} else if set != nil && len(set.minus(surrogates)) == 0 {
			return nil, false, false, p.errorf(errPatternUnsupported, "a class of UTF-16 surrogates alone, which no UTF-8 text holds")
		}
		lo, hi, ok, err := p.quantifier()
		if err != nil {
			return nil, false, false, err
		}
		// A single raw character without a quantifier joins the literal.
		if !ok && len(set) == 1 && set[0].lo == set[0].hi && rawSet.contains(set[0].lo) {
			lit.WriteRune(set[0].lo)
			empty = false
			continue
		}
		atomEmpty := set == nil && p.empty
		empty = empty && (atomEmpty || ok && lo == 0)
		// A repetition without bound of what matches the empty string is
		// a left-recursive rule; each repetition must take a character.
		if ok && hi == -1 && atomEmpty {
			return nil, false, false, p.errorf(errPatternUnsupported, "a group that matches the empty string, repeated without bound; make each repetition take a character ((a?)+ is a*)")
		}
		flush()
		if ok && lo > MaxMinRepeat {
			return nil, false, false, p.errorf(errPatternLimit, "repeating at least %d times, more than MaxMinRepeat (%d)", lo, MaxMinRepeat)
		}
		if ok && hi > MaxMaxRepeat {
			return nil, false, false, p.errorf(errPatternLimit, "repeating at most %d times, more than MaxMaxRepeat (%d)", hi, MaxMaxRepeat)
		}
		if ok {
			atom = quantify(atom, lo, hi)
		}
		items = append(items, atom)
	}
	flush()
	return items, false, empty, nil
}

// atom parses one character, class or group. set is the atom's characters
// when it is one character.
func (p *patternParser) atom() (gbnf string, set charset, err error) {
	p.empty = false
	c := p.src[p.i]
	switch c {
	case '(':
		p.i++
		if p.peek('?') {
			switch {
			case p.i+1 < len(p.src) && p.src[p.i+1] == ':':
				p.i += 2
			case p.i+2 < len(p.src) && p.src[p.i+1] == '<' && p.src[p.i+2] != '=' && p.src[p.i+2] != '!':
				end := p.i
				for end < len(p.src) && p.src[end] != '>' {
					end++
				}
				if end == len(p.src) {
					return "", nil, p.errorf(errPatternInvalid, "unterminated group name")
				}
				p.i = end + 1
			default:
				return "", nil, p.errorf(errPatternUnsupported, "lookaround and group flags are not supported")
			}
		}
		p.depth++
		if p.depth > maxPatternNesting {
			return "", nil, p.errorf(errPatternLimit, "groups nested deeper than %d", maxPatternNesting)
		}
		alts, empty, err := p.alternatives(false)
		if err != nil {
			return "", nil, err
		}
		p.empty = empty
		p.depth--
		if !p.peek(')') {
			return "", nil, p.errorf(errPatternInvalid, "unbalanced '('")
		}
		p.i++
		return "(" + strings.Join(alts, " | ") + ")", nil, nil
	case '[':
		set, err = p.class()
	case '.':
		p.i++
		set = dotSet
	case '\\':
		set, err = p.escape(false)
	case ']', '}':
		return "", nil, p.errorf(errPatternInvalid, "lone %q", c)
	default:
		p.i++
		set = single(c)
	}
	if err != nil {
		return "", nil, err
	}
	if len(set) == 0 {
		return "", nil, p.errorf(errPatternUnsupported, "a class that matches no character")
	}
	g, _ := set.gbnf()
	return g, set, nil
}

// class parses [...] or [^...].
func (p *patternParser) class() (charset, error) {
	p.i++ // [
	negated := p.peek('^')
	if negated {
		p.i++
	}
	var set charset
	for {
		if p.i >= len(p.src) {
			return nil, p.errorf(errPatternInvalid, "unterminated character class")
		}
		if p.src[p.i] == ']' {
			p.i++
			break
		}
		lo, err := p.classAtom()
		if err != nil {
			return nil, err
		}
		if p.peek('-') && p.i+1 < len(p.src) && p.src[p.i+1] != ']' {
			p.i++
			hi, err := p.classAtom()
			if err != nil {
				return nil, err
			}
			if len(lo) != 1 || len(hi) != 1 || lo[0].lo != lo[0].hi || hi[0].lo != hi[0].hi || lo[0].lo > hi[0].lo {
				return nil, p.errorf(errPatternInvalid, "bad range in a character class")
			}
			set = set.union(charset{{lo[0].lo, hi[0].lo}})
			continue
		}
		set = set.union(lo)
	}
	if negated {
		set = set.complement()
	}
	return set, nil
}

// classAtom is one character of a class, or an escaped class (\d ...).
func (p *patternParser) classAtom() (charset, error) {
	if p.src[p.i] == '\\' {
		return p.escape(true)
	}
	c := p.src[p.i]
	p.i++
	return single(c), nil
}

// escape parses \x: a class (\d \w \s and their negations), a control
// character, \xHH, \uHHHH (a pair of them for a surrogate pair), or a
// syntax character taken literally.
func (p *patternParser) escape(inClass bool) (charset, error) {
	start := p.i
	p.i++ // backslash
	if p.i >= len(p.src) {
		return nil, p.errorf(errPatternInvalid, "trailing backslash")
	}
	c := p.src[p.i]
	p.i++
	switch c {
	case 'd':
		return digitSet, nil
	case 'D':
		return digitSet.complement(), nil
	case 'w':
		return wordSet, nil
	case 'W':
		return wordSet.complement(), nil
	case 's':
		return spaceSet, nil
	case 'S':
		return spaceSet.complement(), nil
	case 't':
		return single('\t'), nil
	case 'n':
		return single('\n'), nil
	case 'r':
		return single('\r'), nil
	case 'f':
		return single('\f'), nil
	case 'v':
		return single('\v'), nil
	case '0':
		return single(0), nil
	case 'b':
		if inClass {
			return single('\b'), nil
		}
		return nil, p.errorf(errPatternUnsupported, `word boundaries (\b) are not supported`)
	case 'x', 'u':
		n := 2
		if c == 'u' {
			n = 4
		}
		if p.i+n > len(p.src) {
			return nil, p.errorf(errPatternInvalid, `bad \%c escape`, c)
		}
		v, err := strconv.ParseUint(string(p.src[p.i:p.i+n]), 16, 32)
		if err != nil {
			return nil, p.errorf(errPatternInvalid, `bad \%c escape`, c)
		}
		p.i += n
		if c == 'u' && highSurrogates.contains(rune(v)) {
			if low, ok := p.lowSurrogatePair(); ok {
				p.i += 6
				return single(pairCode(rune(v), low)), nil
			}
		}
		p.noteSurrogate(rune(v), start)
		return single(rune(v)), nil
	case '-':
		if inClass {
			return single('-'), nil
		}
	}
	if strings.ContainsRune(`^$\.*+?()[]{}|/`, c) {
		return single(c), nil
	}
	return nil, p.errorf(errPatternUnsupported, `the escape \%c is not supported`, c)
}

// quantifier parses *, +, ?, {n}, {n,}, {n,m} (and a lazy '?' after one,
// which changes nothing for a whole-string match). hi -1: no maximum.
func (p *patternParser) quantifier() (lo, hi int, ok bool, err error) {
	if p.i >= len(p.src) {
		return 0, 0, false, nil
	}
	switch p.src[p.i] {
	case '*':
		lo, hi = 0, -1
		p.i++
	case '+':
		lo, hi = 1, -1
		p.i++
	case '?':
		lo, hi = 0, 1
		p.i++
	case '{':
		end := p.i
		for end < len(p.src) && p.src[end] != '}' {
			end++
		}
		if end == len(p.src) {
			return 0, 0, false, p.errorf(errPatternInvalid, "unterminated '{'")
		}
		body := string(p.src[p.i+1 : end])
		a, b, comma := strings.Cut(body, ",")
		if lo, err = repeatCount(a); err != nil {
			return 0, 0, false, p.errorf(errKindOf(err), "quantifier {%s}: %v", body, err)
		}
		hi = lo
		if comma {
			hi = -1
			if b != "" {
				if hi, err = repeatCount(b); err != nil {
					return 0, 0, false, p.errorf(errKindOf(err), "quantifier {%s}: %v", body, err)
				}
			}
		}
		if hi >= 0 && hi < lo {
			return 0, 0, false, p.errorf(errPatternInvalid, "quantifier {%s} out of order", body)
		}
		p.i = end + 1
	default:
		return 0, 0, false, nil
	}
	if p.peek('?') {
		p.i++
	}
	if p.i < len(p.src) && strings.ContainsRune("*+?{", p.src[p.i]) {
		return 0, 0, false, p.errorf(errPatternInvalid, "nothing to repeat")
	}
	return lo, hi, true, nil
}

var errTooMany = errors.New("more than MaxRepeat")

func errKindOf(err error) error {
	if err == errTooMany {
		return errPatternLimit
	}
	return errPatternInvalid
}

// repeatCount reads a quantifier's count, at most MaxRepeat.
func repeatCount(s string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, errors.New("not a count")
	}
	if len(s) > 6 {
		return 0, errTooMany
	}
	n, _ := strconv.Atoi(s)
	if n > MaxRepeat {
		return 0, errTooMany
	}
	return n, nil
}

// quantify is item repeated lo to hi times in GBNF.
func quantify(item string, lo, hi int) string {
	switch {
	case hi == 0:
		return `""`
	case lo == 0 && hi == -1:
		return item + "*"
	case lo == 1 && hi == -1:
		return item + "+"
	case lo == 0 && hi == 1:
		return item + "?"
	case hi == -1:
		return fmt.Sprintf("%s{%d,}", item, lo)
	case lo == hi:
		return fmt.Sprintf("%s{%d}", item, lo)
	}
	return fmt.Sprintf("%s{%d,%d}", item, lo, hi)
}
