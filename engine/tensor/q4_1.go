package tensor

import "math"

// Q4_1: blocks of 32 elements in 20 bytes (ggml's block_q4_1):
//
//	offset 0  d   fp16      block scale
//	offset 2  m   fp16      block min
//	offset 4  qs  [16]byte  4-bit quants, element j in the low nibble of
//	                        qs[j], element j+16 in the high nibble
//
// x[i] = d·q[i] + m. Rows are dotted with the activation quantized to Q8_1,
// whose s = d_x·Σ x_q makes the min term one product per block.

const q4_1BlockBytes = 4 + qk8/2

func init() {
	traitsTable[Q4_1] = &traits{vec: Q8_1, dot: dotQ4_1, dotRows: dotRowsQ4_1, pack: packLanes, dequantize: dequantizeQ4_1, quantize: quantizeQ4_1}
}

func dequantizeQ4_1(dst []float32, src []byte) {
	for b := range len(dst) / qk8 {
		blk := (*[q4_1BlockBytes]byte)(src[b*q4_1BlockBytes:])
		y := (*[qk8]float32)(dst[b*qk8:])
		d, m := half(blk[0], blk[1]), half(blk[2], blk[3])
		for j, v := range blk[4:] {
			y[j] = float32(float32(v&0xf)*d) + m
			y[j+16] = float32(float32(v>>4)*d) + m
		}
	}
}

// quantizeQ4_1 follows quantize_row_q4_1_ref: d = (max-min)/15, m = min,
// q = min(15, trunc((x-min)/d + 0.5)).
func quantizeQ4_1(dst []byte, src []float32) {
	for b := range len(src) / qk8 {
		x := (*[qk8]float32)(src[b*qk8:])
		blk := (*[q4_1BlockBytes]byte)(dst[b*q4_1BlockBytes:])
		vmin, vmax := float32(math.MaxFloat32), float32(-math.MaxFloat32)
		for _, v := range x {
			vmin, vmax = cmin(vmin, v), cmax(vmax, v)
		}
		d := (vmax - vmin) / 15
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putHalf(blk[0:], d)
		putHalf(blk[2:], vmin)
		for j := range qk8 / 2 {
			q0 := min(15, truncInt8(float32((x[j]-vmin)*id)+0.5))
			q1 := min(15, truncInt8(float32((x[j+16]-vmin)*id)+0.5))
			blk[4+j] = byte(q0) | byte(q1)<<4
		}
	}
}

// dotQ4_1 is ggml_vec_dot_q4_1_q8_1: Σ_blocks d_w·d_x·Σ w_q·x_q + m_w·s_x.
func dotQ4_1(row []byte, a *activation) float32 {
	nb := len(row) / q4_1BlockBytes
	xq, xd, xs := int8Bytes(a.q[:nb*qk8]), a.d[:nb], a.s[:nb]
	var sum float32
	for b, dx := range xd {
		blk := (*[q4_1BlockBytes]byte)(row[b*q4_1BlockBytes:])
		isum := dotNibbles((*[qk8 / 2]byte)(blk[4:]), (*[qk8]byte)(xq[b*qk8:]))
		scale := float32(half(blk[0], blk[1]) * dx)
		sum += float32(scale*float32(isum)) + float32(half(blk[2], blk[3])*xs[b])
	}
	return sum
}

// dotRowsQ4_1 is dotQ4_1 for several activations at once, as dotRowsQ4_0:
// a block's Σ q·x_q is Σ (q-8)·x_q + 8·Σ x_q.
func dotRowsQ4_1(out []float32, stride int, row []byte, acts []activation) {
	const chunk = 64             // blocks unpacked at a time: 4.5 KiB
	var blocks [chunk]blockLanes // lanes of 8-q
	nb := len(row) / q4_1BlockBytes
	for b0 := 0; b0 < nb; b0 += chunk {
		wd := blocks[:min(chunk, nb-b0)]
		for i := range wd {
			blk := (*[q4_1BlockBytes]byte)(row[(b0+i)*q4_1BlockBytes:])
			wd[i].d, wd[i].m = half(blk[0], blk[1]), half(blk[2], blk[3])
			unpackNibbles(&wd[i].w, (*[qk8 / 2]byte)(blk[4:]))
		}
		for t := range acts {
			a := &acts[t]
			n := len(wd)
			xp, xd, xs, xsum := a.p[b0:b0+n], a.d[b0:b0+n], a.s[b0:b0+n], a.sum[b0:b0+n]
			var sum float32
			if b0 > 0 {
				sum = out[t*stride]
			}
			for i := range wd {
				b := &wd[i]
				isum := 8*xsum[i] - topLane(dotLanes(&b.w, &xp[i]))
				scale := float32(b.d * xd[i])
				sum += float32(scale*float32(isum)) + float32(b.m*xs[i])
			}
			out[t*stride] = sum
		}
	}
}
