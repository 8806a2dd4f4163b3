package grammar

import (
	"fmt"
	"slices"
	"unsafe"
)

// The matcher is a pushdown recognizer over code points, as llama.cpp's:
// a parse is a stack of positions in the grammar's alternatives, its top a
// character set the next character must match, the rest the positions to
// resume when the alternatives under them end. An ambiguous grammar has
// several parses at once, a set of stacks; the empty stack is a finished
// parse. Here stacks are hash-consed into ids (a stack is its top position
// and the id of the stack under it), sets of stacks into set ids, and a
// state of the byte-level matcher is a set id plus an unfinished UTF-8
// character. Byte transitions are memoized per state, so a text that goes
// through states met before (a JSON string's characters, a number's digits)
// costs an array lookup per byte.

// Limits on the matcher's tables.
const (
	maxStacks     = 1 << 21 // distinct stacks
	maxSetEntries = 1 << 23 // stack ids held by all sets together
	maxParses     = 1 << 12 // stacks in one set: parses of one text
	maxStates     = 1 << 21 // byte-level states
	maxMemoRows   = 1 << 13 // states whose byte transitions are memoized (1 KiB each)
	// memoOffset is added to a state id in a memo row, so that 0 means
	// unknown and 1 (-1 + memoOffset) a byte no parse accepts.
	memoOffset = 2
)

// stackNode is a stack: the position on top and the stack under it.
type stackNode struct{ pos, under int32 }

// state is a byte-level matcher state: the set of parses after the last
// complete character, and the bits of an unfinished UTF-8 character
// (remain bytes still to come).
type state struct {
	set    int32
	value  uint32
	remain int8 // bytes still to come
	size   int8 // bytes of the whole character
}

// tables hold every stack, set and state met so far, and the memoized byte
// transitions. Guarded by Grammar.mu.
type tables struct {
	g        *Grammar
	stacks   []stackNode // stacks[0] is the empty stack
	stackIDs map[uint64]int32
	sets     [][]int32 // sorted stack ids
	setIDs   map[string]int32
	entries  int
	states   []state
	stateIDs map[uint64]int32
	rows     [][]int32 // rows[s][b]: the next state + memoOffset, 0 while unknown
	memoized int
	start    int32 // the state before any text
	mark     []uint32
	gen      uint32
	scratch  []int32
	masks    maskCache
	rest     []int32 // rest[pos]: the fewest bytes that finish pos's alternative (budget.go)
	finish   []int32 // finish[stack]: the fewest bytes that empty it; -1 not yet known
	depth    []int32 // depth[stack]: its positions, -1 not yet known (prune.go)
	stateFin []int32 // stateFin[state]: the fewest bytes to a whole match; -1 not yet known
	err      error   // the first limit hit; the tables are then frozen
}

func (t *tables) init(g *Grammar, rest []int32) {
	t.g = g
	t.rest = rest
	t.stacks = []stackNode{{-1, -1}}
	t.stackIDs = map[uint64]int32{}
	t.setIDs = map[string]int32{}
	t.stateIDs = map[uint64]int32{}
	out := t.scratch[:0]
	t.gen++
	for _, alt := range g.rules[g.root] {
		out = t.expand(t.push(0, alt), out)
	}
	set := t.internSet(out)
	t.start = t.internState(state{set: set})
}

// push returns the stack with pos on top of under; a position that ends its
// alternative is not pushed (the alternative is over: under resumes).
func (t *tables) push(under, pos int32) int32 {
	if t.g.elems[pos].kind == elemEnd {
		return under
	}
	key := uint64(uint32(pos))<<32 | uint64(uint32(under))
	if id, ok := t.stackIDs[key]; ok {
		return id
	}
	if len(t.stacks) >= maxStacks {
		t.fail(fmt.Errorf("%w: more than %d parse stacks", ErrTooComplex, maxStacks))
		return 0
	}
	id := int32(len(t.stacks))
	t.stacks = append(t.stacks, stackNode{pos, under})
	t.stackIDs[key] = id
	return id
}

func (t *tables) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// expand appends to out the stacks that s becomes once every rule reference
// on its top is replaced by the rule's alternatives: stacks whose top is a
// character set, and the empty stack if s can finish. Stacks already
// expanded in this round (t.gen) are skipped.
func (t *tables) expand(s int32, out []int32) []int32 {
	if int(s) >= len(t.mark) {
		t.mark = append(t.mark, make([]uint32, int(s)+1-len(t.mark)+len(t.mark)/2)...)
	}
	if t.mark[s] == t.gen {
		return out
	}
	t.mark[s] = t.gen
	if s == 0 {
		return append(out, 0)
	}
	n := t.stacks[s]
	e := t.g.elems[n.pos]
	if e.kind == elemChars {
		return append(out, s)
	}
	under := t.push(n.under, n.pos+1)
	for _, alt := range t.g.rules[e.arg] {
		out = t.expand(t.push(under, alt), out)
	}
	return out
}

