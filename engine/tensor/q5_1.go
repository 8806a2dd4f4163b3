package tensor

import (
	"encoding/binary"
	"math"
)

// Q5_1: blocks of 32 elements in 24 bytes (ggml's block_q5_1):
//
//	offset 0  d   fp16      block scale
//	offset 2  m   fp16      block min
//	offset 4  qh  uint32    5th bit of each quant: bit j for element j
//	                        (little-endian)
//	offset 8  qs  [16]byte  low 4 bits: element j in the low nibble of
//	                        qs[j], element j+16 in the high nibble
//
// x[i] = d·q[i] + m. Rows are dotted with the activation quantized to Q8_1.

const q5_1BlockBytes = 4 + 4 + qk8/2

func init() {
	traitsTable[Q5_1] = &traits{vec: Q8_1, dot: dotQ5_1, dotRows: dotRowsQ5_1, pack: packLanes, dequantize: dequantizeQ5_1, quantize: quantizeQ5_1}
}

func dequantizeQ5_1(dst []float32, src []byte) {
	for b := range len(dst) / qk8 {
		blk := (*[q5_1BlockBytes]byte)(src[b*q5_1BlockBytes:])
		y := (*[qk8]float32)(dst[b*qk8:])
		d, m := half(blk[0], blk[1]), half(blk[2], blk[3])
		qh := binary.LittleEndian.Uint32(blk[4:8])
		for j, v := range blk[8:] {
			h0 := (qh >> j << 4) & 0x10
			h1 := (qh >> (j + 12)) & 0x10
			y[j] = float32(float32(uint32(v&0xf)|h0)*d) + m
			y[j+16] = float32(float32(uint32(v>>4)|h1)*d) + m
		}
	}
}

// quantizeQ5_1 follows quantize_row_q5_1_ref: d = (max-min)/31, m = min,
// q = trunc((x-min)/d + 0.5).
func quantizeQ5_1(dst []byte, src []float32) {
	for b := range len(src) / qk8 {
		x := (*[qk8]float32)(src[b*qk8:])
		blk := (*[q5_1BlockBytes]byte)(dst[b*q5_1BlockBytes:])
		vmin, vmax := float32(math.MaxFloat32), float32(-math.MaxFloat32)
		for _, v := range x {
			vmin, vmax = cmin(vmin, v), cmax(vmax, v)
		}
		d := (vmax - vmin) / 31
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putHalf(blk[0:], d)
		putHalf(blk[2:], vmin)
		var qh uint32
		for j := range qk8 / 2 {
			// C's (uint8_t) conversion; the value never exceeds 31.5.
			q0 := uint8(truncInt8(float32((x[j]-vmin)*id) + 0.5))
			q1 := uint8(truncInt8(float32((x[j+16]-vmin)*id) + 0.5))
			blk[8+j] = q0&0xf | (q1&0xf)<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(blk[4:8], qh)
	}
}

// dotQ5_1 is ggml_vec_dot_q5_1_q8_1: Σ_blocks d_w·d_x·Σ w_q·x_q + m_w·s_x.
func dotQ5_1(row []byte, a *activation) float32 {
	nb := len(row) / q5_1BlockBytes
	xq, xd, xs := int8Bytes(a.q[:nb*qk8]), a.d[:nb], a.s[:nb]
	var sum float32
	for b, dx := range xd {
		blk := (*[q5_1BlockBytes]byte)(row[b*q5_1BlockBytes:])
		qh := binary.LittleEndian.Uint32(blk[4:8])
		isum := dotNibbles5((*[qk8 / 2]byte)(blk[8:]), qh, (*[qk8]byte)(xq[b*qk8:]))
		scale := float32(half(blk[0], blk[1]) * dx)
		sum += float32(scale*float32(isum)) + float32(half(blk[2], blk[3])*xs[b])
	}
	return sum
}

// dotRowsQ5_1 is dotQ5_1 for several activations at once, as dotRowsQ5_0:
// a block's Σ q·x_q is Σ (q-16)·x_q + 16·Σ x_q.
func dotRowsQ5_1(out []float32, stride int, row []byte, acts []activation) {
	const chunk = 64             // blocks unpacked at a time: 4.5 KiB
	var blocks [chunk]blockLanes // lanes of 16-q
	nb := len(row) / q5_1BlockBytes
	for b0 := 0; b0 < nb; b0 += chunk {
		wd := blocks[:min(chunk, nb-b0)]
		for i := range wd {
			blk := (*[q5_1BlockBytes]byte)(row[(b0+i)*q5_1BlockBytes:])
			wd[i].d, wd[i].m = half(blk[0], blk[1]), half(blk[2], blk[3])
			unpackNibbles5(&wd[i].w, (*[qk8 / 2]byte)(blk[8:]), binary.LittleEndian.Uint32(blk[4:8]))
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
				lo, hi := dotLanes16(&b.w, &xp[i])
				isum := 16*xsum[i] - lo - hi
				scale := float32(b.d * xd[i])
				sum += float32(scale*float32(isum)) + float32(b.m*xs[i])
			}
			out[t*stride] = sum
		}
	}
}
