package tensor

import "math"

// Add sets dst[i] += src[i] (src at least as long as dst): a residual, a
// bias. With the wasmlm_simd kernels a long one is one kernel call.
func Add(dst, src []float32) {
	src = src[:len(dst)]
	if addSIMD(dst, src) {
		return
	}
	for i := range dst {
		dst[i] += src[i]
	}
}

// LayerNorm normalises x in place to zero mean and unit variance, then
// multiplies by weight and adds bias, as ggml_norm, ggml_mul and ggml_add
// compute it: the sums in float64 (in order), the mean and variance
// rounded to float32, the scale 1/√(variance + eps) in float32. With the
// wasmlm_simd kernels it is one kernel call, with the same bits.
func LayerNorm(x, weight, bias []float32, eps float32) {
	if len(x) == 0 {
		return
	}
	weight, bias = weight[:len(x)], bias[:len(x)]
	if layerNormSIMD(x, weight, bias, eps) {
		return
	}
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := float32(sum / float64(len(x)))
	var sum2 float64
	for i, v := range x {
		d := v - mean
		x[i] = d
		sum2 += float64(d * d)
	}
	variance := float32(sum2 / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(variance+eps)))
	for i, v := range x {
		x[i] = float32(float32(v*scale)*weight[i]) + bias[i]
	}
}
