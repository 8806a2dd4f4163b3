package tensor

// Q8_1 is an activation-only encoding here (ggml's block_q8_1: fp16 d, fp16
// s = d·Σq, [32]int8 qs): Q4_1 and Q5_1 rows are dotted with it, and s turns a
// block's min into one multiplication. Weights are never stored as Q8_1.

// q8_1BlockBytes is the size of ggml's block_q8_1 (documentation; the
// workspace keeps the fields in separate arrays).
const q8_1BlockBytes = 2 + 2 + qk8

// encodeQ8_1 quantizes the activation x to Q8_1 as ggml's x86 path does
// (quantize_row_q8_1, AVX): the quants and d as in encodeQ8_0, and
// s = fp16(d·Σq) computed from the unrounded d.
func encodeQ8_1(a *activation, x []float32) {
	nb := len(x) / qk8
	a.q, a.d, a.s, a.sum = a.q[:nb*qk8], a.d[:nb], a.s[:nb], a.sum[:nb]
	for b := range nb {
		d, sum := quantizeBlockQ8(a.q[b*qk8:], x[b*qk8:])
		a.d[b] = roundHalf(d)
		a.s[b] = roundHalf(float32(d * float32(sum)))
		a.sum[b] = sum
	}
}
