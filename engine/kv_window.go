package engine

import "slices"

// Sliding-window attention. Some layers (gemma2's every other one, five of
// every six of gemma3's) attend only to the latest positions, a window of
// them, while the others attend to every position. A sliding layer's keys
// and values older than its window are never read again, so its KV cache
// holds only the window: a ring, position p in slot p mod slots,
// overwriting the oldest. Gemma-3-1B's 22 sliding layers of its 26 keep 512
// positions each, whatever the context, which is most of the memory a long
// context would otherwise take.

// Sliding reports whether layer l attends to a sliding window of positions
// (AttentionSpec.Window).
func (c Config) Sliding(l int) bool { return c.Layer(l).Attention.Window > 0 }

// slidingWindow is the largest window a layer slides over, 0 when none
// slides.
func (c Config) slidingWindow() int {
	w := 0
	for l := range c.Layers {
		w = max(w, c.Layer(l).Attention.Window)
	}
	return w
}

// ropeTables is how many tables of rotations a session keeps: one for
// the model's rotary base and scaling, and one for each other pair a
// rotating layer has (gemma3's sliding layers).
func (c Config) ropeTables() int {
	return len(c.rotations())
}

// rotations lists the rotary bases and scalings of the model's layers,
// the model's first: a session keeps a table of rotations for each.
func (c Config) rotations() [][2]float32 {
	out := [][2]float32{{c.RopeTheta, c.RopeScale}}
	for _, s := range c.LayerSpecs {
		theta, scale := c.rotation(s.Attention)
		if r := [2]float32{theta, scale}; !s.Attention.NoPE && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// kvSlots is how many positions layer l's KV cache holds in a session of
// context positions whose cache holds t and whose prompt blocks are of
// DefaultPromptBlock tokens (kvSlotsBlock).
func (c Config) kvSlots(l, context int, t KVType) int {
	return c.kvSlotsBlock(l, context, t, DefaultPromptBlock)
}

// kvSlotsBlock is how many positions layer l's KV cache holds in a session
// of context positions whose cache holds t and whose prompt blocks are of
// block tokens: none for a recurrent layer (its state is beside the
// cache); else the context, or for a sliding layer its window, plus the
// positions a group of prompt tokens stores before the group's first token
// attends (over an F16 cache kvBlockTokens tokens attend together: see
// attentionBlock) — a whole block's for a layer whose cache a later layer
// shares, which reads it once the block is stored —, at most the context.
func (c Config) kvSlotsBlock(l, context int, t KVType, block int) int {
	if c.Layer(l).Kind.Recurrent() {
		return 0
	}
	window := c.Layer(l).Attention.Window
	if window == 0 {
		return context
	}
	group := 1
	if t == KVF16 {
		group = kvBlockTokens
	}
	if c.sharesKV(l) {
		group = max(group, block)
	}
	return min(context, window+group-1)
}

// kvLayer is where one layer's keys and values lie in the KV cache.
type kvLayer struct {
	at     int // the layer's first value
	slots  int // positions it holds: position p is in slot p mod slots
	window int // positions a query attends to, its own included; 0: all
	kvDim  int // the width of a position's key (and value)
}

// slot is where position pos is held.
func (ly kvLayer) slot(pos int) int { return pos % ly.slots }

// first is the oldest position a query at pos attends to.
func (ly kvLayer) first(pos int) int {
	if ly.window > 0 {
		return max(0, pos-ly.window+1)
	}
	return 0
}

// wrap cuts positions lo..hi-1 (at most slots of them) where their slots
// wrap round the ring: lo..mid-1 lie in consecutive slots from slot on,
// mid..hi-1 (if mid < hi) from slot 0.
func (ly kvLayer) wrap(lo, hi int) (mid, slot int) {
	slot = ly.slot(lo)
	return min(hi, lo+ly.slots-slot), slot
}

// holds reports whether the cache, which has stored positions 0..cached-1
// in order, still holds every position that evaluating position from (and
// on) reads: a ring that has moved past from keeps no longer the positions
// of from's window. (A layer that holds the whole context always does.)
func (c *kvCache) holds(from, cached int) bool {
	for _, ly := range c.layers {
		if from > 0 && ly.slots > 0 && ly.first(from) < cached-ly.slots || ly.window > 0 && ly.first(from) < c.validFrom {
			return false
		}
	}
	return true
}
