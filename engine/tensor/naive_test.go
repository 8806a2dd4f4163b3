package tensor

import (
	"encoding/binary"
	"math"
)

// Naive references, written independently of the kernels: each element is
// decoded on its own from the block layout (as documented in ggml-common.h
// and ggml-quants.c's dequantize_row_*), in float64, where every decoded
// value is exact. A weight is split into a scaled part and an offset part
// (x = scaled + offset; offset is the min term of Q4_1/Q5_1/K-quants) so
// that the error bound of a float32 kernel can be stated in terms of the
// magnitudes it actually sums.

// naiveHalf decodes IEEE binary16 from its definition.
func naiveHalf(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(mant, -24)
	case 0x1f:
		if mant != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1+mant/1024, exp-15)
}

func halfAt(b []byte, off int) float64 {
	return naiveHalf(binary.LittleEndian.Uint16(b[off:]))
}

// naiveElement returns element i of a row of type t as scaled + offset.
func naiveElement(t Type, row []byte, i int) (scaled, offset float64) {
	l := layouts[t]
	blk := row[i/l.blockSize*l.blockBytes:][:l.blockBytes]
	switch t {
	case F32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(blk))), 0
	case F16:
		return halfAt(blk, 0), 0
	case BF16:
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(blk)) << 16)), 0
	}
	step, offset, q, _, _ := naiveGrid(t, row, i)
	return step * float64(q), offset
}

// naiveGrid returns element i of a row of a quantized type t as its grid:
// the element is step·q + offset, and its sub-block can hold any
// q ∈ [qlo, qhi].
func naiveGrid(t Type, row []byte, i int) (step, offset float64, q, qlo, qhi int) {
	l := layouts[t]
	blk := row[i/l.blockSize*l.blockBytes:][:l.blockBytes]
	e := i % l.blockSize
	nib := func(b byte, high bool) int {
		if high {
			return int(b >> 4)
		}
		return int(b & 0xf)
	}
	switch t {
	case Q8_0:
		return halfAt(blk, 0), 0, int(int8(blk[2+e])), -128, 127
	case Q4_0:
		return halfAt(blk, 0), 0, nib(blk[2+e%16], e >= 16) - 8, -8, 7
	case Q4_1:
		return halfAt(blk, 0), halfAt(blk, 2), nib(blk[4+e%16], e >= 16), 0, 15
	case Q5_0:
		hb := int(binary.LittleEndian.Uint32(blk[2:]) >> e & 1)
		return halfAt(blk, 0), 0, nib(blk[6+e%16], e >= 16) + 16*hb - 16, -16, 15
	case Q5_1:
		hb := int(binary.LittleEndian.Uint32(blk[4:]) >> e & 1)
		return halfAt(blk, 0), halfAt(blk, 2), nib(blk[8+e%16], e >= 16) + 16*hb, 0, 31
	case Q2_K:
		h, j, l := e/128, e%128/32, e%32
		q := int(blk[16+32*h+l]>>(2*j)) & 3
		sc := blk[e/16]
		return halfAt(blk, 80) * float64(sc&0xf), -halfAt(blk, 82) * float64(sc>>4), q, 0, 3
	case Q3_K:
		h, j, l := e/128, e%128/32, e%32
		q := int(blk[32+32*h+l]>>(2*j)) & 3
		if blk[l]>>(4*h+j)&1 == 0 {
			q -= 4
		}
		k := e / 16
		lo := int(blk[96+k%8])
		if k >= 8 {
			lo >>= 4
		}
		hi := int(blk[96+8+k%4]) >> (2 * (k / 4)) & 3
		return halfAt(blk, 108) * float64(lo&0xf|hi<<4-32), 0, q, -4, 3
	case Q4_K, Q5_K:
		j, l := e/32, e%32
		sc, m := naiveScaleMin(blk[4:16], j)
		qs, qhi := 16, 15
		if t == Q5_K {
			qs, qhi = 48, 31
		}
		q := nib(blk[qs+32*(j/2)+l], j%2 == 1)
		if t == Q5_K {
			q += 16 * int(blk[16+l]>>j&1)
		}
		return halfAt(blk, 0) * float64(sc), -halfAt(blk, 2) * float64(m), q, 0, qhi
	case Q6_K:
		h, r := e/128, e%128
		t4, l := r/32, r%32
		lo := nib(blk[64*h+l+32*(t4%2)], t4 >= 2)
		hi := int(blk[128+32*h+l]>>(2*t4)) & 3
		return halfAt(blk, 208) * float64(int8(blk[192+e/16])), 0, lo | hi<<4 - 32, -32, 31
	case MXFP4:
		// The E2M1 code doubled, so that it is an integer, and the E8M0
		// scale 2^(e-127) halved.
		return math.Ldexp(1, int(blk[0])-128), 0, naiveE2M1(nib(blk[1+e%16], e >= 16)), -12, 12
	}
	panic("naiveGrid: no reference for " + t.String())
}

