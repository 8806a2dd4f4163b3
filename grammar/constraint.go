package grammar

import (
	"fmt"
	"math"
	"math/bits"
)

// maxMaskBytes bounds the token masks a grammar keeps per vocabulary:
// 19 KiB each for a 150k vocabulary: about 430 states. Past it the oldest are dropped and
// recomputed when met again.
const maxMaskBytes = 8 << 20

// mask is the set of tokens allowed in one state, a bit per id.
type mask struct {
	bits    []uint64
	allowed int   // tokens set in bits
	finish  int32 // the state's shortest finish, in bytes
	// far are the allowed tokens after which the shortest finish is longer
	// than before (they open an object, an array, a property: few), with
	// that length; maxAfter is the longest.
	far      []farToken
	maxAfter int32
}

type farToken struct{ id, after int32 }

type maskKey struct {
	v     *Vocab
	state int32
	limit int32 // the longest shortest-finish allowed after the token; -1 for none
}

// maskCache keeps masks by state, dropping the oldest past maxMaskBytes.
type maskCache struct {
	m     map[maskKey]*mask
	order []maskKey
	bytes int
	walk  []int32 // the walk's state per trie depth, reused
}

func (c *maskCache) get(k maskKey) *mask { return c.m[k] }

func (c *maskCache) put(k maskKey, m *mask) {
	if c.m == nil {
		c.m = map[maskKey]*mask{}
	}
	size := len(m.bits)*8 + len(m.far)*8
	for c.bytes+size > maxMaskBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.m[old].bits)*8 + len(c.m[old].far)*8
		delete(c.m, old)
	}
	c.m[k] = m
	c.order = append(c.order, k)
	c.bytes += size
}

// maskFor returns the tokens of v allowed in state s after which a whole
// match is at most limit bytes away (any finite distance for limit < 0: a
// token that only leads into a rule that can never end, which the grammar
// may hold beside the ways to finish, is never allowed),
// computing and keeping them on first use: a walk of v's trie that follows
// the memoized byte transitions and skips each subtree whose prefix is
// rejected.
func (t *tables) maskFor(v *Vocab, s, limit int32) (*mask, error) {
	key := maskKey{v, s, limit}
	if m := t.masks.get(key); m != nil {
		return m, nil
	}
	m := &mask{bits: make([]uint64, (v.size+63)/64), finish: t.stateFinish(s)}
	walk := t.masks.walk
	if len(walk) < v.maxDepth+1 {
		walk = make([]int32, v.maxDepth+1)
		t.masks.walk = walk
	}
	walk[0] = s
	for k := 0; k < len(v.label); {
		d := v.depth[k]
		// step's memo, inline: the walk's one hot line.
		var next int32
		if row := t.rows[walk[d-1]]; row != nil && row[v.label[k]] != 0 {
			next = row[v.label[k]] - memoOffset
		} else {
			var err error
			if next, err = t.step(walk[d-1], v.label[k]); err != nil {
				return nil, err
			}
		}
		if next < 0 {
			k = int(v.end[k])
			continue
		}
		walk[d] = next
		if first, end := v.tokStart[k], v.tokStart[k+1]; first < end {
			toks := v.toks[first:end]
			after := t.stateFinish(next)
			if after < unreachable && (limit < 0 || after <= limit) { // never a text no match can finish
				for _, id := range toks {
					m.bits[id>>6] |= 1 << (id & 63)
					m.allowed++
					if after > m.finish {
						m.far = append(m.far, farToken{id, after})
					}
				}
				m.maxAfter = max(m.maxAfter, after)
			}
		}
		k++
	}
	t.masks.put(key, m)
	return m, nil
}

// budgetMask returns the mask for state s when at most budget tokens may
// still be generated (0: no limit), and the far tokens Mask must ban on
// top of it. Far from the limit it is the state's one mask; while the
// state's own shortest finish fits, the far tokens that would not are
// banned one by one (no token that keeps or shortens it is ever in the
// way). Only when even that does not fit (a budget too short from the
// start) is a mask of the tokens that bring the finish closer made (and
// kept); failing those, all are allowed; a whole match that no token can
// extend in time is complete.
func (t *tables) budgetMask(v *Vocab, s int32, budget int) (m *mask, banFar int32, err error) {
	m, err = t.maskFor(v, s, -1)
	if err != nil || budget <= 0 {
		return m, -1, err
	}
	limit := int32(min(budget-1, unreachable))
	if m.maxAfter <= limit {
		return m, -1, nil
	}
	if limit >= m.finish {
		return m, limit, nil
	}
	limit = m.finish - 1
	tight, err := t.maskFor(v, s, limit)
	if err != nil {
		return nil, -1, err
	}
	if tight.allowed == 0 && !t.accepting(s) {
		return m, -1, nil
	}
	return tight, -1, nil
}

