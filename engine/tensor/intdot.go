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
