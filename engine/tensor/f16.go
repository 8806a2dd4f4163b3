package tensor

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"
)

// F16: IEEE 754 binary16 per element, little-endian; a block is one element.
//
//	bit 15 sign | bits 14..10 exponent (bias 15) | bits 9..0 mantissa
//
// As in ggml (vec_dot_type F16), the activation is rounded to F16 before the
// dot product. A product of two F16 values has at most 22 significant bits,
// so it is exact in float32: only the order of the float32 additions differs
// from ggml's SIMD lanes.

const f16BlockBytes = 2 // ggml_fp16_t

func init() {
	traitsTable[F16] = &traits{
		vec:        F16,
		dot:        dotF16,
		dequantize: dequantizeF16,
		quantize: func(dst []byte, src []float32) {
			for i, v := range src {
				binary.LittleEndian.PutUint16(dst[2*i:], f32ToF16(v))
			}
		},
	}
}

// f16Table maps every F16 bit pattern to its float32 value (256 KiB): the F16
// kernels look weights up rather than decode bit fields. It is built on first
// use, not at package init, because programs that never touch F16 data (an
// edge worker starts a fresh instance per request) should not pay for it;
// once built it is only read.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = f16ToF32(uint16(h))
	}
	return &t
})

// f16ToF32 decodes an F16 bit pattern exactly (F16 ⊂ float32).
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0x1f: // Inf, NaN (payload kept)
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case 0: // zero, subnormal: mant·2⁻²⁴, exact in float32
		v := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(v))
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// f32ToF16 rounds f to the nearest F16, ties to even, overflowing to ±Inf; a
// NaN becomes the quiet NaN 0x7e00 with f's sign. This is ggml's
// GGML_FP32_TO_FP16 (the conversion llama-quantize stores block scales with).
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // F16 biased exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// F16 subnormal: count units of 2⁻²⁴. f = m·2^(exp-150) with the
		// implicit bit in m, so f/2⁻²⁴ = m >> (126-exp).
		shift := uint32(126 - exp)
		if shift > 24 { // below half the smallest subnormal
			return sign
		}
		m := mant | 0x800000
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || rem == half && q&1 == 1 {
			q++ // may carry into the smallest normal, which is the right encoding
		}
		return sign | uint16(q)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // a carry into the exponent is right, up to 0x7c00 = Inf
	}
	return sign | uint16(h)
}

// half reads the F16 at b[0:2] as float32 (block scales: once per block, so
// decoding the bits costs nothing noticeable).
func half(b0, b1 byte) float32 {
	return f16ToF32(uint16(b0) | uint16(b1)<<8)
}

// roundHalf rounds f to F16 precision.
func roundHalf(f float32) float32 {
	return f16ToF32(f32ToF16(f))
}

// putHalf stores f rounded to F16 at b[0:2].
func putHalf(b []byte, f float32) {
	binary.LittleEndian.PutUint16(b, f32ToF16(f))
}

// putF32 stores f at b[0:4].
func putF32(b []byte, f float32) {
	binary.LittleEndian.PutUint32(b, math.Float32bits(f))
}

// uint16s views b as uint16 values without copying. b must be 2-byte aligned
// (NewMatrix guarantees this for F16 and BF16 data).
func uint16s(b []byte) []uint16 {
	if len(b) < 2 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}

// RoundF16 sets dst[i] = src[i] rounded to the nearest F16 (ties to even),
// kept as float32: the values an F16 dot product multiplies exactly. dst
// may be src.
func RoundF16(dst, src []float32) {
	dst = dst[:len(src)]
	n := roundF16SIMD(dst, src) // the first values on F16C natively, on the SIMD128 kernel in wasm
	t := f16Table()
	for i, v := range src[n:] {
		dst[n+i] = t[f32ToF16(v)]
	}
}

func dequantizeF16(dst []float32, src []byte) {
	DecodeF16(dst, uint16s(src))
}

// EncodeF16 sets dst[i] to src[i] rounded to the nearest F16 (ties to even,
// as ggml's GGML_FP32_TO_FP16), as bits: how an F16 KV cache stores a key or
// a value.
func EncodeF16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	n := encodeF16SIMD(dst, src) // the first values on F16C natively, on the SIMD128 kernel in wasm
	for i, v := range src[n:] {
		dst[n+i] = f32ToF16(v)
	}
}

// DecodeF16 sets dst[i] to the value of the F16 bits src[i] (exactly).
func DecodeF16(dst []float32, src []uint16) {
	src = src[:len(dst)]
	t := f16Table()
	for i, h := range src {
		dst[i] = t[h]
	}
}

// DecodeF16Rows decodes rows of F16 bits width values each, stride values
// apart in src, into dst, one after the other: row r of src (at r·stride)
// becomes dst[r·width : (r+1)·width], for the len(dst)/width rows dst
// holds. Attention over an F16 KV cache decodes a chunk of positions' keys
// (or values) so, once for all the query heads that read them.
// With the wasmlm_simd build tag it runs a SIMD kernel that gives the same
// bits.
func DecodeF16Rows(dst []float32, src []uint16, width, stride int) {
	if width <= 0 || len(dst) < width {
		return
	}
	rows := len(dst) / width
	src = src[:(rows-1)*stride+width]
	if decodeF16RowsSIMD(dst[:rows*width], src, width, stride) {
		return
	}
	for r := range rows {
		DecodeF16(dst[r*width:(r+1)*width], src[r*stride:r*stride+width])
	}
}

// dotF16 sums in four lanes; each product is exact (see above).
func dotF16(row []byte, a *activation) float32 {
	w := uint16s(row)
	x := a.f[:len(w)]
	t := f16Table()
	var s0, s1, s2, s3 float32
	for len(w) >= 4 && len(x) >= 4 {
		s0 += float32(t[w[0]] * x[0])
		s1 += float32(t[w[1]] * x[1])
		s2 += float32(t[w[2]] * x[2])
		s3 += float32(t[w[3]] * x[3])
		w, x = w[4:], x[4:]
	}
	for i, h := range w {
		s0 += float32(t[h] * x[i])
	}
	return (s0 + s1) + (s2 + s3)
}
