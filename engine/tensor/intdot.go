package tensor

import (
	"encoding/binary"
	"unsafe"
)

// Integer building blocks of the quantized dot products. Go neither unrolls
// loops nor folds constant offsets into byte loads, and has no SIMD; loading
// 8 quants and 8 activation bytes as one uint64 each and taking lanes apart
// with shifts roughly halves the instructions per element, natively and in
// wasm. A lane holds one quant (unsigned, after masking its bits into place)
// or one int8 activation.

const (
	lanes01 = 0x0101010101010101 // bit 0 of every byte lane
	lanes03 = 0x0303030303030303 // bits 0-1
	lanes0f = 0x0f0f0f0f0f0f0f0f // bits 0-3
)

// le64 loads 8 bytes, little-endian (one load on every target).
func le64(b []byte) uint64 {
	return binary.LittleEndian.Uint64(b)
}

// dot4u returns Σ_{k<4} uint8 lane k of w · int8 lane k of x; use it as
// dot4u(w, x) + dot4u(w>>32, x>>32) for 8 lanes (it inlines; 8 lanes at
// once would not).
func dot4u(w, x uint64) int32 {
	return int32(uint8(w))*int32(int8(x)) + int32(uint8(w>>8))*int32(int8(x>>8)) +
		int32(uint8(w>>16))*int32(int8(x>>16)) + int32(uint8(w>>24))*int32(int8(x>>24))
}

// dot4s is dot4u with int8 lanes in w too.
func dot4s(w, x uint64) int32 {
	return int32(int8(w))*int32(int8(x)) + int32(int8(w>>8))*int32(int8(x>>8)) +
		int32(int8(w>>16))*int32(int8(x>>16)) + int32(int8(w>>24))*int32(int8(x>>24))
}

// int8Bytes views activation quants as bytes.
func int8Bytes(q []int8) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(q))), len(q))
}

// bitLanes maps a byte to a uint64 whose lane k is bit k of the byte: the
// 5th bits of Q5_0/Q5_1, stored one per element in a uint32, become lanes.
var bitLanes = func() *[256]uint64 {
	var t [256]uint64
	for b := range t {
		for k := range 8 {
			t[b] |= uint64(b>>k&1) << (8 * k)
		}
	}
	return &t
}()

// Products four at a time, for the batched kernels (traits.dotRows). A
// uint64 of four 16-bit lanes v_i is read as the number Σ v_i·2^(16i), the
// lanes signed (a negative lane borrows from the next: the sum is what
// counts, mod 2^64). Multiplying a word of weights by a word of
// activations with their lanes in reverse order (packLanes) gives
// Σ w_i·x_i as the coefficient of 2^48: one multiplication for four
// products. Products added up keep their coefficients apart as long as
// each stays within ±2^15 (the top one within [-2^15, 2^15)); every kernel
// bounds how many it adds before topLane reads the sum: with int8
// activations, 32 products of weight lanes in [-7, 8], 16 in [-15, 16] or
// 8 in [-31, 32] all stay within [-2^15, 2^15 - 256]. The integer sums are
// exactly those of the scalar kernels; only their order differs. (Q8_0's
// kernel uses three lanes of 21 bits: see packLanes3.)
//
// Every 8 consecutive elements take two words, the even elements in the
// first and the odd ones in the second, because that is how masks take the
// bytes of a uint64 apart: v&lanesFF and v>>8&lanesFF.

const (
	lanes4  = 0x0004000400040004 // 4 in every 16-bit lane
	lanes8  = 0x0008000800080008 // 8 in every 16-bit lane
	lanes16 = 0x0010001000100010 // 16 in every 16-bit lane
	lanes32 = 0x0020002000200020 // 32 in every 16-bit lane
	lanesFF = 0x00ff00ff00ff00ff // bits 0-7 of every 16-bit lane
	lanesF  = 0x000f000f000f000f // bits 0-3
)

// nibbleLanes returns the lane words of 8-q for the 4-bit quants in v's 8
// bytes: of the low nibbles (lo0: even bytes, lo1: odd bytes) and of the
// high nibbles (hi0, hi1).
func nibbleLanes(v uint64) (lo0, lo1, hi0, hi1 uint64) {
	return lanes8 - v&lanesF, lanes8 - v>>8&lanesF, lanes8 - v>>4&lanesF, lanes8 - v>>12&lanesF
}

// dotLanes returns the sum of the lane products of w and x: for the Q8
// encodings' quants packed in x, Σ w_i·x_i at the top lane (topLane).
func dotLanes(w, x *[8]uint64) uint64 {
	return w[0]*x[0] + w[1]*x[1] + w[2]*x[2] + w[3]*x[3] + w[4]*x[4] + w[5]*x[5] + w[6]*x[6] + w[7]*x[7]
}

