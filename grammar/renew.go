package grammar

// Renewing full tables. The matcher's tables only grow: every stack, set
// and state a text meets stays, so the texts of a long-lived grammar (one
// cached across requests) and a long text under a highly ambiguous one
// (whose parses are pruned, prune.go, but whose dropped stacks stay
// interned) fill them up. Rather than fail there, the grammar starts
// fresh tables and each match moves into them the one state it is in: its
// set's stacks, copied with what lies under them. Nothing is lost but
// memo rows and masks, which are made again on use: a state's content, not
// its id, decides every transition, pruning and mask, so a match goes on
// in the new tables exactly as it would have in the old. Only a text whose
// next byte alone outgrows empty tables still fails.

// renew makes the grammar's tables fresh ones if they are still full
// (another match may have renewed them already), and returns them.
func (g *Grammar) renew(full *tables) *tables {
	if g.t == full {
		fresh := &tables{}
		fresh.init(g, full.rest)
		g.t = fresh
	}
	return g.t
}

// migrate interns state s of old, its parses and unfinished character, in
// t, and returns its id there.
func (t *tables) migrate(old *tables, s int32) (int32, error) {
	st := old.states[s]
	ids := map[int32]int32{0: 0}
	var copyStack func(id int32) int32
	copyStack = func(id int32) int32 {
		if n, ok := ids[id]; ok {
			return n
		}
		n := old.stacks[id]
		c := t.push(copyStack(n.under), n.pos)
		ids[id] = c
		return c
	}
	set := make([]int32, 0, len(old.sets[st.set]))
	for _, id := range old.sets[st.set] {
		set = append(set, copyStack(id))
	}
	st.set = t.internSet(set)
	moved := t.internState(st)
	if t.err != nil {
		return -1, t.err
	}
	return moved, nil
}

// feedRenewing is feed from state s of t, moving the match to fresh tables
// where t fills up and going on there; it returns the tables the state it
// reached lives in. It fails only when fresh tables fill up before taking
// a byte more.
func feedRenewing[T ~string | ~[]byte](g *Grammar, t *tables, s int32, text T) (*tables, int32, int, error) {
	done, renewedAt := 0, -1
	for {
		next, at, err := feed(t, s, text[done:])
		done += at
		if err == nil || t.err == nil || done == renewedAt {
			return t, next, done, err
		}
		fresh := g.renew(t)
		if s, err = fresh.migrate(t, next); err != nil {
			return t, next, done, err
		}
		t, renewedAt = fresh, done
	}
}
