package grammar

import "slices"

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
// steering to a match within max_tokens is unchanged. Ties are broken by
// the stacks' contents, never by their ids, which depend on the texts the
// grammar met before: the same text prunes alike in every process, native
// or wasm, whatever ran before it.
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

// compareStacks orders two stacks by their positions from the top down, a
// stack before every longer one it begins: an order of contents, the same
// whatever ids the stacks were given.
func (t *tables) compareStacks(a, b int32) int {
	for a != b {
		switch {
		case a == 0:
			return -1
		case b == 0:
			return 1
		}
		na, nb := t.stacks[a], t.stacks[b]
		if na.pos != nb.pos {
			return int(na.pos - nb.pos)
		}
		a, b = na.under, nb.under
	}
	return 0
}
