package engine

import (
	"fmt"
	"math"
)

// Sliding-window attention. Some layers (gemma2's every other one, five of
// every six of gemma3's) attend only to the latest positions, a window of
// them, while the others attend to every position. A sliding layer's keys
// and values older than its window are never read again, so its KV cache
// holds only the window: a ring, position p in slot p mod slots,
// overwriting the oldest. Gemma-3-1B's 22 sliding layers of its 26 keep 512
// positions each, whatever the context, which is most of the memory a long
// context would otherwise take.

// SlidingWindow says which layers of a model attend to a sliding window of
// positions, and how those layers rotate. The zero value has none.
type SlidingWindow struct {
	// Size is how many positions a sliding layer's query attends to, its
	// own included: positions pos-Size+1..pos (llama.cpp's n_swa, masking
	// where pos - p >= n_swa). 0: no layer slides.
	Size int
	// Period is llama.cpp's sliding-window pattern: of every Period
	// layers, the last attends to every position and the others slide
	// (gemma2: 2, the even layers slide; gemma3: 6). 0: every layer slides.
	Period int
	// RopeTheta and RopeScale are the sliding layers' rotary base and
	// linear position scaling (gemma3's local layers: 10000, unscaled;
	// gemma2's: the model's).
	RopeTheta, RopeScale float32
}

// Sliding reports whether layer l attends to a sliding window (see
// SlidingWindow).
func (c Config) Sliding(l int) bool {
	w := c.SlidingWindow
	return w.Size > 0 && (w.Period == 0 || l%w.Period < w.Period-1)
}

// slidingWindow is the window's size when some layer slides, else 0.
func (c Config) slidingWindow() int {
	for l := range c.Layers {
		if c.Sliding(l) {
			return c.SlidingWindow.Size
		}
	}
	return 0
}

// slidingRope reports whether the sliding layers rotate otherwise than the
// others, and so need rotations of their own.
func (c Config) slidingRope() bool {
	w := c.SlidingWindow
	return w.Size > 0 && (w.RopeTheta != c.RopeTheta || w.RopeScale != c.RopeScale)
}

// ropeTables is how many tables of rotations a session keeps: one, or two
// when the sliding layers rotate otherwise.
func (c Config) ropeTables() int {
	if c.slidingRope() {
		return 2
	}
	return 1
}

// kvSlots is how many positions layer l's KV cache holds in a session of
// context positions whose cache holds t: the context, or for a sliding
// layer its window, plus the positions a group of prompt tokens stores
// before the group's first token attends (over an F16 cache kvBlockTokens
// tokens attend together: see attentionBlock), at most the context.
func (c Config) kvSlots(l, context int, t KVType) int {
	if !c.Sliding(l) {
		return context
	}
	group := 1
	if t == KVF16 {
		group = kvBlockTokens
	}
	return min(context, c.SlidingWindow.Size+group-1)
}

// validateSlidingWindow checks the window's values.
func (c Config) validateSlidingWindow() error {
	w := c.SlidingWindow
	switch {
	case w.Size < 0 || w.Size > maxDimension:
		return fmt.Errorf("%w: sliding window %d is out of range (0..%d)", ErrFormat, w.Size, maxDimension)
	case w.Period < 0 || w.Period > maxDimension:
		return fmt.Errorf("%w: sliding-window pattern %d is out of range (0..%d)", ErrFormat, w.Period, maxDimension)
	case w.Size > 0 && !(validRope(w.RopeTheta) && validRope(w.RopeScale)):
		return fmt.Errorf("%w: the sliding layers' rope base %v and scale %v must be positive and finite", ErrFormat, w.RopeTheta, w.RopeScale)
	}
	return nil
}

// validRope reports whether v can be a rotary base or scale.
func validRope(v float32) bool { return v > 0 && !math.IsInf(float64(v), 0) }

// kvLayer is where one layer's keys and values lie in the KV cache.
type kvLayer struct {
	at     int // the layer's first value
	slots  int // positions it holds: position p is in slot p mod slots
	window int // positions a query attends to, its own included; 0: all
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
		if from > 0 && ly.first(from) < cached-ly.slots {
			return false
		}
	}
	return true
}
