package tensor

// F32: one float32 per element, little-endian; a block is one element.

func init() {
	traitsTable[F32] = &traits{
		rowDot:     func(row []byte, x []float32) float32 { return DotF32(Float32s(row), x) },
		dequantize: func(dst []float32, src []byte) { copy(dst, Float32s(src)) },
	}
}

// DotF32 returns Σ a[i]·b[i] over len(a) elements; b must be at least as long.
// It sums in four independent lanes, so the result can differ from a
// left-to-right sum in the last bits. Each product is rounded to float32
// before it is added (the explicit conversion forbids a fused multiply-add),
// so every platform computes the same bits.
func DotF32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float32(a[i] * b[i])
		s1 += float32(a[i+1] * b[i+1])
		s2 += float32(a[i+2] * b[i+2])
		s3 += float32(a[i+3] * b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float32(a[i] * b[i])
	}
	return (s0 + s1) + (s2 + s3)
}
