package engine

import (
	"fmt"
	"math"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Context shift, as llama.cpp's server does it: when a conversation fills
// the context, keep its first tokens, drop the oldest half of the rest and
// move the later positions down, without evaluating anything again. The
// cache holds keys already rotated to their positions (adjustQKV), so a
// key that moves from position p to p-d is turned by the rotation between
// the two: its layer's table's angles at p and p-d give the turn, whatever
// the layer's base, scaling (linear, LongRoPE's factors, YaRN), rotated
// dimensions and pairing; the values only move. A sliding-window layer's
// ring is laid out again, each kept position in the slot its new position
// takes. An F16 cache's keys are decoded, turned and rounded to F16 again.
// After a shift the logits equal those of a fresh session evaluating the
// kept tokens at their new positions up to rounding (measured in
// shift_test.go; see docs/context.md).

// ErrShiftUnsupported means a session cannot shift its context exactly:
// Model.ShiftSupport and Session.Shift wrap it and say why.
var ErrShiftUnsupported = NewError(CodeUnsupportedModel, "engine: context shift unsupported")

// ShiftSupport reports whether the model's sessions can shift their context
// (Session.Shift, GenerateOptions.ContextShift): nil, or an error wrapping
// ErrShiftUnsupported that says why. A recurrent layer's state has taken the
// dropped tokens in, and cannot give them back; a part of a split model
// holds a part of each position's keys, which the other parts would have
// to shift at the same time; an encoder does not generate. (A session on a
// GPU cannot either: Session.Shift says so.)
func (m *Model) ShiftSupport() error {
	switch {
	case !m.Generates():
		return fmt.Errorf("%w: %w", ErrShiftUnsupported, errEncoder(m))
	case m.part != nil:
		return fmt.Errorf("%w: a part of a split model cannot shift its share of the cache alone", ErrShiftUnsupported)
	case m.config.Recurrent():
		return fmt.Errorf("%w: this %s model has recurrent layers, whose state holds the tokens a shift would drop", ErrShiftUnsupported, m.arch.name)
	}
	return nil
}

// shiftScratch is the memory a session's shifts lay rings out in and
// turn F16 keys in, allocated at its first shift.
type shiftScratch struct {
	ring   []float32 // a ring's kept rows, in their new order (F32 cache)
	ring16 []uint16  // the same, F16 cache
	row    []float32 // one F16 key decoded
}

// Shift drops the cached positions keep..keep+discard-1 and moves the later
// ones down by discard, turning their keys to their new positions, so that
// the session continues as if it had evaluated only the tokens it keeps
// (Tokens-wise: the cached tokens lose the dropped ones). It fails with
// ErrBusy while a generation runs; with an error wrapping
// ErrShiftUnsupported for a model ShiftSupport refuses, a session on a
// device, or a sliding-window layer whose ring no longer holds a kept
// position its window would read (keep reaches too far into a ring:
// llama.cpp's rule of dropping half keeps clear of it while the context
// holds keep plus twice the window); and with an *OptionError for positions
// outside the cached ones.
func (s *Session) Shift(keep, discard int) error {
	if !s.mu.TryLock() {
		return ErrBusy
	}
	defer s.mu.Unlock()
	return s.shift(keep, discard)
}

// shift is Shift with the session's lock held.
func (s *Session) shift(keep, discard int) error {
	if err := s.model.ShiftSupport(); err != nil {
		return err
	}
	if s.dev != nil {
		return fmt.Errorf("%w: a session on %s keeps its cache on the device, which does not shift it", ErrShiftUnsupported, s.device.Name())
	}
	n := len(s.tokens)
	switch {
	case keep < 0 || keep > n:
		return optionError("n_keep", "must be in 0..%d (the cached tokens), got %d", n, keep)
	case discard < 0 || keep+discard > n:
		return optionError("n_discard", "must be in 0..%d (the cached tokens after the kept ones), got %d", n-keep, discard)
	case discard == 0:
		return nil
	}
	valid, err := s.kv.checkShift(keep, discard, n)
	if err != nil {
		return err
	}
	s.kv.validFrom = max(s.kv.validFrom, valid)
	c := &s.model.config
	for l := range c.Layers {
		if c.kvLayerOf(l) != l || s.kv.layers[l].slots == 0 {
			continue // another layer's cache, or none (a recurrent layer)
		}
		s.moveLayer(l, keep, discard, n)
		if !c.Layer(l).Attention.NoPE {
			s.turnKeys(l, keep, discard, n)
		}
	}
	s.tokens = append(s.tokens[:keep], s.tokens[keep+discard:]...)
	s.lastLogits = false // they were the logits before the shift (state.go)
	return nil
}

// checkShift refuses a shift of the n cached positions that a ring cannot
// take, and returns the oldest new position every ring holds after it: a
// kept position before keep that a ring has overwritten is lost, and the
// next position's window must not reach back to it.
func (c *kvCache) checkShift(keep, discard, n int) (int, error) {
	after, valid := n-discard, 0
	for l, ly := range c.layers {
		if ly.slots == 0 || n <= ly.slots {
			continue // it holds every position
		}
		oldest := n - ly.slots // the oldest position the ring holds
		lo := max(0, after-ly.slots)
		if lost := min(keep, oldest); lo < lost {
			// New positions lo..lost-1 are kept ones the ring overwrote.
			if lost > ly.first(after) {
				return 0, fmt.Errorf("%w: layer %d's sliding window of %d positions would read kept position %d, which its ring no longer holds (keep at most %d tokens)",
					ErrShiftUnsupported, l, ly.window, lost-1, max(lo, ly.first(after)))
			}
			valid = max(valid, lost)
		}
	}
	return valid, nil
}

// moveLayer moves layer l's keys and values of positions keep+discard..n-1
// to keep..n-discard-1: in place where the layer holds every position, else
// through the scratch, each kept position the ring must hold into the slot
// its new position takes.
func (s *Session) moveLayer(l, keep, discard, n int) {
	kv := &s.kv
	ly := kv.layers[l]
	d := ly.kvDim
	if n <= ly.slots { // slot p holds position p
		from, to, end := ly.at+(keep+discard)*d, ly.at+keep*d, ly.at+n*d
		if kv.typ == KVF16 {
			copy(kv.k16[to:], kv.k16[from:end])
			copy(kv.v16[to:], kv.v16[from:end])
		} else {
			copy(kv.k[to:], kv.k[from:end])
			copy(kv.v[to:], kv.v[from:end])
		}
		return
	}
	after := n - discard
	lo := max(0, after-ly.slots) // the new positions the ring holds: lo..after-1
	old := func(q int) int {
		if q < keep {
			return q
		}
		return q + discard
	}
	sc := s.shiftScratch()
	relayout := func(k []float32) {
		for q := lo; q < after; q++ {
			at := ly.at + ly.slot(old(q))*d
			copy(sc.ring[(q-lo)*d:], k[at:at+d])
		}
		for q := lo; q < after; q++ {
			at := ly.at + ly.slot(q)*d
			copy(k[at:at+d], sc.ring[(q-lo)*d:])
		}
	}
	relayout16 := func(k []uint16) {
		for q := lo; q < after; q++ {
			at := ly.at + ly.slot(old(q))*d
			copy(sc.ring16[(q-lo)*d:], k[at:at+d])
		}
		for q := lo; q < after; q++ {
			at := ly.at + ly.slot(q)*d
			copy(k[at:at+d], sc.ring16[(q-lo)*d:])
		}
	}
	if kv.typ == KVF16 {
		relayout16(kv.k16)
		relayout16(kv.v16)
	} else {
		relayout(kv.k)
		relayout(kv.v)
	}
}

// turnKeys turns layer l's keys of the moved positions (new positions
// keep..n-discard-1 that the layer holds) from position q+discard's
// rotation to q's.
func (s *Session) turnKeys(l, keep, discard, n int) {
	c, kv := &s.model.config, &s.kv
	ly := kv.layers[l]
	d, headDim, rope := ly.kvDim, c.layerHeadDim(l), s.layerRopes[l]
	after := n - discard
	first := keep
	if n > ly.slots {
		first = max(keep, after-ly.slots)
	}
	for q := first; q < after; q++ {
		at := ly.at + ly.slot(q)*d
		if kv.typ == KVF16 {
			row := s.shiftScratch().row[:d]
			tensor.DecodeF16Rows(row, kv.k16[at:], d, d)
			rope.turn(row, q+discard, q, headDim, c.RopeStyle)
			tensor.EncodeF16(kv.k16[at:at+d], row)
			continue
		}
		rope.turn(kv.k[at:at+d], q+discard, q, headDim, c.RopeStyle)
	}
}

// shiftScratch is the session's shift scratch, allocated at its first
// shift for the largest layer's cache.
func (s *Session) shiftScratch() *shiftScratch {
	if s.shiftMem == nil {
		most, width := 0, 0
		for _, ly := range s.kv.layers {
			most, width = max(most, ly.slots*ly.kvDim), max(width, ly.kvDim)
		}
		sc := &shiftScratch{row: make([]float32, width)}
		if s.kv.typ == KVF16 {
			sc.ring16 = make([]uint16, most)
		} else {
			sc.ring = make([]float32, most)
		}
		s.shiftMem = sc
	}
	return s.shiftMem
}

// turn rotates every head in v (heads·headDim values), rotated to position
// from by this table, to position to: each rotated pair by the difference
// of its angles at to and from, its cosine and sine from the table's own
// (float32) ones, in float64, divided by their magnitudes (LongRoPE's and
// YaRN's attention factor scales the table's cosines and sines, which a
// rotated key carries once already).
func (t ropeTable) turn(v []float32, from, to, headDim int, style RopeStyle) {
	cf, sf := t.cos[from*t.half:(from+1)*t.half], t.sin[from*t.half:(from+1)*t.half]
	ct, st := t.cos[to*t.half:(to+1)*t.half], t.sin[to*t.half:(to+1)*t.half]
	for i := range t.half {
		c0, s0, c1, s1 := float64(cf[i]), float64(sf[i]), float64(ct[i]), float64(st[i])
		mag := math.Sqrt((c0*c0 + s0*s0) * (c1*c1 + s1*s1))
		cos, sin := (c1*c0+s1*s0)/mag, (s1*c0-c1*s0)/mag
		a, b := 2*i, 2*i+1
		if style == RopeHalves {
			a, b = i, i+t.half
		}
		for h := 0; h+headDim <= len(v); h += headDim {
			x0, x1 := float64(v[h+a]), float64(v[h+b])
			v[h+a] = float32(x0*cos - x1*sin)
			v[h+b] = float32(x0*sin + x1*cos)
		}
	}
}

// shiftKeep is how many tokens a shift of a session of context positions
// keeps when asked for keep: at most the context less 4, as llama.cpp
// bounds n_keep, so that a shift always drops some.
func shiftKeep(keep, context int) int {
	return max(0, min(keep, context-4))
}

// shiftDiscard is how many tokens a shift of n cached ones keeping keep
// drops: half of the rest (llama.cpp's rule), at least one.
func shiftDiscard(keep, n int) int {
	return max(1, (n-keep)/2)
}

// shift shifts the full context of the generation's session by
// GenerateOptions.ShiftKeep's rule, counting it in the result; false when
// the session cannot (a ring that lost a kept position), and the
// generation then ends at the context.
func (g *generation) shift() bool {
	s := g.session
	keep := shiftKeep(g.opts.ShiftKeep, s.context)
	discard := shiftDiscard(keep, len(s.tokens))
	if s.shift(keep, discard) != nil {
		return false
	}
	g.res.Shifts++
	g.res.ShiftedTokens += discard
	return true
}

// cutPrompt cuts a prompt longer than the session's context as the
// generation's shifts would have: it keeps the first keep tokens (bounded
// as shiftKeep) and drops as many blocks of half the rest of a full
// context, oldest first, as it takes to fit, counting the cut in res as
// one shift.
func (s *Session) cutPrompt(prompt []int, keep int, res *Result) []int {
	keep = shiftKeep(keep, s.context)
	block := shiftDiscard(keep, s.context)
	blocks := (len(prompt) - s.context + block - 1) / block
	drop := blocks * block
	res.Shifts++
	res.ShiftedTokens += drop
	return append(prompt[:keep:keep], prompt[keep+drop:]...)
}
