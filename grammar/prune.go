package grammar

import (
	"cmp"
	"slices"
)

// Pruning a highly ambiguous text's parses. A grammar whose parses
// multiply with the text (x ::= "a" x "b" | "a" x "c" | "" doubles them
// with every "a") passes every check made before a generation, and would
// meet the matcher's maxParses in the middle of one, after part of the text
// has been streamed. Rather than fail there, advance keeps maxParses of the
// parses: each one kept is a real parse of the text so far, so the text
// stays a prefix of a match, and every later set is a subset of the one
// the whole grammar would give — what follows is narrowed (continuations
// only the dropped parses allowed are masked), never widened. The parses
// kept are those that finish soonest (budget.go's shortest finish), so the
// empty stack (a whole match) and the state's shortest finish survive
// every pruning: a text that could end before still can, and the budget's
// steering to a match within max_tokens is unchanged. The dropped parses'
// stacks stay interned, so such a text fills the tables in a few hundred
// characters; they are then renewed (renew.go). Ties are broken by
// the stacks' contents (bottom first, compareStacks), never by their ids,
// which depend on the texts the grammar met before: the same text prunes
// alike in every process, native or wasm, whatever ran before it.
//
// Rules that begin more than maxParses parses where they begin are still
// refused when the grammar is parsed (finite.go): every text reaching them
// would be pruned at once, and an enum whose values were silently dropped
// is worse than an honest refusal.

// prune returns the maxParses stacks of out that finish soonest, ties in
// the order of their contents (compareStacks). out is reordered.
func (t *tables) prune(out []int32) []int32 {
	slices.SortFunc(out, func(a, b int32) int {
		if fa, fb := t.stackFinish(a), t.stackFinish(b); fa != fb {
			return int(fa - fb)
		}
		return t.compareStacks(a, b)
	})
	return out[:maxParses]
}

// compareStacks orders two stacks by their positions from the bottom up,
// a stack before every longer one that begins with it there: an order of
// contents, the same whatever ids the stacks were given. Bottom first, so
// that the parses kept share what lies under their tops (the children of
// one parse are neighbours, kept or dropped together): the two stacks are
// compared where they part, which for such parses is near their tops.
func (t *tables) compareStacks(a, b int32) int {
	da, db := t.stackDepth(a), t.stackDepth(b)
	x, y := a, b
	for d := da; d > db; d-- {
		x = t.stacks[x].under
	}
	for d := db; d > da; d-- {
		y = t.stacks[y].under
	}
	// Down to the common part (equal stacks are one id); the last pair
	// above it, whose unders are equal, differs in its position.
	var px, py int32
	for x != y {
		px, py = t.stacks[x].pos, t.stacks[y].pos
		x, y = t.stacks[x].under, t.stacks[y].under
	}
	if px != py {
		return cmp.Compare(px, py)
	}
	return cmp.Compare(da, db)
}

// stackDepth is the number of positions on stack s.
func (t *tables) stackDepth(s int32) int32 {
	for int(s) >= len(t.depth) {
		t.depth = append(t.depth, -1)
	}
	if s == 0 {
		return 0
	}
	if d := t.depth[s]; d >= 0 {
		return d
	}
	d := t.stackDepth(t.stacks[s].under) + 1
	t.depth[s] = d
	return d
}
