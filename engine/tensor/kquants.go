package tensor

import "math"

// Helpers shared by the K-quant formats (super-blocks of 256 elements):
// ports of the scale searches in ggml's ggml-quants.c that the reference
// quantizers (quantize_row_q*_K_ref) use, and the packing of 6-bit scales
// and mins used by Q4_K and Q5_K.
//
// To reproduce ggml's bytes, every float operation is done in float32 in the
// order the C code evaluates it, each product rounded on its own (ggml-base,
// where these live, is built without FMA contraction).

// groupMaxEps is ggml's GROUP_MAX_EPS: a group whose largest magnitude is
// below it is all zeros.
const groupMaxEps = float32(1e-15)

// nearestInt rounds to the nearest integer, ties to even, as ggml's
// nearest_int (which adds 1.5·2²³ and reads the mantissa). ggml asserts
// |f| ≤ 4194303; beyond that this saturates, and NaN gives 0.
func nearestInt(f float32) int32 {
	switch {
	case f != f:
		return 0
	case f > 4194303:
		return 4194303
	case f < -4194303:
		return -4194303
	}
	v := f + 12582912
	return int32(math.Float32bits(v)&0x7fffff) - 0x400000
}

// sqrt32 is sqrtf: float32(√float64(x)) is the correctly rounded float32 root.
func sqrt32(x float32) float32 {
	return float32(math.Sqrt(float64(x)))
}

// makeQXQuants is make_qx_quants with rmse_type 1 and no importance weights
// (weights x²): symmetric quants L[i] ∈ [0, 2·nmax) for x[i] ≈ scale·(L[i]-nmax),
// trying 18 scales around nmax/max|x| and keeping the best weighted fit.
func makeQXQuants(nmax int32, x []float32, L []int8) float32 {
	var vmax, amax float32
	for _, v := range x {
		if ax := abs32(v); ax > amax {
			amax, vmax = ax, v
		}
	}
	if amax < groupMaxEps {
		clear(L[:len(x)])
		return 0
	}
	fnmax := float32(nmax)
	iscale := -fnmax / vmax
	var sumlx, suml2 float32
	for i, v := range x {
		l := clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1)
		L[i] = int8(l + nmax)
		w, fl := float32(v*v), float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := float32(scale * sumlx)
	for is := int32(-9); is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + float32(0.1*float32(is))) / vmax
		sumlx, suml2 = 0, 0
		for _, v := range x {
			l := clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1)
			w, fl := float32(v*v), float32(l)
			sumlx += float32(float32(w*v) * fl)
			suml2 += float32(float32(w*fl) * fl)
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i, v := range x {
				l := nearestInt(float32(iscale * v))
				L[i] = int8(nmax + clampInt(l, -nmax, nmax-1))
			}
			scale = sumlx / suml2
			best = float32(scale * sumlx)
		}
	}
	return scale
}

