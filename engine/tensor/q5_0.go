package tensor

import "encoding/binary"

// Q5_0: blocks of 32 elements in 22 bytes (ggml's block_q5_0):
//
//	offset 0  d   fp16      block scale
//	offset 2  qh  uint32    5th bit of each quant: bit j for element j
//	                        (little-endian)
//	offset 6  qs  [16]byte  low 4 bits: element j in the low nibble of
//	                        qs[j], element j+16 in the high nibble
//
// x[i] = d·(q[i] - 16). Rows are dotted with the activation quantized to Q8_0.

const q5_0BlockBytes = 2 + 4 + qk8/2

func init() {
	traitsTable[Q5_0] = &traits{vec: Q8_0, dot: dotQ5_0, dotRows: dotRowsQ5_0, pack: packLanes, dequantize: dequantizeQ5_0, quantize: quantizeQ5_0}
}

func dequantizeQ5_0(dst []float32, src []byte) {
	for b := range len(dst) / qk8 {
		blk := (*[q5_0BlockBytes]byte)(src[b*q5_0BlockBytes:])
		y := (*[qk8]float32)(dst[b*qk8:])
		d := half(blk[0], blk[1])
		qh := binary.LittleEndian.Uint32(blk[2:6])
		for j, v := range blk[6:] {
			h0 := (qh >> j << 4) & 0x10
			h1 := (qh >> (j + 12)) & 0x10
			y[j] = float32(int32(uint32(v&0xf)|h0)-16) * d
			y[j+16] = float32(int32(uint32(v>>4)|h1)-16) * d
		}
	}
}

// quantizeQ5_0 follows quantize_row_q5_0_ref: the element of largest
// magnitude maps to -16, d = max/-16, q = min(31, trunc(x/d + 16.5)).
func quantizeQ5_0(dst []byte, src []float32) {
	for b := range len(src) / qk8 {
		x := (*[qk8]float32)(src[b*qk8:])
		blk := (*[q5_0BlockBytes]byte)(dst[b*q5_0BlockBytes:])
		var amax, vmax float32
		for _, v := range x {
			if av := abs32(v); amax < av {
				amax, vmax = av, v
			}
		}
		d := vmax / -16
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putHalf(blk[0:], d)
		var qh uint32
		for j := range qk8 / 2 {
			q0 := uint8(min(31, truncInt8(float32(x[j]*id)+16.5)))
			q1 := uint8(min(31, truncInt8(float32(x[j+16]*id)+16.5)))
			blk[6+j] = q0&0xf | (q1&0xf)<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(blk[2:6], qh)
	}
}

// dotQ5_0 is ggml_vec_dot_q5_0_q8_0: Σ_blocks d_w·d_x·Σ (w_q-16)·x_q, with
// the sum computed as Σ w_q·x_q - 16·Σ x_q.
func dotQ5_0(row []byte, a *activation) float32 {
	nb := len(row) / q5_0BlockBytes
	xq, xd, xs := int8Bytes(a.q[:nb*qk8]), a.d[:nb], a.sum[:nb]
	var sum float32
	for b, dx := range xd {
		blk := (*[q5_0BlockBytes]byte)(row[b*q5_0BlockBytes:])
		qh := binary.LittleEndian.Uint32(blk[2:6])
		isum := dotNibbles5((*[qk8 / 2]byte)(blk[6:]), qh, (*[qk8]byte)(xq[b*qk8:])) - 16*xs[b]
		scale := float32(half(blk[0], blk[1]) * dx)
		sum += float32(scale * float32(isum))
	}
	return sum
}

// dotNibbles5 is dotNibbles with 5-bit quants: bit j of qh is the 5th bit of
// element j (the Q5_0/Q5_1 packing).
func dotNibbles5(w *[16]byte, qh uint32, x *[32]byte) int32 {
	t := bitLanes
	w0, w1 := le64(w[0:8]), le64(w[8:16])
	lo0 := w0&lanes0f | t[uint8(qh)]<<4
	lo1 := w1&lanes0f | t[uint8(qh>>8)]<<4
	hi0 := w0>>4&lanes0f | t[uint8(qh>>16)]<<4
	hi1 := w1>>4&lanes0f | t[uint8(qh>>24)]<<4
	x0, x1, x2, x3 := le64(x[0:8]), le64(x[8:16]), le64(x[16:24]), le64(x[24:32])
	return dot4u(lo0, x0) + dot4u(lo0>>32, x0>>32) + dot4u(lo1, x1) + dot4u(lo1>>32, x1>>32) +
		dot4u(hi0, x2) + dot4u(hi0>>32, x2>>32) + dot4u(hi1, x3) + dot4u(hi1>>32, x3>>32)
}

// dotRowsQ5_0 is dotQ5_0 for several activations at once, as dotRowsQ4_0
// with lane words of 16-q (in [-15, 16]: 16 products sum within a lane, so
// each half of a block is read on its own: dotLanes16).
func dotRowsQ5_0(out []float32, stride int, row []byte, acts []activation) {
	const chunk = 64             // blocks unpacked at a time: 4.5 KiB
	var blocks [chunk]blockLanes // lanes of 16-q
	nb := len(row) / q5_0BlockBytes
	for b0 := 0; b0 < nb; b0 += chunk {
		wd := blocks[:min(chunk, nb-b0)]
		for i := range wd {
			blk := (*[q5_0BlockBytes]byte)(row[(b0+i)*q5_0BlockBytes:])
			wd[i].d = half(blk[0], blk[1])
			unpackNibbles5(&wd[i].w, (*[qk8 / 2]byte)(blk[6:]), binary.LittleEndian.Uint32(blk[2:6]))
		}
		for t := range acts {
			a := &acts[t]
			xp, xd := a.p[b0:b0+len(wd)], a.d[b0:b0+len(wd)]
			var sum float32
			if b0 > 0 {
				sum = out[t*stride]
			}
			for i := range wd {
				b := &wd[i]
				lo, hi := dotLanes16(&b.w, &xp[i])
				isum := -(lo + hi)
				scale := float32(b.d * xd[i])
				sum += float32(scale * float32(isum))
			}
			out[t*stride] = sum
		}
	}
}
