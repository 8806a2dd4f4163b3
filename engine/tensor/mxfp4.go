package tensor

import (
	"math"
)

// MXFP4 (OCP microscaling FP4, gpt-oss's expert format): blocks of 32
// elements in 17 bytes (ggml's block_mxfp4):
//
//	offset 0  e   E8M0      block scale 2^(e-127), a bare exponent
//	offset 1  qs  [16]byte  4-bit E2M1 codes: element j in the low nibble
//	                        of qs[j], element j+16 in the high nibble
//
// An E2M1 code is a sign bit over the magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6.
// As ggml does, the kernels read the codes doubled, as the integers of
// kvaluesMXFP4 (−12…12), and the scale halved, 2^(e-128) (e8m0Half), so
// x[i] = kvaluesMXFP4[q[i]]·e8m0Half(e): the same value, with integer
// quants. Rows are dotted with the activation quantized to Q8_0.

const mxfp4BlockBytes = 1 + qk8/2

// kvaluesMXFP4 is ggml's kvalues_mxfp4: the E2M1 values doubled, by code.
var kvaluesMXFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

func init() {
	traitsTable[MXFP4] = &traits{vec: Q8_0, dot: dotMXFP4, dotRows: dotRowsMXFP4, pack: packLanes, dequantize: dequantizeMXFP4, quantize: quantizeMXFP4}
}

// e8m0Half is ggml_e8m0_to_fp32_half: 2^(e-128), half the E8M0 scale, as
// a float32 (subnormal for e < 2; ggml reads e = 255, which E8M0 makes NaN,
// as 2^127 too).
func e8m0Half(e byte) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

func dequantizeMXFP4(dst []float32, src []byte) {
	for b := range len(dst) / qk8 {
		blk := (*[mxfp4BlockBytes]byte)(src[b*mxfp4BlockBytes:])
		y := (*[qk8]float32)(dst[b*qk8:])
		d := e8m0Half(blk[0])
		for j, v := range blk[1:] {
			y[j] = float32(kvaluesMXFP4[v&0xf]) * d
			y[j+16] = float32(kvaluesMXFP4[v>>4]) * d
		}
	}
}

// quantizeMXFP4 follows quantize_row_mxfp4_ref: the exponent of the
// block's largest magnitude, e = floor(log2(max|x|)) - 2 + 127 (0 for a
// block of zeros), and each element the code whose value is nearest (the
// first of equals, in code order).
func quantizeMXFP4(dst []byte, src []float32) {
	for b := range len(src) / qk8 {
		x := (*[qk8]float32)(src[b*qk8:])
		blk := (*[mxfp4BlockBytes]byte)(dst[b*mxfp4BlockBytes:])
		var amax float32
		for _, v := range x {
			if av := abs32(v); amax < av {
				amax = av
			}
		}
		var e byte
		if amax > 0 {
			e = mxfp4Exponent(amax)
		}
		blk[0] = e
		d := e8m0Half(e)
		for j := range qk8 / 2 {
			blk[1+j] = nearestMXFP4(x[j], d) | nearestMXFP4(x[j+16], d)<<4
		}
	}
}

// mxfp4Exponent is ggml's (uint8_t)(floorf(log2f(amax)) - 2 + 127) for a
// positive amax: only the floor of log2f matters, which float64's log2
// rounded to float32 gives as glibc's log2f does for every float32
// (TestMXFP4ExponentIsGlibcs holds it to glibc's thresholds), and x86's
// float-to-byte conversion (to int32, then the low byte), which matters
// only for magnitudes below 2^-125 and for +Inf.
func mxfp4Exponent(amax float32) byte {
	l := float32(math.Log2(float64(amax)))
	f := float32(math.Floor(float64(l))) - 2 + 127
	if !(f > math.MinInt32 && f < math.MaxInt32) {
		return 0 // x86's "integer indefinite", 0x80000000, has low byte 0
	}
	return byte(int32(f))
}