// makeQ3Quants is make_q3_quants with do_rmse: symmetric quants
// L[i] ∈ [0, 2·nmax), refined by up to five passes of coordinate descent on
// the x²-weighted error.
func makeQ3Quants(nmax int32, x []float32, L []int8) float32 {
	var vmax, amax float32
	for _, v := range x {
		if ax := abs32(v); ax > amax {
			amax, vmax = ax, v
		}
	}
	if amax < groupMaxEps {
		clear(L[:len(x)])
		return 0
	}
	iscale := -float32(nmax) / vmax
	var sumlx, suml2 float32
	for i, v := range x {
		l := clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1)
		L[i] = int8(l)
		w, fl := float32(v*v), float32(l)
		sumlx += float32(float32(w*v) * fl)
		suml2 += float32(float32(w*fl) * fl)
	}
	for range 5 {
		changed := false
		for i, v := range x {
			w := float32(v * v)
			li := float32(L[i])
			slx := sumlx - float32(float32(w*v)*li)
			if slx > 0 {
				sl2 := suml2 - float32(float32(w*li)*li)
				newL := clampInt(nearestInt(float32(v*sl2)/slx), -nmax, nmax-1)
				if newL != int32(L[i]) {
					fl := float32(newL)
					slx += float32(float32(w*v) * fl)
					sl2 += float32(float32(w*fl) * fl)
					if sl2 > 0 && float32(float32(slx*slx)*suml2) > float32(float32(sumlx*sumlx)*sl2) {
						L[i], sumlx, suml2 = int8(newL), slx, sl2
						changed = true
					}
				}
			}
		}
		if !changed {
			break
		}
	}
	for i := range x {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// makeQKX2Quants is make_qkx2_quants: asymmetric quants L[i] ∈ [0, nmax]
// for x[i] ≈ scale·L[i] - negMin, fitting scale and min by weighted least
// squares for nstep+1 trial scales and keeping the smallest weighted error
// (absolute with useMad, squared otherwise). Laux is scratch of len(x).
func makeQKX2Quants(nmax int32, x, weights []float32, L, Laux []uint8, rmin, rdelta float32, nstep int32, useMad bool) (scale, negMin float32) {
	n := len(x)
	weights, L, Laux = weights[:n], L[:n], Laux[:n]
	vmin, vmax := x[0], x[0]
	sumW := weights[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		vmin = cmin(vmin, x[i])
		vmax = cmax(vmax, x[i])
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if vmin > 0 {
		vmin = 0
	}
	if vmax == vmin {
		clear(L)
		return 0, -vmin
	}
	fnmax := float32(nmax)
	errorOf := func(d float32) float32 {
		if useMad {
			return abs32(d)
		}
		return float32(d * d)
	}
	iscale := fnmax / (vmax - vmin)
	scale = 1 / iscale
	var bestError float32
	for i, v := range x {
		L[i] = uint8(clampInt(nearestInt(float32(iscale*(v-vmin))), 0, nmax))
		diff := float32(float32(scale*float32(L[i]))+vmin) - v
		bestError += float32(weights[i] * errorOf(diff))
	}
	if nstep < 1 {
		return scale, -vmin
	}
	for is := range nstep + 1 {
		iscale = (float32(rmin+float32(rdelta*float32(is))) + fnmax) / (vmax - vmin)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := clampInt(nearestInt(float32(iscale*(v-vmin))), 0, nmax)
			Laux[i] = uint8(l)
			w, fl := weights[i], float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curError float32
			for i, v := range x {
				diff := float32(float32(thisScale*float32(Laux[i]))+thisMin) - v
				curError += float32(weights[i] * errorOf(diff))
			}
			if curError < bestError {
				copy(L, Laux)
				bestError, scale, vmin = curError, thisScale, thisMin
			}
		}
	}
	return scale, -vmin
}

// cmin and cmax are C's `if (v < m) m = v` and `if (v > m) m = v`: unlike
// Go's min and max they ignore a NaN v rather than return it.
func cmin(m, v float32) float32 {
	if v < m {
		return v
	}
	return m
}

func cmax(m, v float32) float32 {
	if v > m {
		return v
	}
	return m
}

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j (0..7) from the
// 12 packed bytes of a Q4_K/Q5_K super-block (get_scale_min_k4): bytes 0..3
// hold scales 0..3 and bytes 4..7 mins 0..3 in their low 6 bits; bytes 8..11
// hold the low nibbles of scale and min 4..7, whose top 2 bits sit in the
// high 2 bits of bytes 0..3 (scales) and 4..7 (mins).
func scaleMinK4(j int, s *[12]byte) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0xf | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// putScaleMinK4 packs 6-bit scales and mins the way scaleMinK4 reads them.
func putScaleMinK4(s *[12]byte, sc, m *[8]uint8) {
	*s = [12]byte{}
	for j := range 8 {
		ls, lm := sc[j], m[j]
		if j < 4 {
			s[j] = ls
			s[j+4] = lm
		} else {
			s[j+4] = ls&0xf | (lm&0xf)<<4
			s[j-4] |= (ls >> 4) << 6
			s[j] |= (lm >> 4) << 6
		}
	}
}