// dotLanes16 is dotLanes for the two halves of 32 elements apart, each
// sum read from its top lane (topLane): for sub-blocks of 16, and for
// lanes whose 32 products may not sum within a lane when 16 do.
func dotLanes16(w, x *[8]uint64) (lo, hi int32) {
	return topLane(w[0]*x[0] + w[1]*x[1] + w[2]*x[2] + w[3]*x[3]), topLane(w[4]*x[4] + w[5]*x[5] + w[6]*x[6] + w[7]*x[7])
}

// blockLanes is a block of 32 quants unpacked for a batched kernel: its
// lane words and its scale and min (if it has one) as float32.
type blockLanes struct {
	w    [8]uint64
	d, m float32
}

// topLane returns the coefficient of 2^48 of a sum of lane products (see
// above): adding 2^47 makes the lower coefficients' part, which lies in
// [-2^47, 2^47), non-negative so it cannot borrow from the top lane.
func topLane(acc uint64) int32 {
	return int32(int64(acc+1<<47) >> 48)
}

// packing says which packed forms of its quants an activation holds.
type packing uint8

const (
	packedLanes  packing = 1 << iota // p
	packedSums32                     // sum, for Q8_K: Σq per 32
	packedLanes3                     // p3
)

// packLanes packs a's quants into p for the batched kernels, eight words
// for 32 quants, four to a word in reverse order: for the 8 quants from 8k,
// word 2k holds q[8k]·2^48 + q[8k+2]·2^32 + q[8k+4]·2^16 + q[8k+6] and
// word 2k+1 the odd ones likewise.
func packLanes(a *activation) {
	if a.packed&packedLanes != 0 {
		return
	}
	a.p = a.p[:len(a.q)/32]
	for g := range a.p {
		x := (*[32]int8)(a.q[32*g:])
		for w := range a.p[g] {
			k, odd := w/2*8, w%2
			a.p[g][w] = uint64(int64(x[k+odd])<<48 + int64(x[k+2+odd])<<32 + int64(x[k+4+odd])<<16 + int64(x[k+6+odd]))
		}
	}
	a.packed |= packedLanes
}

// packLanesK is packLanes for a Q8_K encoding, which also takes Σq per 32
// (as Q8_0 has) from its sums per 16, for the K-quants' sub-blocks of 32.
func packLanesK(a *activation) {
	packLanes(a)
	sums32(a)
}

// sums32 sets a Q8_K encoding's Σq per 32 quants (sum) from its sums per
// 16, for the K-quants' sub-blocks of 32.
func sums32(a *activation) {
	if a.packed&packedSums32 != 0 {
		return
	}
	a.sum = a.sum[:len(a.q)/32]
	for i := range a.sum {
		a.sum[i] = int32(a.bsums[2*i]) + int32(a.bsums[2*i+1])
	}
	a.packed |= packedSums32
}

// Three 21-bit lanes to a word (Q8_0's kernel): int8 weights times int8
// quants reach 2^14 each, so four of them can overflow a 16-bit lane, but
// a block's 32 sum within ±2^20. A word of weights, lanes in element
// order, times a word of quants, lanes in reverse order, has Σ w_i·x_i as
// the coefficient of 2^42; the word's top bit (the lowest of the next
// coefficient) is shifted out before it is read (topLane3). A block of 32
// takes 11 words, the last with two lanes.

// packLanes3 packs a's quants into p3 for Q8_0's batched kernel: eleven
// words for 32 quants, word j holding q[3j]·2^42 + q[3j+1]·2^21 + q[3j+2]
// (word 10: q[30]·2^42 + q[31]·2^21).
func packLanes3(a *activation) {
	if a.packed&packedLanes3 != 0 {
		return
	}
	a.p3 = a.p3[:len(a.q)/32]
	for g := range a.p3 {
		x, p := (*[32]int8)(a.q[32*g:]), &a.p3[g]
		for j := range 10 {
			p[j] = uint64(int64(x[3*j])<<42 + int64(x[3*j+1])<<21 + int64(x[3*j+2]))
		}
		p[10] = uint64(int64(x[30])<<42 + int64(x[31])<<21)
	}
	a.packed |= packedLanes3
}

// topLane3 returns the coefficient of 2^42 of a sum of three-lane products
// (see above).
func topLane3(acc uint64) int32 {
	return int32(int64((acc+1<<41)<<1) >> 43)
}
