package tensor

import (
	"encoding/binary"
	"math"
)

// BF16: bfloat16 per element, little-endian; a block is one element.
//
//	bit 15 sign | bits 14..7 exponent (bias 127) | bits 6..0 mantissa
//
// It is the top half of a float32. As in ggml (vec_dot_type BF16), the
// activation is rounded to BF16 first; a product of two BF16 values has at
// most 16 significant bits, so it is exact in float32.

const bf16BlockBytes = 2 // ggml_bf16_t

func init() {
	traitsTable[BF16] = &traits{
		vec:        BF16,
		dot:        dotBF16,
		dequantize: dequantizeBF16,
		quantize: func(dst []byte, src []float32) {
			for i, v := range src {
				binary.LittleEndian.PutUint16(dst[2*i:], f32ToBF16(v))
			}
		},
	}
}

// f32ToBF16 rounds f to the nearest BF16, ties to even; a NaN stays a NaN
// (made quiet), as ggml's GGML_FP32_TO_BF16 does.
func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// bf16ToF32 decodes a BF16 bit pattern exactly.
func bf16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// roundBF16 sets dst[i] = src[i] rounded to BF16.
func roundBF16(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = bf16ToF32(f32ToBF16(v))
	}
}

func dequantizeBF16(dst []float32, src []byte) {
	w := uint16s(src)
	w = w[:len(dst)]
	for i, h := range w {
		dst[i] = bf16ToF32(h)
	}
}

// dotBF16 sums in four lanes; each product is exact (see above).
func dotBF16(row []byte, a *activation) float32 {
	w := uint16s(row)
	x := a.f[:len(w)]
	var s0, s1, s2, s3 float32
	for len(w) >= 4 && len(x) >= 4 {
		s0 += float32(bf16ToF32(w[0]) * x[0])
		s1 += float32(bf16ToF32(w[1]) * x[1])
		s2 += float32(bf16ToF32(w[2]) * x[2])
		s3 += float32(bf16ToF32(w[3]) * x[3])
		w, x = w[4:], x[4:]
	}
	for i, h := range w {
		s0 += float32(bf16ToF32(h) * x[i])
	}
	return (s0 + s1) + (s2 + s3)
}