// nearestMXFP4 is ggml's best_index_mxfp4: the code whose value
// kvaluesMXFP4[i]·d is nearest x, the first in code order on a tie (so 0,
// not the code of −0, for zero).
func nearestMXFP4(x, d float32) byte {
	best := byte(0)
	bestErr := abs32(float32(float32(kvaluesMXFP4[0])*d) - x)
	for i := 1; i < 16; i++ {
		if err := abs32(float32(float32(kvaluesMXFP4[i])*d) - x); err < bestErr {
			best, bestErr = byte(i), err
		}
	}
	return best
}

// dotMXFP4 is ggml_vec_dot_mxfp4_q8_0: Σ_blocks (e8m0Half(e)·d_x)·Σ
// kvalues[w_q]·x_q, the scale product and each block's term rounded to
// float32 as in dotQ4_0.
func dotMXFP4(row []byte, a *activation) float32 {
	nb := len(row) / mxfp4BlockBytes
	xq, xd := a.q[:nb*qk8], a.d[:nb]
	var sum float32
	for b, dx := range xd {
		blk := (*[mxfp4BlockBytes]byte)(row[b*mxfp4BlockBytes:])
		x := (*[qk8]int8)(xq[b*qk8:])
		var isum int32
		for j, v := range blk[1:] {
			isum += int32(kvaluesMXFP4[v&0xf])*int32(x[j]) + int32(kvaluesMXFP4[v>>4])*int32(x[j+16])
		}
		scale := float32(e8m0Half(blk[0]) * dx)
		sum += float32(scale * float32(isum))
	}
	return sum
}

// dotRowsMXFP4 is dotMXFP4 for several activations at once: a chunk of the
// row's blocks is unpacked into lane words of the doubled values (in
// [−12, 12], so 16 products sum within a lane: dotLanes16), then each
// activation's dot product runs over them.
func dotRowsMXFP4(out []float32, stride int, row []byte, acts []activation) {
	const chunk = 64             // blocks unpacked at a time: 4.5 KiB
	var blocks [chunk]blockLanes // lanes of the doubled values
	nb := len(row) / mxfp4BlockBytes
	for b0 := 0; b0 < nb; b0 += chunk {
		wd := blocks[:min(chunk, nb-b0)]
		for i := range wd {
			blk := (*[mxfp4BlockBytes]byte)(row[(b0+i)*mxfp4BlockBytes:])
			wd[i].d = e8m0Half(blk[0])
			unpackMXFP4(&wd[i].w, (*[qk8 / 2]byte)(blk[1:]))
		}
		for t := range acts {
			a := &acts[t]
			xp, xd := a.p[b0:b0+len(wd)], a.d[b0:b0+len(wd)]
			var sum float32
			if b0 > 0 {
				sum = out[t*stride]
			}
			for i := range wd {
				lo, hi := dotLanes16(&wd[i].w, &xp[i])
				scale := float32(wd[i].d * xd[i])
				sum += float32(scale * float32(lo+hi))
			}
			out[t*stride] = sum
		}
	}
}

// unpackMXFP4 sets w to the lane words of the doubled values of a block's
// 32 codes, in the order packLanes packs activations: word 2k the values
// of elements 8k, 8k+2, 8k+4, 8k+6 in lanes 0…3 (word 2k+1 the odd ones),
// elements 0…15 from the low nibbles, 16…31 from the high ones.
func unpackMXFP4(w *[qk8 / 4]uint64, q *[qk8 / 2]byte) {
	for k := range 4 {
		src, shift := q[8*(k%2):8*(k%2)+8], 4*(k/2)
		for odd := range 2 {
			var v int64
			for l := range 4 {
				v += int64(kvaluesMXFP4[src[2*l+odd]>>shift&0xf]) << (16 * l)
			}
			w[2*k+odd] = uint64(v)
		}
	}
}
