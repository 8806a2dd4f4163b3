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

// normalized sorts and merges the ranges, dropping empty ones (a class such
// as [z-a] matches nothing, as in llama.cpp).
func (c charset) normalized() charset {
	type span struct{ lo, hi rune }
	var spans []span
	for i := 0; i+1 < len(c.ranges); i += 2 {
		if c.ranges[i] <= c.ranges[i+1] {
			spans = append(spans, span{c.ranges[i], c.ranges[i+1]})
		}
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