// naiveE2M1 decodes a 4-bit E2M1 code from its definition (OCP
// microscaling formats): sign, 2 exponent bits of bias 1, 1 mantissa bit,
// and no infinities or NaN; the result is doubled, an integer.
func naiveE2M1(c int) int {
	exp, mant := c>>1&3, c&1
	v := mant // subnormal: 0.mant·2^0, doubled
	if exp > 0 {
		v = (2 + mant) << (exp - 1) // 1.mant·2^(exp-1), doubled
	}
	if c&8 != 0 {
		v = -v
	}
	return v
}

// naiveScaleMin reads the 6-bit scale and min of sub-block j of Q4_K/Q5_K:
// the 8 scales are s[0..3] bits 0-5 and, for 4..7, s[8..11] bits 0-3 plus
// s[0..3] bits 6-7 on top; the mins likewise from s[4..7] and s[8..11] bits 4-7.
func naiveScaleMin(s []byte, j int) (sc, m int) {
	if j < 4 {
		return int(s[j] & 63), int(s[j+4] & 63)
	}
	sc = int(s[j+4]&0xf) | int(s[j-4]>>6)<<4
	m = int(s[j+4]>>4) | int(s[j]>>6)<<4
	return sc, m
}

// naiveActivation decodes an encoded activation of n elements to float64:
// x_a[i] = d·q[i] for the quantized encodings, the rounded value otherwise.
func naiveActivation(vec Type, a *activation, n int) []float64 {
	xa := make([]float64, n)
	for i := range xa {
		switch vec {
		case F32, F16, BF16:
			xa[i] = float64(a.f[i])
		case Q8_0, Q8_1:
			xa[i] = float64(a.d[i/32]) * float64(a.q[i])
		case Q8_K:
			xa[i] = float64(a.d[i/256]) * float64(a.q[i])
		}
	}
	return xa
}

// naiveDot is the reference dot product of a stored row with an encoded
// activation, in float64 from exact terms. For Q8_1 activations the offset
// part is m·s per block, as ggml computes it (s = fp16(d·Σq) differs from
// d·Σq by the fp16 rounding). It also returns T = Σ|terms|, the magnitude
// the kernel's rounding errors are proportional to.
func naiveDot(t Type, row []byte, a *activation, n int) (want, mag float64) {
	vec := traitsTable[t].vec
	xa := naiveActivation(vec, a, n)
	for i := range n {
		s, o := naiveElement(t, row, i)
		want += s * xa[i]
		mag += math.Abs(s * xa[i])
		if vec != Q8_1 {
			want += o * xa[i]
			mag += math.Abs(o * xa[i])
		} else if i%32 == 0 {
			want += o * float64(a.s[i/32])
			mag += math.Abs(o * float64(a.s[i/32]))
		}
	}
	return want, mag
}

// dotTolerance bounds |kernel - naiveDot| for a row of n elements with term
// magnitude mag. The kernels sum exact integers within a block and round
// only outside: per block at most 3 roundings of its term (the scale product,
// float32(isum), their product), then a float32 sum of at most 2 terms per
// block (scale and min parts). With u = 2⁻²⁴, recursive summation of N terms
// errs by at most (N-1)·u·Σ|terms|, so |error| ≤ (N+3)·u·mag; N = 2·blocks.
// The float kernels (F32/F16/BF16) have exact products (F16/BF16) or one
// rounding each, summed in 4 lanes of n/4: N = n suffices. A tiny absolute
// term covers float32 subnormals.
func dotTolerance(t Type, n int, mag float64) float64 {
	l := layouts[t]
	terms := n
	if l.blockSize > 1 {
		terms = 2 * n / l.blockSize
	}
	abs := float64(n) * 0x1p-149
	if t == MXFP4 {
		// Its E8M0 scale times the activation's can be subnormal, rounded
		// to within 2^-150 whatever its size, and a block's integer sum
		// reaches 12·128·32.
		abs += float64(n/qk8) * 12 * 128 * 32 * 0x1p-150
	}
	return float64(terms+4)*0x1p-24*mag + abs
}
