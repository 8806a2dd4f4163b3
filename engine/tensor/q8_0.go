package tensor

import "math"

// Q8_0: blocks of 32 elements in 34 bytes (ggml's block_q8_0):
//
//	offset 0  d   fp16      block scale
//	offset 2  qs  [32]int8  quants: x[i] = d·qs[i]
//
// Q8_0 rows are dotted with the activation quantized to Q8_0 as well
// (encodeQ8_0): per block an integer Σ w_q·x_q, scaled by d_w·d_x.

const (
	qk8            = 32 // elements per Q8_0, Q8_1, Q4_0, Q4_1, Q5_0, Q5_1 block
	q8_0BlockBytes = 2 + qk8
)

func init() {
	traitsTable[Q8_0] = &traits{vec: Q8_0, dot: dotQ8_0, dotRows: dotRowsQ8_0, pack: packLanes3, dequantize: dequantizeQ8_0, quantize: quantizeQ8_0}
}

func dequantizeQ8_0(dst []float32, src []byte) {
	for b := range len(dst) / qk8 {
		blk := (*[q8_0BlockBytes]byte)(src[b*q8_0BlockBytes:])
		y := (*[qk8]float32)(dst[b*qk8:])
		d := half(blk[0], blk[1])
		for i := range y {
			y[i] = float32(int8(blk[2+i])) * d
		}
	}
}