// Constraint holds one generation to a grammar: before each token, Mask
// bans every token that cannot continue the text; after it, Accept moves
// the match on. End-of-generation tokens are allowed exactly where the text
// so far is a whole match. A Constraint is used by one generation at a time.
type Constraint struct {
	g     *Grammar
	t     *tables // the tables state lives in: g's, or the ones g had before it renewed them
	v     *Vocab
	ends  []int
	saved []float32
	state int32
}

// NewConstraint starts a match of g over tokens of v; ends are the ids that
// end a generation (EOS, EOT, a chat template's end of turn).
func NewConstraint(g *Grammar, v *Vocab, ends []int) *Constraint {
	g.mu.Lock()
	defer g.mu.Unlock()
	return &Constraint{g: g, v: v, ends: ends, saved: make([]float32, len(ends)), t: g.t, state: g.t.start}
}

// Mask sets to -Inf the logit of every token that cannot continue the text
// (logits is indexed by token id; ids beyond the vocabulary are left
// alone). It is a logit processor: the sampling chain runs after it as
// usual. budget is how many tokens the generation may still write (0: no
// limit); when a whole match is near the edge of it, the tokens after
// which no whole match fits in what is left are banned too (budget.go),
// so that a generation under a limit ends with a whole match whenever the
// vocabulary allows. complete is true when the text is a whole match that no token can
// extend: only an end token is allowed, and a caller may end without
// sampling. ErrDeadEnd means no token can continue a text the grammar does
// not accept yet.
func (c *Constraint) Mask(logits []float32, budget int) (complete bool, err error) {
	c.g.mu.Lock()
	m, banFar, accepting, err := c.mask(budget)
	c.g.mu.Unlock()
	if err != nil {
		return false, err
	}
	if m.allowed == 0 && !accepting {
		return false, ErrDeadEnd
	}
	for i, id := range c.ends {
		if id >= 0 && id < len(logits) {
			c.saved[i] = logits[id]
		}
	}
	ban := float32(math.Inf(-1))
	n := min(len(logits), c.v.size)
	for w, word := range m.bits {
		if word == math.MaxUint64 {
			continue
		}
		base := w * 64
		if base+64 <= n {
			for zeros := ^word; zeros != 0; zeros &= zeros - 1 {
				logits[base+bits.TrailingZeros64(zeros)] = ban
			}
			continue
		}
		for i := base; i < n; i++ {
			if word&(1<<(i-base)) == 0 {
				logits[i] = ban
			}
		}
	}
	if banFar >= 0 {
		for _, f := range m.far {
			if f.after > banFar && int(f.id) < len(logits) {
				logits[f.id] = ban
			}
		}
	}
	for i, id := range c.ends {
		if id >= 0 && id < len(logits) {
			if accepting {
				logits[id] = c.saved[i]
			} else {
				logits[id] = ban
			}
		}
	}
	return accepting && m.allowed == 0, nil
}

// Accept moves the match past token id's bytes, piece (what the token adds
// to the text). ErrRejected, with the state unchanged, if the grammar does
// not allow them.
func (c *Constraint) Accept(piece []byte) error {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	if err := c.current(); err != nil {
		return err
	}
	t, s, at, err := feedRenewing(c.g, c.t, c.state, piece)
	if err != nil {
		return err
	}
	if at < len(piece) {
		return fmt.Errorf("%w: %q cannot follow the text at its byte %d", ErrRejected, piece, at)
	}
	c.t, c.state = t, s
	return nil
}

// mask is Mask's mask for the state, computed again in fresh tables if
// the walk fills the grammar's up. Called with the grammar's lock held.
func (c *Constraint) mask(budget int) (m *mask, banFar int32, accepting bool, err error) {
	for renewed := false; ; renewed = true {
		if err := c.current(); err != nil {
			return nil, -1, false, err
		}
		m, banFar, err = c.t.budgetMask(c.v, c.state, budget)
		if err == nil || c.t.err == nil || renewed {
			return m, banFar, c.t.accepting(c.state), err
		}
		c.g.renew(c.t)
	}
}

// current moves the match into the grammar's tables if they were renewed
// since it last moved. Called with the grammar's lock held.
func (c *Constraint) current() error {
	if c.t == c.g.t {
		return nil
	}
	s, err := c.g.t.migrate(c.t, c.state)
	if err != nil {
		return err
	}
	c.t, c.state = c.g.t, s
	return nil
}

// Accepting reports whether the text so far is a whole match.
func (c *Constraint) Accepting() bool {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	return c.t.accepting(c.state)
}

// Reset starts the match over, for a new text.
func (c *Constraint) Reset() {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	c.t, c.state = c.g.t, c.g.t.start
}
