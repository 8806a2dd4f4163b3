package sampling

import "math"

// window holds the recent accepted tokens that the penalties look at, as a
// count per token id, so that applying the penalties costs one step per
// distinct token in the window rather than one per vocabulary entry.
type window struct {
	limit   int     // tokens the window holds; -1 = unbounded
	ring    []int32 // (min(limit, accepted)) the tokens in the window; oldest at head once full; unused when unbounded
	head    int     // index in ring of the oldest token once len(ring) == limit
	counts  []int32 // (vocab) occurrences of each id in the window
	present []int32 // (distinct ids in window) ids with counts > 0, in no particular order
	slot    []int32 // (vocab) index of an id in present, valid while its count is > 0
}

// maxRingPrealloc caps the ring allocated up front: a huge PenaltyLastN from a
// request must not reserve memory for tokens that may never be accepted. The
// ring grows past this (in Accept, never in Sample) as tokens arrive.
const maxRingPrealloc = 1 << 16

// newWindow allocates a window of limit tokens (limit >= 1, or -1 for
// unbounded) over a vocabulary of vocab ids.
func newWindow(limit, vocab int) *window {
	distinct := min(vocab, maxRingPrealloc)
	w := &window{
		limit:  limit,
		counts: make([]int32, vocab),
		slot:   make([]int32, vocab),
	}
	if limit > 0 {
		distinct = min(distinct, limit)
		w.ring = make([]int32, 0, min(limit, maxRingPrealloc))
	}
	w.present = make([]int32, 0, distinct)
	return w
}

// accept records id as the newest token, evicting the oldest one when a
// bounded window is full.
func (w *window) accept(id int32) {
	if w.limit < 0 {
		w.add(id)
		return
	}
	if len(w.ring) < w.limit {
		w.ring = append(w.ring, id)
		w.add(id)
		return
	}
	w.remove(w.ring[w.head])
	w.ring[w.head] = id
	w.add(id)
	w.head++
	if w.head == w.limit {
		w.head = 0
	}
}

// add counts one more occurrence of id.
func (w *window) add(id int32) {
	c := w.counts[id]
	if c == 0 {
		w.slot[id] = int32(len(w.present))
		w.present = append(w.present, id)
	}
	// Only an unbounded window could reach 2**31 occurrences; saturating keeps
	// the count's sign right instead of wrapping.
	if c < math.MaxInt32 {
		w.counts[id] = c + 1
	}
}

// remove forgets one occurrence of id, dropping it from present when none is
// left (swap with the last entry, so removal is O(1)).
func (w *window) remove(id int32) {
	w.counts[id]--
	if w.counts[id] > 0 {
		return
	}
	i := w.slot[id]
	last := w.present[len(w.present)-1]
	w.present[i] = last
	w.slot[last] = i
	w.present = w.present[:len(w.present)-1]
}

// reset empties the window in O(distinct ids).
func (w *window) reset() {
	for _, id := range w.present {
		w.counts[id] = 0
	}
	w.present = w.present[:0]
	w.ring = w.ring[:0]
	w.head = 0
}
