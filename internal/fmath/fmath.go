// Package fmath is the floating-point maths wasmlm computes with where the
// result must be the same bits on every platform.
//
// Go's math.Exp and math.Log run assembly on amd64 and arm64 but pure Go on
// wasm, and may differ in the last bit; a sampler or a softmax built on them
// could pick different tokens natively and in the browser. These functions
// are plain Go with every product rounded before it is added (an explicit
// float64(...) conversion forbids fused multiply-add), so amd64, arm64 and
// wasm compute identical results.
package fmath

import "math"

const (
	// ln2Hi + ln2Lo = ln 2; ln2Hi has trailing zero bits so k*ln2Hi is exact for |k| < 2^11.
	ln2Hi = 6.93147180369123816490e-01
	ln2Lo = 1.90821492927058770002e-10
	log2e = 1.44269504088896338700e+00
)

// Exp64 returns e**x with a relative error below 4e-16 (2 ulp).
func Exp64(x float64) float64 {
	switch {
	case x != x:
		return x
	case x > 709.782712893384:
		return math.Inf(1)
	case x < -745.1332191019412:
		return 0
	}
	// x = k·ln2 + r with |r| <= ln2/2, so e**x = 2**k · e**r.
	k := math.Floor(float64(x*log2e) + 0.5)
	r := (x - float64(k*ln2Hi)) - float64(k*ln2Lo)
	// Taylor series of e**r to degree 13: the remainder is below 1e-17 for |r| <= 0.35.
	p := 1.0 / 6227020800 // 1/13!
	for _, c := range [...]float64{
		1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320,
		1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1, 1,
	} {
		p = float64(p*r) + c
	}
	return math.Ldexp(p, int(k))
}

// Exp returns e**x for float32, rounded from Exp64.
func Exp(x float32) float32 {
	return float32(Exp64(float64(x)))
}

// Log64 returns the natural logarithm of x with a relative error below 8e-16 (4 ulp)
// (NaN for x < 0, -Inf for 0).
func Log64(x float64) float64 {
	switch {
	case x != x || x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	case math.IsInf(x, 1):
		return x
	}
	m, e := math.Frexp(x) // x = m·2**e, m in [0.5, 1)
	if m < math.Sqrt2/2 {
		m *= 2
		e--
	}
	// log m = 2·atanh(s) with s = (m-1)/(m+1), |s| <= 0.1716.
	s := (m - 1) / (m + 1)
	s2 := float64(s * s)
	sum := 1.0 / 23
	for d := 21.0; d >= 1; d -= 2 {
		sum = float64(sum*s2) + 1/d
	}
	logm := float64(2 * float64(s*sum))
	fe := float64(e)
	return float64(fe*ln2Hi) + (float64(fe*ln2Lo) + logm)
}
