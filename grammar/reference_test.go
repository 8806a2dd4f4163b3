package grammar

import (
	"slices"
	"unicode/utf8"
)

// A naive recognizer, written the way llama.cpp's llama_grammar_accept is
// (explicit stacks of positions, re-expanded on every character, no
// interning, no memo, no trie), over the same compiled rules: the tests
// hold the fast matcher and the masks to it.

type refStack []int32 // positions, the top last

// refExpand appends the stacks s becomes once the rule references on its
// top are replaced by their alternatives.
func refExpand(g *Grammar, s refStack, out []refStack) []refStack {
	if len(s) == 0 {
		for _, o := range out {
			if len(o) == 0 {
				return out
			}
		}
		return append(out, s)
	}
	top := s[len(s)-1]
	e := g.elems[top]
	if e.kind == elemChars {
		for _, o := range out {
			if slices.Equal(o, s) {
				return out
			}
		}
		return append(out, s)
	}
	for _, alt := range g.rules[e.arg] {
		next := slices.Clone(s[:len(s)-1])
		if g.elems[top+1].kind != elemEnd {
			next = append(next, top+1)
		}
		if g.elems[alt].kind != elemEnd {
			next = append(next, alt)
		}
		out = refExpand(g, next, out)
	}
	return out
}

func refStart(g *Grammar) []refStack {
	var out []refStack
	for _, alt := range g.rules[g.root] {
		var s refStack
		if g.elems[alt].kind != elemEnd {
			s = refStack{alt}
		}
		out = refExpand(g, s, out)
	}
	return out
}

func refAccept(g *Grammar, stacks []refStack, r rune) []refStack {
	var out []refStack
	for _, s := range stacks {
		if len(s) == 0 {
			continue
		}
		top := s[len(s)-1]
		if !g.sets[g.elems[top].arg].contains(r) {
			continue
		}
		next := slices.Clone(s[:len(s)-1])
		if g.elems[top+1].kind != elemEnd {
			next = append(next, top+1)
		}
		out = refExpand(g, next, out)
	}
	return out
}

// refMatch feeds text and reports whether some parse survives it (viable)
// and whether one is finished with no character left unfinished (whole).
// A text ending in an unfinished UTF-8 character is viable if some parse
// accepts a character that the bytes can still become.
func refMatch(g *Grammar, text []byte) (viable, whole bool) {
	stacks := refStart(g)
	for len(text) > 0 {
		r, size := utf8.DecodeRune(text)
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(text) {
				return refPartialViable(g, stacks, text), false
			}
			return false, false
		}
		text = text[size:]
		if stacks = refAccept(g, stacks, r); len(stacks) == 0 {
			return false, false
		}
	}
	for _, s := range stacks {
		if len(s) == 0 {
			return true, true
		}
	}
	return true, false
}

// refPartialViable reports whether some parse accepts a character the
// unfinished one can become: the code points between its completions with
// the smallest and the largest continuation bytes.
func refPartialViable(g *Grammar, stacks []refStack, prefix []byte) bool {
	var need int
	switch {
	case prefix[0] >= 0xF0:
		need = 4
	case prefix[0] >= 0xE0:
		need = 3
	default:
		need = 2
	}
	// Only the first missing byte decides validity (overlong forms,
	// surrogates, past U+10FFFF): try each, the rest at their extremes.
	first, last := rune(-1), rune(-1)
	for c := byte(0x80); c <= 0xBF; c++ {
		lo := append(slices.Clone(prefix), c)
		hi := slices.Clone(lo)
		for len(lo) < need {
			lo, hi = append(lo, 0x80), append(hi, 0xBF)
		}
		a, n := utf8.DecodeRune(lo)
		b, m := utf8.DecodeRune(hi)
		if a == utf8.RuneError && n <= 1 || b == utf8.RuneError && m <= 1 {
			continue
		}
		if first < 0 {
			first = a
		}
		last = b
	}
	if first < 0 {
		return false
	}
	for _, s := range stacks {
		if len(s) > 0 && g.sets[g.elems[s[len(s)-1]].arg].overlaps(first, last) {
			return true
		}
	}
	return false
}