// internSet returns the id of the set of stacks in ids (sorted in place).
func (t *tables) internSet(ids []int32) int32 {
	slices.Sort(ids)
	key := unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(ids))), len(ids)*4)
	if id, ok := t.setIDs[key]; ok {
		return id
	}
	if len(ids) > maxParses {
		t.fail(fmt.Errorf("%w: more than %d parses of one text (an ambiguous grammar)", ErrTooComplex, maxParses))
	}
	if t.entries+len(ids) > maxSetEntries {
		t.fail(fmt.Errorf("%w: the parse sets outgrew %d entries", ErrTooComplex, maxSetEntries))
	}
	own := slices.Clone(ids)
	id := int32(len(t.sets))
	t.sets = append(t.sets, own)
	t.entries += len(own)
	t.setIDs[unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(own))), len(own)*4)] = id
	return id
}

func (t *tables) internState(s state) int32 {
	key := uint64(uint32(s.set))<<32 | uint64(s.value)<<4 | uint64(s.remain)<<2 | uint64(s.size-1)&3
	if id, ok := t.stateIDs[key]; ok {
		return id
	}
	if len(t.states) >= maxStates {
		t.fail(fmt.Errorf("%w: more than %d matcher states", ErrTooComplex, maxStates))
	}
	id := int32(len(t.states))
	t.states = append(t.states, s)
	t.rows = append(t.rows, nil)
	t.stateIDs[key] = id
	return id
}

// advance returns the set of parses after code point r, or -1 if no parse
// of set accepts it.
func (t *tables) advance(set int32, r rune) int32 {
	out := t.scratch[:0]
	t.gen++
	for _, s := range t.sets[set] {
		if s == 0 {
			continue
		}
		n := t.stacks[s]
		if t.g.sets[t.g.elems[n.pos].arg].contains(r) {
			out = t.expand(t.push(n.under, n.pos+1), out)
		}
	}
	t.scratch = out
	if len(out) == 0 {
		return -1
	}
	if len(out) > maxParses {
		out = t.prune(out)
	}
	return t.internSet(out)
}

// accepting reports whether the text that led to state s is a whole match.
func (t *tables) accepting(s int32) bool {
	st := t.states[s]
	set := t.sets[st.set]
	return st.remain == 0 && len(set) > 0 && set[0] == 0
}

// step returns the state after byte b in state s, or -1 if no parse
// accepts it (or could accept the character it starts). Past a limit it
// returns t.err.
func (t *tables) step(s int32, b byte) (int32, error) {
	if row := t.rows[s]; row != nil {
		if v := row[b]; v != 0 {
			return v - memoOffset, nil
		}
	}
	next := t.stepSlow(s, b)
	if t.err != nil {
		return -1, t.err
	}
	if t.rows[s] == nil && t.memoized < maxMemoRows {
		t.rows[s] = make([]int32, 256)
		t.memoized++
	}
	if row := t.rows[s]; row != nil {
		row[b] = next + memoOffset
	}
	return next, nil
}

// stepSlow computes a byte transition: ASCII and a UTF-8 character's last
// byte advance the parses; other bytes keep the character's bits so far and
// live on only if some parse's next character set meets the code points the
// character can still become (as llama.cpp's match_partial_char).
func (t *tables) stepSlow(s int32, b byte) int32 {
	st := t.states[s]
	value, remain, size := uint32(0), int8(0), st.size
	switch {
	case st.remain > 0:
		if b&0xC0 != 0x80 {
			return -1
		}
		value, remain = st.value<<6|uint32(b&0x3F), st.remain-1
	case b < 0x80:
		value, size = uint32(b), 1
	case 0xC2 <= b && b <= 0xDF:
		value, remain, size = uint32(b&0x1F), 1, 2
	case 0xE0 <= b && b <= 0xEF:
		value, remain, size = uint32(b&0x0F), 2, 3
	case 0xF0 <= b && b <= 0xF4:
		value, remain, size = uint32(b&0x07), 3, 4
	default:
		return -1
	}
	// The code points the character can still become: from its bits so
	// far, no shorter than its length needs (no overlong form), no surrogate
	// half, nothing past U+10FFFF.
	lo, hi := state{value: value, remain: remain, size: size}.pending()
	if lo > hi || 0xD800 <= lo && hi <= 0xDFFF {
		return -1
	}
	if remain == 0 {
		set := t.advance(st.set, lo)
		if set < 0 {
			return -1
		}
		return t.internState(state{set: set})
	}
	for _, id := range t.sets[st.set] {
		if id != 0 && t.g.sets[t.g.elems[t.stacks[id].pos].arg].overlaps(lo, hi) {
			return t.internState(state{set: st.set, value: value, remain: remain, size: size})
		}
	}
	return -1
}
