package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// The matrix–vector kernels of Q4_1 and Q5_1 (x = d·q + m), dotted with
// Q8_1 activations: Q4_0's and Q5_0's block dots without the quants'
// offset (their quants are unsigned: the block's integer sum is the
// pure-Go Σ q·x_q itself), and the min through Q8_1's s, the pure-Go
//
//	sum += float32(float32(d·xd[b])·float32(isum)) + float32(m·s[b])
//
// (emitQ8KernelScaled with mins). With relaxed SIMD the quants (0..15,
// 0..31) stay bytes for i16x8.relaxed_dot, as Q4_0's and Q5_0's do.

// emitMatVecQ4_1 emits ggml_vec_dot_q4_1_q8_1 as dotQ4_1 computes it.
func emitMatVecQ4_1(m *wg.Module, relaxed bool) {
	emitQ8KernelScaled(m, MatVecQ4_1, q4_1BlockBytes, 0, fiveBitLayout(relaxed), func(k kernel, p wg.Local, x [4]wg.Local, t [2]wg.Local) wg.Expr {
		k.Set(t[0], wg.V128Load(get(p), 4))
		if relaxed {
			return nibbleSums16(k, t[0], x)
		}
		return nibbleDot(t[0], x)
	}, f16Scales, true, relaxed)
}

// emitMatVecQ5_1 emits ggml_vec_dot_q5_1_q8_1 as dotQ5_1 computes it.
func emitMatVecQ5_1(m *wg.Module, relaxed bool) {
	emitQ8KernelScaled(m, MatVecQ5_1, q5_1BlockBytes, 0, fiveBitLayout(relaxed), fiveBitDot(relaxed, 4, 8), f16Scales, true, false)
}