// quantizeQ8_0 follows quantize_row_q8_0_ref: d = max|x|/127, q = round(x/d)
// (halves away from zero).
func quantizeQ8_0(dst []byte, src []float32) {
	for b := range len(src) / qk8 {
		x := (*[qk8]float32)(src[b*qk8:])
		blk := (*[q8_0BlockBytes]byte)(dst[b*q8_0BlockBytes:])
		var amax float32
		for _, v := range x {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putHalf(blk[0:], d)
		for i, v := range x {
			blk[2+i] = byte(int8(clampInt(roundAway(float32(v*id)), -128, 127)))
		}
	}
}

// encodeQ8_0 quantizes the activation x to Q8_0 the way ggml's CPU backend
// does on x86 (quantize_row_q8_0, AVX path, which produced the golden
// logits): d = max|x|/127 stored as fp16, q = x·(127/max|x|) rounded half to
// even. ggml's scalar reference instead multiplies by 1/d and rounds halves
// away from zero; the two differ only for values within an ulp of a half.
func encodeQ8_0(a *activation, x []float32) {
	nb := len(x) / qk8
	a.q, a.d, a.sum = a.q[:nb*qk8], a.d[:nb], a.sum[:nb]
	for b := range nb {
		d, sum := quantizeBlockQ8(a.q[b*qk8:], x[b*qk8:])
		a.d[b] = roundHalf(d)
		a.sum[b] = sum
	}
}

// quantizeBlockQ8 quantizes 32 activations as the x86 path of ggml's
// quantize_row_q8_0/q8_1 does and returns the unrounded scale and Σq.
func quantizeBlockQ8(dst []int8, src []float32) (d float32, sum int32) {
	x := (*[qk8]float32)(src)
	q := (*[qk8]int8)(dst)
	var amax float32
	for _, v := range x {
		if av := abs32(v); av > amax {
			amax = av
		}
	}
	d = amax / 127
	var id float32
	if amax != 0 {
		id = 127 / amax
	}
	for i, v := range x {
		q[i] = int8(clampInt(roundEven(float32(v*id)), -128, 127))
		sum += int32(q[i])
	}
	return d, sum
}

// dotQ8_0 is ggml_vec_dot_q8_0_q8_0: Σ_blocks d_w·d_x·Σ w_q·x_q.
func dotQ8_0(row []byte, a *activation) float32 {
	nb := len(row) / q8_0BlockBytes
	xq, xd := int8Bytes(a.q[:nb*qk8]), a.d[:nb]
	var sum float32
	for b, dx := range xd {
		blk := (*[q8_0BlockBytes]byte)(row[b*q8_0BlockBytes:])
		w := (*[qk8]byte)(blk[2:])
		x := (*[qk8]byte)(xq[b*qk8:])
		var isum int32
		for i := 0; i < qk8; i += 8 {
			wv, xv := le64(w[i:i+8]), le64(x[i:i+8])
			isum += dot4s(wv, xv) + dot4s(wv>>32, xv>>32)
		}
		scale := float32(half(blk[0], blk[1]) * dx)
		sum += float32(scale * float32(isum))
	}
	return sum
}

// dotRowsQ8_0 is dotQ8_0 for several activations at once: a chunk of the
// row's blocks is unpacked once into words of three 21-bit lanes, and each
// activation's block sum Σ w·x_q takes eleven multiplications (see
// packLanes3).
func dotRowsQ8_0(out []float32, stride int, row []byte, acts []activation) {
	const chunk = 48 // blocks unpacked at a time: 4.5 KiB
	var blocks [chunk]q8_0Lanes
	nb := len(row) / q8_0BlockBytes
	for b0 := 0; b0 < nb; b0 += chunk {
		wd := blocks[:min(chunk, nb-b0)]
		for i := range wd {
			wd[i].unpack((*[q8_0BlockBytes]byte)(row[(b0+i)*q8_0BlockBytes:]))
		}
		for t := range acts {
			a := &acts[t]
			xp, xd := a.p3[b0:b0+len(wd)], a.d[b0:b0+len(wd)]
			var sum float32
			if b0 > 0 {
				sum = out[t*stride]
			}
			for i := range wd {
				b := &wd[i]
				w, x := &b.w, &xp[i]
				isum := topLane3(w[0]*x[0] + w[1]*x[1] + w[2]*x[2] + w[3]*x[3] + w[4]*x[4] + w[5]*x[5] +
					w[6]*x[6] + w[7]*x[7] + w[8]*x[8] + w[9]*x[9] + w[10]*x[10])
				scale := float32(b.d * xd[i])
				sum += float32(scale * float32(isum))
			}
			out[t*stride] = sum
		}
	}
}

// q8_0Lanes is a Q8_0 block unpacked for dotRowsQ8_0.
type q8_0Lanes struct {
	w [11]uint64 // word j: q[3j] + q[3j+1]·2^21 + q[3j+2]·2^42
	d float32
}

func (b *q8_0Lanes) unpack(blk *[q8_0BlockBytes]byte) {
	b.d = half(blk[0], blk[1])
	q := (*[qk8]byte)(blk[2:])
	for j := range 10 {
		b.w[j] = uint64(int64(int8(q[3*j])) + int64(int8(q[3*j+1]))<<21 + int64(int8(q[3*j+2]))<<42)
	}
	b.w[10] = uint64(int64(int8(q[30])) + int64(int8(q[31]))<<21)
}

func abs32(f float32) float32 {
	return math.Float32frombits(math.Float32bits(f) &^ (1 << 31))
}

// roundAway rounds to the nearest integer, halves away from zero (C roundf);
// NaN and out-of-range values give math.MinInt32 (then clamped by callers).
func roundAway(f float32) int32 {
	r := math.Round(float64(f))
	if !(r >= math.MinInt32 && r <= math.MaxInt32) {
		return math.MinInt32
	}
	return int32(r)
}

// roundEven rounds to the nearest integer, halves to even (x86's
// _MM_ROUND_NEAREST); NaN and out-of-range values give math.MinInt32, like
// cvtps2dq's "integer indefinite".
func roundEven(f float32) int32 {
	r := math.RoundToEven(float64(f))
	if !(r >= math.MinInt32 && r <= math.MaxInt32) {
		return math.MinInt32
	}
	return int32(r)
}

func clampInt(v, lo, hi int32) int32 {
	return min(max(v, lo), hi)
}
