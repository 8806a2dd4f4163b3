package tensor

// Q8_K is an activation-only encoding here (ggml's block_q8_K): per 256
// elements a float32 scale d, [256]int8 quants and [16]int16 sums of 16
// quants each. K-quant rows are dotted with it; the block sums turn each
// sub-block's min into one multiplication.

const (
	qkK = 256 // elements per K-quant super-block
	// q8KBlockBytes is the size of ggml's block_q8_K (documentation; the
	// workspace keeps the fields in separate arrays).
	q8KBlockBytes = 4 + qkK + 2*qkK/16
)

// encodeQ8K quantizes the activation x to Q8_K with ggml's
// quantize_row_q8_K_ref, which is also what its x86 backend runs: the
// element of largest magnitude maps to -127, q = nearest_int(-127/max·x)
// capped at 127, d = 1/(-127/max).
func encodeQ8K(a *activation, x []float32) {
	nb := len(x) / qkK
	a.q, a.d, a.bsums = a.q[:nb*qkK], a.d[:nb], a.bsums[:nb*qkK/16]
	for b := range nb {
		xb := (*[qkK]float32)(x[b*qkK:])
		q := (*[qkK]int8)(a.q[b*qkK:])
		bs := (*[qkK / 16]int16)(a.bsums[b*qkK/16:])
		var vmax, amax float32
		for _, v := range xb {
			if av := abs32(v); av > amax {
				amax, vmax = av, v
			}
		}
		if amax == 0 {
			a.d[b] = 0
			*q = [qkK]int8{}
			*bs = [qkK / 16]int16{}
			continue
		}
		iscale := -127 / vmax
		for i, v := range xb {
			q[i] = int8(clampInt(nearestInt(float32(iscale*v)), -128, 127))
		}
		for j := range bs {
			var s int16
			for _, v := range q[16*j : 16*j+16] {
				s += int16(v)
			}
			bs[j] = s
		}
		a.d[b] = 1 / iscale
	}
}
