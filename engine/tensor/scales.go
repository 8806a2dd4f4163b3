package tensor

import "sync"

// The matrix–vector SIMD kernels of the types whose blocks carry F16
// scales (Q8_0, Q4_0, Q5_0; Q4_1 and Q5_1 their mins too) decode those
// scales as finite numbers, which saves them four of some fifty
// instructions a block; an infinite or NaN scale they would turn into a
// finite one (65536 or more), where the pure-Go kernels, whose bits they
// otherwise give, propagate it (and the engine then names the bad
// tensor). So those kernels run only on a matrix whose scales are all
// finite, which finiteScales checks once per matrix; a matrix with an
// infinite or NaN scale takes its type's batched kernel with one vector
// (which decodes every F16 exactly) or the pure-Go kernel, and gives their
// bits either way.
//
// Q8_0's relaxed kernel moves each activation quant's sign onto the weight
// quant it multiplies (relaxed_dot takes one operand in 0..127, and both
// of Q8_0's are int8), which holds for quants in -127..127: ggml's
// quantizers and encodeQ8_0 never make -128. So with the check of the
// scales comes one of Q8_0's quants (minQuants), and the matrix–vector
// kernel takes only a matrix and an activation with no -128 quant; the
// others take the batched kernel too. Pack runs both checks when it packs
// a matrix for the SIMD kernels, at a model's load rather than at its
// first token.

// scaleCheck is the once-computed answers of finiteScales and minQuants,
// shared by a matrix and its views (Slice), and the bytes they are about:
// those of the matrix the views were cut from, so that a view's answers
// cover them all.
type scaleCheck struct {
	once      sync.Once
	finite    bool
	minQuants bool // Q8_0: some quant is -128
	data      []byte
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
	return m.checkBlocks().finite
}

// minQuants reports whether some quant of a Q8_0 matrix is -128, checking
// the bytes once as finiteScales does; false for the other types.
func (m *Matrix) minQuants() bool {
	return m.Type == Q8_0 && m.checkBlocks().minQuants
}

// checkBlocks returns the answers of finiteScales and minQuants about m's
// bytes, computed once per matrix (each time for a Matrix not made by
// NewMatrix).
func (m *Matrix) checkBlocks() *scaleCheck {
	c := m.scales
	if c == nil {
		c = &scaleCheck{data: m.Data}
		c.check(m.Type)
		return c
	}
	c.once.Do(func() { c.check(m.Type) })
	return c
}

// check computes c's answers for c.data, blocks of type t.
func (c *scaleCheck) check(t Type) {
	c.finite = true
	if offsets := f16Scales[t]; offsets != nil {
		c.finite = finiteF16At(c.data, layouts[t].blockBytes, offsets)
	}
	if t == Q8_0 {
		c.minQuants = q8_0MinQuants(c.data)
	}
}

// lanes80 is bit 7 of every byte lane.
const lanes80 = 0x8080808080808080

// minBytes has bit 7 set in some byte exactly when one of the eight bytes
// of v is 0x80 (-128): after an XOR with 0x80 such a byte is 0, and
// (u - 0x01…) &^ u has bit 7 set in some byte exactly when u has a zero
// byte (the classic test). Only its bits 7 of each byte mean anything.
func minBytes(v uint64) uint64 {
	u := v ^ lanes80
	return (u - lanes01) &^ u
}

// q8_0MinQuants reports whether some quant of the Q8_0 blocks in data is
// -128, eight bytes at a time (minBytes). Chromium: about 6 GB/s.
func q8_0MinQuants(data []byte) bool {
	var acc0, acc1 uint64
	for b := 0; b+q8_0BlockBytes <= len(data); b += q8_0BlockBytes {
		q := data[b+2 : b+q8_0BlockBytes]
		acc0 |= minBytes(le64(q)) | minBytes(le64(q[8:]))
		acc1 |= minBytes(le64(q[16:])) | minBytes(le64(q[24:]))
	}
	return (acc0|acc1)&lanes80 != 0
}

// minQuant8 reports whether some of the int8 quants q is -128, eight at a
// time as q8_0MinQuants.
func minQuant8(q []int8) bool {
	b := int8Bytes(q)
	var acc uint64
	i := 0
	for ; i+8 <= len(b); i += 8 {
		acc |= minBytes(le64(b[i:]))
	}
	for ; i < len(b); i++ {
		if b[i] == 0x80 {
			return true
		}
	}
	return acc&lanes80 != 0
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
