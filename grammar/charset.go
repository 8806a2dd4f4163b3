package grammar

import (
	"slices"
	"strconv"
	"strings"
)

// charset is a set of code points: the union of inclusive ranges (pairs
// lo, hi, sorted and disjoint once normalized), or its complement. `.` is
// the complement of the empty set.
type charset struct {
	ranges []rune
	negate bool
}

// Surrogates, U+D800 to U+DFFF, are halves of UTF-16 pairs: no character
// of UTF-8 text, so no set holds them ("\uD800" and [\uDC00-\uDFFF]
// match nothing, and a byte sequence that could only become one is
// refused at once).
const surrogateLo, surrogateHi = 0xD800, 0xDFFF

// normalized sorts and merges the ranges, dropping empty ones (a class such
// as [z-a] matches nothing, as in llama.cpp) and the surrogates.
func (c charset) normalized() charset {
	type span struct{ lo, hi rune }
	var spans []span
	add := func(lo, hi rune) {
		if lo <= hi {
			spans = append(spans, span{lo, hi})
		}
	}
	for i := 0; i+1 < len(c.ranges); i += 2 {
		lo, hi := c.ranges[i], c.ranges[i+1]
		switch {
		case c.negate: // the complement leaves the surrogates out below
			add(lo, hi)
		case lo <= surrogateHi && hi >= surrogateLo:
			add(lo, surrogateLo-1)
			add(surrogateHi+1, hi)
		default:
			add(lo, hi)
		}
	}
	if c.negate {
		add(surrogateLo, surrogateHi)
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.lo - b.lo) })
	out := charset{negate: c.negate}
	for _, s := range spans {
		if n := len(out.ranges); n > 0 && s.lo <= out.ranges[n-1]+1 {
			out.ranges[n-1] = max(out.ranges[n-1], s.hi)
			continue
		}
		out.ranges = append(out.ranges, s.lo, s.hi)
	}
	return out
}

// onlySurrogates reports whether the set names code points but all of them
// are surrogates ([\uD800-\uDBFF]), so that it matches no character.
func (c charset) onlySurrogates() bool {
	if c.negate || !c.normalized().empty() {
		return false
	}
	for i := 0; i+1 < len(c.ranges); i += 2 {
		if c.ranges[i] <= c.ranges[i+1] {
			return true
		}
	}
	return false
}

// key identifies a normalized set, for interning.
func (c charset) key() string {
	var b strings.Builder
	if c.negate {
		b.WriteByte('^')
	}
	for _, r := range c.ranges {
		b.WriteString(strconv.Itoa(int(r)))
		b.WriteByte(',')
	}
	return b.String()
}

// contains reports whether code point r is in the set.
func (c charset) contains(r rune) bool {
	in := false
	for i := 0; i < len(c.ranges); i += 2 {
		if r < c.ranges[i] {
			break
		}
		if r <= c.ranges[i+1] {
			in = true
			break
		}
	}
	return in != c.negate
}

// overlaps reports whether some code point in [lo, hi] is in the set: can a
// partial UTF-8 sequence that completes to one of them still match.
func (c charset) overlaps(lo, hi rune) bool {
	if !c.negate {
		for i := 0; i < len(c.ranges); i += 2 {
			if c.ranges[i] <= hi && lo <= c.ranges[i+1] {
				return true
			}
		}
		return false
	}
	// The complement overlaps [lo, hi] unless the ranges cover all of it.
	next := lo
	for i := 0; i < len(c.ranges); i += 2 {
		if c.ranges[i] > next {
			break
		}
		if c.ranges[i+1] >= next {
			next = c.ranges[i+1] + 1
		}
		if next > hi {
			return false
		}
	}
	return next <= hi
}

// empty reports whether the set matches no character ([z-a], [^\x00-\U0010FFFF]).
func (c charset) empty() bool { return !c.overlaps(0, 0x10FFFF) }
