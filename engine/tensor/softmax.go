package tensor

// Softmax replaces x with the softmax of scale·x: each x[i] *= scale in
// float32, then e^(x[i] − m) with m the maximum (the difference in float32,
// e^ fmath.Exp's), each times 1/Σ (the sum in order). With the wasmlm_simd
// kernels it is one kernel call, with the same bits.
func Softmax(x []float32, scale float32) {
	SoftmaxRows(x, len(x), scale)
}

// SoftmaxRows is Softmax of each of the len(x)/width rows of width
// elements in x, one after the other (width ≥ 1), in one kernel call with
// the wasmlm_simd kernels.
func SoftmaxRows(x []float32, width int, scale float32) {
	if width <= 0 || len(x) < width {
		return
	}
	rows := len(x) / width
	if softmaxSIMD(x[:rows*width], width, scale) {
		return
	}
	for r := range rows {
		softmaxGo(x[r*width:(r+1)*width], scale)
	}
}

func softmaxGo(x []float32, scale float32) {
	if scale != 1 {
		for i := range x {
			x[i] *= scale
		}
	}
	maxV := x[0]
	for _, v := range x[1:] {
		if v > maxV {
			maxV = v
		}
	}
	ExpShifted(x, maxV)
	var sum float32
	for _, e := range x {
		sum += e
	}
	inv := 1 / sum
	for i := range x {
		x[i] *= inv
	}
}

// GELUByTable sets x[i] to 0 where x[i] ≤ -10, leaves it where x[i] ≥ 10,
// and sets it to table[h] elsewhere, h the F16 bits of x[i] (rounded to
// nearest, ties to even): ggml's GELU, whose table engine builds. With the
// wasmlm_simd kernels the conversions and lookups run four at a time.
func GELUByTable(x []float32, table *[1 << 16]float32) {
	n := geluSIMD(x, table)
	x = x[n:]
	var half [64]uint16 // x rounded to F16, a run at a time
	for at := 0; at < len(x); at += len(half) {
		g := x[at:min(len(x), at+len(half))]
		h := half[:len(g)]
		EncodeF16(h, g)
		for i, v := range g {
			switch {
			case v <= -10:
				g[i] = 0
			case v >= 10:
			default:
				g[i] = table[h[i]]
			}
		}
	}
}
