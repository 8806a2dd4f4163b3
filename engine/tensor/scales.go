package tensor

import "sync"

// The matrix–vector SIMD kernels of the types whose blocks carry F16
// scales (Q8_0, Q4_0, Q5_0; Q4_1 and Q5_1 their mins too) decode those
// scales as finite numbers, which saves them four of some fifty
// instructions a block; an infinite or NaN scale they would turn into a
// finite one (65536 or more), where the pure-Go kernels, whose bits they
// otherwise give, propagate it (and the engine then names the bad
// tensor). So those kernels run only on a matrix whose scales are all
// finite, which finiteScales checks once per matrix, at its first
// product; a matrix with an infinite or NaN scale takes the pure-Go
// kernels, and gives their bits either way.

// scaleCheck is the once-computed answer of finiteScales, shared by a
// matrix and its views (Slice), and the bytes it is about: those of the
// matrix the views were cut from, so that a view's answer covers them all.
type scaleCheck struct {
	once   sync.Once
	finite bool
	data   []byte
}

// f16Scales is, per type, the offsets in each block of its F16 scales
// (and mins) that the SIMD kernels decode as finite.
var f16Scales = map[Type][]int{
	Q8_0: {0}, Q4_0: {0}, Q5_0: {0},
	Q4_1: {0, 2}, Q5_1: {0, 2},
}

// finiteScales reports whether no F16 scale (f16Scales) of m's blocks is
// infinite or NaN, checking the bytes once (Data must not change after a
// product has read it, as a model's weights do not). It is true for the
// types with no such scales. Packing keeps each block whole, so the check
// reads the blocks in either layout.
func (m *Matrix) finiteScales() bool {
	offsets := f16Scales[m.Type]
	if offsets == nil {
		return true
	}
	c := m.scales
	if c == nil { // a Matrix not made by NewMatrix: checked each time
		return finiteF16At(m.Data, layouts[m.Type].blockBytes, offsets)
	}
	c.once.Do(func() { c.finite = finiteF16At(c.data, layouts[m.Type].blockBytes, offsets) })
	return c.finite
}

// finiteF16At reports whether no F16 value at the offsets of each
// blockBytes-byte block of data has exponent 31 (infinity, NaN). The
// exponent's five bits are bits 2..6 of an F16's high byte: adding 4 to
// them carries into bit 7 only when all are set, so one OR per value
// collects the answer with no branch.
func finiteF16At(data []byte, blockBytes int, offsets []int) bool {
	var bad, bad1, bad2, bad3 byte
	n := len(data) / blockBytes * blockBytes
	for _, o := range offsets {
		i := o + 1
		for ; i+3*blockBytes < n; i += 4 * blockBytes { // four at a time: half the time in Go's WebAssembly
			bad |= data[i]&0x7c + 4
			bad1 |= data[i+blockBytes]&0x7c + 4
			bad2 |= data[i+2*blockBytes]&0x7c + 4
			bad3 |= data[i+3*blockBytes]&0x7c + 4
		}
		for ; i < n; i += blockBytes {
			bad |= data[i]&0x7c + 4
		}
	}
	return (bad|bad1|bad2|bad3)&0x80 == 0
}
