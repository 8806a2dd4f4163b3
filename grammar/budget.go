package grammar

import "math"

// Finishing within a token budget. A generation has a limit (max_tokens,
// the context), and a constrained text cut by it does not parse. So the
// matcher knows, for every state, the fewest bytes that finish a whole
// match; since every token writes at least one byte, a text whose shortest
// finish is at most the tokens left can always be finished (given a token
// per byte, which byte-fallback and byte-level vocabularies have). Mask
// bans the tokens after which the shortest finish would no longer fit the
// budget: far from the limit nothing changes; near it the text is steered
// to close its strings, arrays and objects.

// unreachable is the shortest finish of a position from which no finite
// text completes the rule (a rule that only recurses).
const unreachable = math.MaxInt32 / 4

// minLengths computes, for every rule, the fewest bytes of a text it
// matches (ruleMin; unreachable for a rule that can never end), and for
// every element position the fewest bytes that finish its alternative from
// there (the element included).
func (g *Grammar) minLengths() (ruleMin, rest []int32) {
	ruleMin = make([]int32, len(g.rules))
	for i := range ruleMin {
		ruleMin[i] = unreachable
	}
	rest = make([]int32, len(g.elems))
	// Relax until nothing changes: generated rules reference earlier
	// ones, so a pass in id order settles most grammars at once.
	for changed := true; changed; {
		changed = false
		for r, starts := range g.rules {
			best := ruleMin[r]
			for _, pos := range starts {
				if n := g.altRest(pos, ruleMin, nil); n < best {
					best = n
				}
			}
			if best < ruleMin[r] {
				ruleMin[r], changed = best, true
			}
		}
	}
	for _, starts := range g.rules {
		for _, pos := range starts {
			g.altRest(pos, ruleMin, rest)
		}
	}
	return ruleMin, rest
}

// altRest sums the shortest lengths of the elements from pos to the end of
// its alternative, recording each suffix's sum in rest when rest is given.
func (g *Grammar) altRest(pos int32, ruleMin, rest []int32) int32 {
	end := pos
	for g.elems[end].kind != elemEnd {
		end++
	}
	sum := int32(0)
	for p := end - 1; p >= pos; p-- {
		e := g.elems[p]
		if e.kind == elemRef {
			sum += ruleMin[e.arg]
		} else {
			sum += g.sets[e.arg].minBytes()
		}
		sum = min(sum, unreachable)
		if rest != nil {
			rest[p] = sum
		}
	}
	return sum
}

// minBytes is the shortest UTF-8 length of a character in the set, or
// unreachable for an empty set.
func (c charset) minBytes() int32 {
	for _, n := range [...]struct {
		lo, hi rune
		bytes  int32
	}{{0, 0x7F, 1}, {0x80, 0x7FF, 2}, {0x800, 0xFFFF, 3}, {0x10000, 0x10FFFF, 4}} {
		if c.overlaps(n.lo, n.hi) {
			return n.bytes
		}
	}
	return unreachable
}

// stackFinish is the fewest bytes that empty stack s.
func (t *tables) stackFinish(s int32) int32 {
	if s == 0 {
		return 0
	}
	for int(s) >= len(t.finish) {
		t.finish = append(t.finish, -1)
	}
	if f := t.finish[s]; f >= 0 {
		return f
	}
	n := t.stacks[s]
	f := min(t.rest[n.pos]+t.stackFinish(n.under), unreachable)
	t.finish[s] = f
	return f
}

// stateFinish is the fewest bytes that make the text of state s a whole
// match: the unfinished character's remaining bytes, then the shortest
// finish of a parse.
func (t *tables) stateFinish(s int32) int32 {
	for int(s) >= len(t.stateFin) {
		t.stateFin = append(t.stateFin, -1)
	}
	if f := t.stateFin[s]; f >= 0 {
		return f
	}
	f := t.computeStateFinish(s)
	t.stateFin[s] = f
	return f
}

func (t *tables) computeStateFinish(s int32) int32 {
	st := t.states[s]
	lo, hi := st.pending()
	best := int32(unreachable)
	for _, id := range t.sets[st.set] {
		if st.remain == 0 {
			best = min(best, t.stackFinish(id))
			continue
		}
		// The character under way is the top's character, for the parses
		// whose top can take it: its remaining bytes replace the top's
		// shortest character.
		if id == 0 {
			continue
		}
		top := t.g.sets[t.g.elems[t.stacks[id].pos].arg]
		if top.overlaps(lo, hi) {
			best = min(best, t.stackFinish(id)+int32(st.remain)-top.minBytes())
		}
	}
	return best
}

// pending is the range of code points the unfinished character of st can
// still become (meaningless when st.remain is 0).
func (st state) pending() (lo, hi rune) {
	shift := 6 * uint32(st.remain)
	lo, hi = rune(st.value<<shift), rune(st.value<<shift|(1<<shift-1))
	lo = max(lo, [5]rune{0, 0, 0x80, 0x800, 0x10000}[st.size])
	return lo, min(hi, 0x10FFFF)
}
