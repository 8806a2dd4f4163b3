package grammar

import (
	"slices"
	"strings"
)

// factor merges, in every rule, the alternatives that begin with the same
// element into one that continues with a new rule of their rests, and so
// on down (left-factoring): the values of an enum become a trie. Wide
// rules first inline the rules their alternatives begin with, and
// alternatives that differ in their first character only become one
// (mergeClasses). The
// language is the same; what changes is how many parses the matcher holds
// at once. Unfactored, an enum of 5,000 strings is 5,000 parses after its
// opening quote, past maxParses; factored, it is as many as the values
// that can follow the text so far differ in their next character.
func (p *parser) factor() {
	// Rules made here are appended, and factored in turn.
	for r := 0; r < len(p.alts); r++ {
		p.alts[r] = p.factorRule(int32(r))
	}
}

// factorRule returns rule r's alternatives with those that share their
// first element merged.
func (p *parser) factorRule(r int32) [][]elem {
	alts := p.alts[r]
	if len(alts) < 2 {
		return alts
	}
	if len(alts) > inlineAbove {
		alts = p.inlineLeads(r, alts)
	}
	first := map[elem]int{} // an alternative's first element → its place in out
	var out [][]elem
	var rests [][][]elem // rests[i]: the rests of the alternatives merged into out[i]
	for _, a := range alts {
		if len(a) == 0 {
			out, rests = append(out, a), append(rests, nil)
			continue
		}
		if i, ok := first[a[0]]; ok {
			rests[i] = append(rests[i], a[1:])
			continue
		}
		first[a[0]] = len(out)
		out, rests = append(out, a), append(rests, [][]elem{a[1:]})
	}
	base, _, _ := strings.Cut(p.names[r], "_")
	for i, rest := range rests {
		if len(rest) < 2 {
			continue
		}
		id := p.generated(base)
		p.alts[id], p.defined[id] = rest, true
		out[i] = []elem{out[i][0], {elemRef, id}}
	}
	return p.mergeClasses(out)
}

// mergeClasses merges the alternatives that begin with a character and go
// on alike into one that begins with the union of their characters:
// "a" T | "b" T is [ab] T. Prefix factoring leaves such alternatives side
// by side (an enum of one-character strings: after the common quote, one
// alternative per character, each closing with a quote); merged, they are
// one parse.
func (p *parser) mergeClasses(alts [][]elem) [][]elem {
	if len(alts) < 2 {
		return alts
	}
	var out [][]elem
	var ranges [][]rune        // ranges[i]: the characters out[i] begins with, while merging
	same := map[string]int{}   // an alternative's rest → its place in out
	key := make([]byte, 0, 64) // a rest, as bytes
	for _, a := range alts {
		if len(a) == 0 || a[0].kind != elemChars || p.sets[a[0].arg].negate {
			out, ranges = append(out, a), append(ranges, nil)
			continue
		}
		key = key[:0]
		for _, e := range a[1:] {
			key = append(key, byte(e.kind), byte(e.arg), byte(e.arg>>8), byte(e.arg>>16), byte(e.arg>>24))
		}
		cs := p.sets[a[0].arg].ranges
		if i, ok := same[string(key)]; ok {
			ranges[i] = append(ranges[i], cs...)
			continue
		}
		same[string(key)] = len(out)
		out, ranges = append(out, a), append(ranges, slices.Clone(cs))
	}
	for i, rs := range ranges {
		if rs != nil && len(rs) > len(p.sets[out[i][0].arg].ranges) {
			out[i] = append([]elem{{elemChars, p.set(charset{ranges: rs})}}, out[i][1:]...)
		}
	}
	return out
}

// Inlining, so that alternatives that begin alike behind a rule reference
// are merged too: an anyOf of objects is `root ::= alt-0 | alt-1 | ...`,
// each alt-i a rule of one alternative beginning with "{" and blanks,
// then its own key's rule; with each reference replaced by its rule's
// body, the objects share their "{", then their blanks, then their keys'
// first characters.
const (
	// inlineAbove is how many alternatives a rule has before its leading
	// references are inlined: only wide rules need it.
	inlineAbove = 16
	// maxInline bounds the body a reference is replaced by, in elements.
	maxInline = 256
)

// inlineLeads returns rule r's alternatives with each leading reference to
// a rule of one short alternative replaced by that alternative, again
// while the new first element is such a reference, as long as the grammar
// stays within maxElements.
func (p *parser) inlineLeads(r int32, alts [][]elem) [][]elem {
	out := make([][]elem, len(alts))
	for i, a := range alts {
		for range 8 {
			if len(a) == 0 || a[0].kind != elemRef || a[0].arg == r {
				break
			}
			body := p.alts[a[0].arg]
			if len(body) != 1 || len(body[0]) > maxInline || p.count+len(body[0]) > maxElements {
				break
			}
			p.count += len(body[0])
			a = append(append(make([]elem, 0, len(body[0])+len(a)-1), body[0]...), a[1:]...)
		}
		out[i] = a
	}
	return out
}
