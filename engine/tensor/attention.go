package tensor

// The two products of attention over a KV cache: the scores of a query
// against every cached key, and the score-weighted sum of the cached values.
// The cache keeps the keys (and values) of consecutive positions stride
// float32 apart (an F16 cache is decoded a chunk at a time first, see
// DecodeF16Rows). With the wasmlm_simd build tag they run SIMD kernels that
// give the same bits.

// DotF32Rows sets out[t] = DotF32(rows[t·stride : t·stride+len(x)], x) for
// every t < len(out). rows must hold (len(out)-1)·stride + len(x) elements.
func DotF32Rows(out, x, rows []float32, stride int) {
	if len(out) == 0 {
		return
	}
	rows = rows[:(len(out)-1)*stride+len(x)]
	if dotF32RowsSIMD(out, x, rows, stride) {
		return
	}
	for t := range out {
		out[t] = DotF32(rows[t*stride:t*stride+len(x)], x)
	}
}

// AddScaledRows adds a[t]·rows[t·stride : t·stride+len(out)] to out for
// t = 0, 1, ..., len(a)-1 in that order, each product rounded to float32
// before it is added. rows must hold (len(a)-1)·stride + len(out) elements.
func AddScaledRows(out, a, rows []float32, stride int) {
	if len(a) == 0 {
		return
	}
	rows = rows[:(len(a)-1)*stride+len(out)]
	if addScaledRowsSIMD(out, a, rows, stride) {
		return
	}
	for t, at := range a {
		v := rows[t*stride : t*stride+len(out)]
		for i := range out {
			out[i] += float32(at * v[i])
		}
	}
}
