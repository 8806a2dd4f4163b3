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
	// ln2Hi + ln2Lo = ln 2; ln2Hi has 21 trailing zero bits, so k*ln2Hi is exact for |k| < 2^21.
	ln2Hi = 6.93147180369123816490e-01
	ln2Lo = 1.90821492927058770002e-10
	log2e = 1.44269504088896338700e+00
)

// The constants of Exp64's reduction, for kernels that compute it the same
// way, operation for operation (engine/tensor's native SwiGLU): x·ExpScale
// gives n, and x − n·ExpLn2Hi − n·ExpLn2Lo the remainder r.
const (
	ExpScale = 32 * log2e
	ExpLn2Hi = ln2Hi / 32
	ExpLn2Lo = ln2Lo / 32
)

// Exp2Table returns Exp64's table: entry j is 2^(j/32).
func Exp2Table() [32]float64 { return exp2Table }

// exp2Table[j] is 2^(j/32), correctly rounded: constants, not computed at
// init, so they are the same on every platform. (Made with Python's decimal
// module at 60 digits: float(Decimal(2).ln() * j / 32).exp()).)
var exp2Table = [32]float64{
	0x1.0000000000000p+0, // 2^(0/32)
	0x1.059b0d3158574p+0, // 2^(1/32)
	0x1.0b5586cf9890fp+0, // 2^(2/32)
	0x1.11301d0125b51p+0, // 2^(3/32)
	0x1.172b83c7d517bp+0, // 2^(4/32)
	0x1.1d4873168b9aap+0, // 2^(5/32)
	0x1.2387a6e756238p+0, // 2^(6/32)
	0x1.29e9df51fdee1p+0, // 2^(7/32)
	0x1.306fe0a31b715p+0, // 2^(8/32)
	0x1.371a7373aa9cbp+0, // 2^(9/32)
	0x1.3dea64c123422p+0, // 2^(10/32)
	0x1.44e086061892dp+0, // 2^(11/32)
	0x1.4bfdad5362a27p+0, // 2^(12/32)
	0x1.5342b569d4f82p+0, // 2^(13/32)
	0x1.5ab07dd485429p+0, // 2^(14/32)
	0x1.6247eb03a5585p+0, // 2^(15/32)
	0x1.6a09e667f3bcdp+0, // 2^(16/32)
	0x1.71f75e8ec5f74p+0, // 2^(17/32)
	0x1.7a11473eb0187p+0, // 2^(18/32)
	0x1.82589994cce13p+0, // 2^(19/32)
	0x1.8ace5422aa0dbp+0, // 2^(20/32)
	0x1.93737b0cdc5e5p+0, // 2^(21/32)
	0x1.9c49182a3f090p+0, // 2^(22/32)
	0x1.a5503b23e255dp+0, // 2^(23/32)
	0x1.ae89f995ad3adp+0, // 2^(24/32)
	0x1.b7f76f2fb5e47p+0, // 2^(25/32)
	0x1.c199bdd85529cp+0, // 2^(26/32)
	0x1.cb720dcef9069p+0, // 2^(27/32)
	0x1.d5818dcfba487p+0, // 2^(28/32)
	0x1.dfc97337b9b5fp+0, // 2^(29/32)
	0x1.ea4afa2a490dap+0, // 2^(30/32)
	0x1.f50765b6e4540p+0, // 2^(31/32)
}

// Exp64 returns e**x with a relative error below 4e-16 (2 ulp).
//
// x = (32m + j)·ln2/32 + r with |r| <= ln2/64, so e**x = 2**m · 2**(j/32) ·
// e**r: a table entry, a degree-6 polynomial (remainder below 4e-18), and a
// power of two made from its bits.
func Exp64(x float64) float64 {
	switch {
	case x != x:
		return x
	case x > 709.782712893384:
		return math.Inf(1)
	case x < -745.1332191019412:
		return 0
	}
	n := math.Floor(float64(x*ExpScale) + 0.5)
	// n·ln2Hi/32 is exact: ln2Hi has 21 trailing zero bits and |n| < 2^16.
	r := (x - float64(n*ExpLn2Hi)) - float64(n*ExpLn2Lo)
	ni := int(n)
	j, m := ni&31, ni>>5 // n = 32m + j with 0 <= j < 32 (arithmetic shift floors)
	// e**r - 1 = r + r²/2 + ... + r⁶/720 (Horner, products rounded
	// explicitly; unrolled, which Go's wasm backend needs to be quick).
	q := float64(1.0/720*r) + 1.0/120
	q = float64(q*r) + 1.0/24
	q = float64(q*r) + 1.0/6
	q = float64(q*r) + 0.5
	q = float64(q*r) + 1
	q = float64(q * r)
	t := exp2Table[j]
	y := t + float64(t*q)
	if m < -1021 || m > 1023 {
		return math.Ldexp(y, m) // subnormal or near-overflow results
	}
	return y * math.Float64frombits(uint64(m+1023)<<52)
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
