package tensor

// Q4_0: blocks of 32 elements in 18 bytes (ggml's block_q4_0):
//
//	offset 0  d   fp16      block scale
//	offset 2  qs  [16]byte  4-bit quants: element j in the low nibble of
//	                        qs[j], element j+16 in the high nibble
//
// x[i] = d·(q[i] - 8). Rows are dotted with the activation quantized to Q8_0.

const q4_0BlockBytes = 2 + qk8/2

func init() {
	traitsTable[Q4_0] = &traits{vec: Q8_0, dot: dotQ4_0, dotRows: dotRowsQ4_0, pack: packLanes, dequantize: dequantizeQ4_0, quantize: quantizeQ4_0}
}

func dequantizeQ4_0(dst []float32, src []byte) {
	for b := range len(dst) / qk8 {
		blk := (*[q4_0BlockBytes]byte)(src[b*q4_0BlockBytes:])
		y := (*[qk8]float32)(dst[b*qk8:])
		d := half(blk[0], blk[1])
		for j, v := range blk[2:] {
			y[j] = float32(int32(v&0xf)-8) * d
			y[j+16] = float32(int32(v>>4)-8) * d
		}
	}
}

// quantizeQ4_0 follows quantize_row_q4_0_ref: the element of largest
// magnitude maps to -8, d = max/-8, q = min(15, trunc(x/d + 8.5)).
func quantizeQ4_0(dst []byte, src []float32) {
	for b := range len(src) / qk8 {
		x := (*[qk8]float32)(src[b*qk8:])
		blk := (*[q4_0BlockBytes]byte)(dst[b*q4_0BlockBytes:])
		var amax, vmax float32
		for _, v := range x {
			if av := abs32(v); amax < av {
				amax, vmax = av, v
			}
		}
		d := vmax / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putHalf(blk[0:], d)
		for j := range qk8 / 2 {
			q0 := min(15, truncInt8(float32(x[j]*id)+8.5))
			q1 := min(15, truncInt8(float32(x[j+16]*id)+8.5))
			blk[2+j] = byte(q0) | byte(q1)<<4
		}
	}
}

// dotQ4_0 is ggml_vec_dot_q4_0_q8_0: Σ_blocks d_w·d_x·Σ (w_q-8)·x_q, with
// Σ (w_q-8)·x_q computed as Σ w_q·x_q - 8·Σ x_q.
func dotQ4_0(row []byte, a *activation) float32 {
	nb := len(row) / q4_0BlockBytes
	xq, xd, xs := int8Bytes(a.q[:nb*qk8]), a.d[:nb], a.sum[:nb]
	var sum float32
	for b, dx := range xd {
		blk := (*[q4_0BlockBytes]byte)(row[b*q4_0BlockBytes:])
		isum := dotNibbles((*[qk8 / 2]byte)(blk[2:]), (*[qk8]byte)(xq[b*qk8:])) - 8*xs[b]
		scale := float32(half(blk[0], blk[1]) * dx)
		sum += float32(scale * float32(isum))
	}
	return sum
}

// dotRowsQ4_0 is dotQ4_0 for several activations at once: a chunk of the
// row's blocks is unpacked into lane words of 8-q (in [-7, 8], so a
// block's 32 products sum within a lane), then each activation's dot
// product runs over them, a block's Σ (q-8)·x_q in eight multiplications.
func dotRowsQ4_0(out []float32, stride int, row []byte, acts []activation) {
	const chunk = 64             // blocks unpacked at a time: 4.5 KiB
	var blocks [chunk]blockLanes // lanes of 8-q
	nb := len(row) / q4_0BlockBytes
	for b0 := 0; b0 < nb; b0 += chunk {
		wd := blocks[:min(chunk, nb-b0)]
		for i := range wd {
			blk := (*[q4_0BlockBytes]byte)(row[(b0+i)*q4_0BlockBytes:])
			wd[i].d = half(blk[0], blk[1])
			unpackNibbles(&wd[i].w, (*[qk8 / 2]byte)(blk[2:]))
		}
		for t := range acts {
			a := &acts[t]
			xp, xd := a.p[b0:b0+len(wd)], a.d[b0:b0+len(wd)]
			var sum float32
			if b0 > 0 {
				sum = out[t*stride]
			}
			for i := range wd {
				// dotLanes written out: Go schedules this loop 10% faster so.
				w, x := &wd[i].w, &xp[i]
				isum := -topLane(w[0]*x[0] + w[1]*x[1] + w[2]*x[2] + w[3]*x[3] + w[4]*x[4] + w[5]*x[5] + w[6]*x[6] + w[7]*x[7])
				scale := float32(wd[i].d * xd[i])
				sum += float32(scale * float32(isum))
			}
			out[t*stride] = sum
		}
	}
}

// unpackNibbles sets w to the lane words of 8-q for the 32 4-bit quants q
// of a Q4_0/Q4_1 block (element j in the low nibble of q[j], element j+16
// in the high nibble), in the order packLanes packs activations.
func unpackNibbles(w *[qk8 / 4]uint64, q *[qk8 / 2]byte) {
	w[0], w[1], w[4], w[5] = nibbleLanes(le64(q[0:8]))
	w[2], w[3], w[6], w[7] = nibbleLanes(le64(q[8:16]))
}

// unpackNibbles5 sets w to the lane words of 16-q for the 32 5-bit quants
// of a Q5_0/Q5_1 block: their low 4 bits in q as unpackNibbles reads them,
// the 5th bit of element j in bit j of qh.
func unpackNibbles5(w *[qk8 / 4]uint64, q *[qk8 / 2]byte, qh uint32) {
	for g := range 4 { // elements 8g..8g+7
		v := le64(q[8*(g%2):])>>(4*(g/2))&lanes0f | bitLanes[uint8(qh>>(8*g))]<<4
		w[2*g], w[2*g+1] = lanes16-v&lanesFF, lanes16-v>>8&lanesFF
	}
}

// dotNibbles returns Σ_j (w[j]&15)·x[j] + (w[j]>>4)·x[j+16] over a block of
// 32 4-bit quants (the Q4_0/Q4_1 packing) and its 32 int8 activations.
func dotNibbles(w *[16]byte, x *[32]byte) int32 {
	w0, w1 := le64(w[0:8]), le64(w[8:16])
	lo0, lo1 := w0&lanes0f, w1&lanes0f
	hi0, hi1 := w0>>4&lanes0f, w1>>4&lanes0f
	x0, x1, x2, x3 := le64(x[0:8]), le64(x[8:16]), le64(x[16:24]), le64(x[24:32])
	return dot4u(lo0, x0) + dot4u(lo0>>32, x0>>32) + dot4u(lo1, x1) + dot4u(lo1>>32, x1>>32) +
		dot4u(hi0, x2) + dot4u(hi0>>32, x2>>32) + dot4u(hi1, x3) + dot4u(hi1>>32, x3>>32)
}

// truncInt8 is C's (int8_t) conversion of a float in [-128, 128): toward
// zero. Values outside (only from NaN or Inf input) give -128.
func truncInt8(f float32) int32 {
	if !(f > -129 && f < 128) {
		return -128
	}
	return int32(f)
}
