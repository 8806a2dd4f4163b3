package sampling

import "math"

// candidate is one token in the chain: its id, its logit after bias and
// penalties (before temperature), and its probability once softmax has run.
type candidate struct {
	id    int32
	logit float32
	p     float64
}

// before reports whether a precedes b in the candidate order: higher logit
// first, then lower id. Logits are never NaN here (the chain maps NaN to
// -Inf) and -0 == +0, so this is a strict total order and every sort or
// selection under it has exactly one result.
func before(a, b candidate) bool {
	return a.logit > b.logit || (a.logit == b.logit && a.id < b.id)
}

// selectTopK returns the first k candidates of logits (indexed by id) in
// candidate order, written into out[:k], without sorting the rest: a heap of
// the k best seen so far, its worst at the root, costs O(n log k) at worst
// and about O(n) on real logits, where most tokens lose to the root at once.
// It needs 1 <= k <= len(logits) and cap(out) >= k.
func selectTopK(logits []float32, k int, out []candidate) []candidate {
	h := out[:0]
	for i, l := range logits {
		c := candidate{id: int32(i), logit: l}
		if len(h) < k {
			h = append(h, c)
			worstHeapUp(h, len(h)-1)
			continue
		}
		if before(c, h[0]) {
			h[0] = c
			worstHeapDown(h, 0)
		}
	}
	// Heap sort: moving the worst to the back each time leaves h best first.
	for end := len(h) - 1; end > 0; end-- {
		h[0], h[end] = h[end], h[0]
		worstHeapDown(h[:end], 0)
	}
	return h
}

// worstHeapUp restores the heap (every parent after its children in candidate
// order) after h[i] was appended.
func worstHeapUp(h []candidate, i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !before(h[parent], h[i]) {
			return
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

// worstHeapDown restores the heap after h[i] was replaced.
func worstHeapDown(h []candidate, i int) {
	for {
		worst := i
		if l := 2*i + 1; l < len(h) && before(h[worst], h[l]) {
			worst = l
		}
		if r := 2*i + 2; r < len(h) && before(h[worst], h[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}

// sortAll writes every token of logits (indexed by id) into out in candidate
// order. It is an LSD radix sort, O(n), on 64-bit words holding an
// order-preserving key of the logit in the high half and the id in the low
// half: only the high half is sorted, and since the words start in id order
// and every pass is stable, equal logits stay in ascending id order.
// keys and tmp need len >= len(logits).
func sortAll(logits []float32, keys, tmp []uint64, out []candidate) []candidate {
	n := len(logits)
	src, dst := keys[:n], tmp[:n]
	for i, l := range logits {
		src[i] = uint64(descendingKey(l))<<32 | uint64(i)
	}
	var count [256]int
	for shift := 32; shift < 64; shift += 8 {
		clear(count[:])
		for _, w := range src {
			count[byte(w>>shift)]++
		}
		if count[byte(src[0]>>shift)] == n {
			continue // every key has this digit: the pass would change nothing
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for _, w := range src {
			d := byte(w >> shift)
			dst[count[d]] = w
			count[d]++
		}
		src, dst = dst, src
	}
	out = out[:n]
	for i, w := range src {
		id := int32(uint32(w))
		out[i] = candidate{id: id, logit: logits[id]}
	}
	return out
}

// descendingKey maps a logit (not NaN) to a uint32 whose ascending order is
// the logit's descending order, with -0 and +0 equal, as before compares them.
func descendingKey(l float32) uint32 {
	if l == 0 {
		l = 0 // -0 → +0
	}
	b := math.Float32bits(l)
	if b>>31 != 0 {
		b = ^b // negative: larger magnitude sorts lower
	} else {
		b |= 1 << 31 // positive: above every negative
	}
	return ^b
}
