package tensor

// F32: one float32 per element, little-endian; a block is one element. The
// activation is used as it is.

func init() {
	traitsTable[F32] = &traits{
		vec:        F32,
		dot:        func(row []byte, a *activation) float32 { return DotF32(Float32s(row), a.f) },
		dequantize: func(dst []float32, src []byte) { copy(dst, Float32s(src)) },
		quantize: func(dst []byte, src []float32) {
			for i, v := range src {
				putF32(dst[4*i:], v)
			}
		},
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
	for len(a) >= 4 && len(b) >= 4 {
		s0 += float32(a[0] * b[0])
		s1 += float32(a[1] * b[1])
		s2 += float32(a[2] * b[2])
		s3 += float32(a[3] * b[3])
		a, b = a[4:], b[4:]
	}
	for i, v := range a {
		s0 += float32(v * b[i])
	}
	return (s0 + s1) + (s2 + s3)
}
