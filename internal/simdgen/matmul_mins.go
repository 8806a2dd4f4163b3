package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// The batched kernels of the types with a min (x = d·q + m, or for Q5_K
// d·sc·q - dmin·m): Q4_1 and Q5_1, dotted with Q8_1 activations, and Q5_K,
// dotted with Q8_K ones (their matrix–vector kernels: matvec_mins.go and
// q4_k.go).
//
// The quants are decoded without an offset (they are unsigned), so a
// block's integer sum is the pure-Go Σ q·x_q itself; the min comes in
// through the activation's block sums: Q8_1's s = fp16(d_x·Σ x_q), which
// the batch descriptor gives where Q8_K's bsums go (BatchBsums, a float32
// per block of 32); Q5_K's mins come in through Q8_K's bsums, as Q4_K's
// do (minsFinish).
//
// Measured with BenchmarkMatMul (2048×768, n vectors; GOOS=js GOARCH=wasm
// under Node, -benchtime 200x, median of 3, two cores shared with other
// work), GFLOP/s of the pure-Go dotRows (WASMLM_SIMD=off) → these kernels:
//
//	        n=2         n=4         n=8         n=32
//	Q4_1    2.8 → 22    4.3 → 33    5.6 → 38    7.2 → 41
//	Q5_1    1.8 → 21    2.5 → 28    3.1 → 34    3.7 → 38
//	Q5_K    2.3 → 20    2.9 → 31    3.1 → 40    3.1 → 47

const (
	q4_1BlockBytes = 20
	q5_1BlockBytes = 24
	q5KBlockBytes  = 176
)

// q8_1ExtraBytes: the rows' fp16 scales d, then their mins m, as f32x4.
const q8_1ExtraBytes = 32

// q8_1Finish is the float part of Q4_1 and Q5_1, the pure-Go
// sum += float32(float32(d·xd)·float32(isum)) + float32(m·xs), with xs the
// token's s at s.
func q8_1Finish(k kernel, res, isum, ex, d, s wg.Local) {
	scale := wg.F32x4Mul(wg.V128Load(get(ex), 0), wg.V128Load32Splat(get(d), 0))
	a := wg.F32x4Mul(scale, wg.F32x4ConvertI32x4S(get(isum)))
	b := wg.F32x4Mul(wg.V128Load(get(ex), 16), wg.V128Load32Splat(get(s), 0))
	k.Set(res, wg.F32x4Add(get(res), wg.F32x4Add(a, b)))
}

// q8_1Scales stores the fp16 scales d (offset 0) and mins m (offset 2) of
// the rows p as f32x4 at sp + 256 and sp + 272.
func q8_1Scales(k kernel, p [4]wg.Local, sp wg.Local) {
	q8Scales(k, p, sp, 256)
	h := k.Local(wg.V128)
	k.Set(h, gatherHalf(p, 2))
	k.V128Store(get(sp), 272, f16ToF32(h))
}

func emitMatMulQ4_1(m *wg.Module) {
	emitMatMul(m, matmulType{name: MatMulQ4_1, blockBytes: q4_1BlockBytes, chunks: 1, extraBytes: q8_1ExtraBytes,
		decode: func(k kernel, p [4]wg.Local, sp wg.Local) {
			decodeNibbles4(k, p, sp, 4, 0)
			q8_1Scales(k, p, sp)
		},
		finish: q8_1Finish,
	})
}

func emitMatMulQ5_1(m *wg.Module) {
	emitMatMul(m, matmulType{name: MatMulQ5_1, blockBytes: q5_1BlockBytes, chunks: 1, extraBytes: q8_1ExtraBytes,
		decode: func(k kernel, p [4]wg.Local, sp wg.Local) {
			decodeNibbles5(k, p, sp, 4, 8, 0)
			q8_1Scales(k, p, sp)
		},
		finish: q8_1Finish,
	})
}

func emitMatMulQ5K(m *wg.Module) {
	emitMatMul(m, matmulType{name: MatMulQ5_K, blockBytes: q5KBlockBytes, chunks: 8, extraBytes: q4KExtraBytes,
		decode: func(k kernel, p [4]wg.Local, sp wg.Local) { decodeScaleMinK(k, p, sp, true) },
		finish: minsFinish,
	})
}
