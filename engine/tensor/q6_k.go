package tensor

// Q6_K: super-blocks of 256 elements in 210 bytes (ggml's block_q6_K),
// sixteen sub-blocks of 16:
//
//	offset   0  ql      [128]byte  low 4 bits of the quants
//	offset 128  qh      [64]byte   high 2 bits of the quants
//	offset 192  scales  [16]int8   scale per sub-block
//	offset 208  d       fp16       super-block scale
//
// Each half h (elements 128h..128h+127) uses ql[64h:64h+64] and
// qh[32h:32h+32]; for l < 32, elements 128h+l, +32, +64, +96 take the low
// nibble of ql[l], the low nibble of ql[l+32], the high nibble of ql[l], the
// high nibble of ql[l+32], and bits 0-1, 2-3, 4-5, 6-7 of qh[l] on top.
// x = d·scales[i/16]·(q - 32). Rows are dotted with the activation
// quantized to Q8_K.

const q6KBlockBytes = qkK/2 + qkK/4 + qkK/16 + 2

func init() {
	traitsTable[Q6_K] = &traits{vec: Q8_K, dot: dotQ6K, dotRows: dotRowsQ6K, pack: packLanesK, dequantize: dequantizeQ6K, quantize: quantizeQ6K}
}

func dequantizeQ6K(dst []float32, src []byte) {
	for b := range len(dst) / qkK {
		blk := (*[q6KBlockBytes]byte)(src[b*q6KBlockBytes:])
		y := (*[qkK]float32)(dst[b*qkK:])
		d := half(blk[208], blk[209])
		for h := range 2 {
			ql := (*[64]byte)(blk[64*h:])
			qh := (*[32]byte)(blk[128+32*h:])
			sc := (*[8]byte)(blk[192+8*h:])
			yh := (*[128]float32)(y[128*h:])
			for l := range 32 {
				g := l / 16
				q1 := int32(ql[l]&0xf|(qh[l]&3)<<4) - 32
				q2 := int32(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				q3 := int32(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int32(ql[l+32]>>4|(qh[l]>>6)<<4) - 32
				yh[l] = float32(d*float32(int8(sc[g]))) * float32(q1)
				yh[l+32] = float32(d*float32(int8(sc[g+2]))) * float32(q2)
				yh[l+64] = float32(d*float32(int8(sc[g+4]))) * float32(q3)
				yh[l+96] = float32(d*float32(int8(sc[g+6]))) * float32(q4)
			}
		}
	}
}

// quantizeQ6K follows quantize_row_q6_K_ref: per sub-block a symmetric
// scale (makeQXQuants, nmax 32), the scales quantized to int8 against the
// largest, then the quants recomputed with the quantized scales.
func quantizeQ6K(dst []byte, src []float32) {
	var (
		L      [qkK]int8
		scales [qkK / 16]float32
	)
	for b := range len(src) / qkK {
		x := (*[qkK]float32)(src[b*qkK:])
		blk := (*[q6KBlockBytes]byte)(dst[b*q6KBlockBytes:])
		var maxScale, maxAbsScale float32
		for j := range scales {
			scales[j] = makeQXQuants(32, x[16*j:16*j+16], L[16*j:])
			if as := abs32(scales[j]); as > maxAbsScale {
				maxAbsScale, maxScale = as, scales[j]
			}
		}
		if maxAbsScale < groupMaxEps {
			*blk = [q6KBlockBytes]byte{}
			continue
		}
		iscale := -128 / maxScale
		putHalf(blk[208:], 1/iscale)
		for j, s := range scales {
			blk[192+j] = byte(int8(min(127, nearestInt(float32(iscale*s)))))
		}
		d := half(blk[208], blk[209])
		for j := range scales {
			dj := float32(d * float32(int8(blk[192+j])))
			if dj == 0 {
				continue
			}
			for i := 16 * j; i < 16*j+16; i++ {
				L[i] = int8(clampInt(nearestInt(x[i]/dj), -32, 31) + 32)
			}
		}
		for h := range 2 {
			ql := (*[64]byte)(blk[64*h:])
			qh := (*[32]byte)(blk[128+32*h:])
			lh := (*[128]int8)(L[128*h:])
			for l := range 32 {
				q1, q2, q3, q4 := byte(lh[l]), byte(lh[l+32]), byte(lh[l+64]), byte(lh[l+96])
				ql[l] = q1&0xf | (q3&0xf)<<4
				ql[l+32] = q2&0xf | (q4&0xf)<<4
				qh[l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
			}
		}
	}
}

// dotQ6K is ggml_vec_dot_q6_K_q8_K: per super-block
// d·d_x·Σ_k sc_k·Σ (q-32)·x_q over the 16 sub-blocks k, the inner sum taken
// as Σ q·x_q - 32·Σ x_q with Σ x_q from the Q8_K block sums.
func dotQ6K(row []byte, a *activation) float32 {
	nb := len(row) / q6KBlockBytes
	xq, xd, xbs := int8Bytes(a.q[:nb*qkK]), a.d[:nb], a.bsums[:nb*qkK/16]
	var sum float32
	for b, dx := range xd {
		blk := (*[q6KBlockBytes]byte)(row[b*q6KBlockBytes:])
		sc := (*[16]byte)(blk[192:208])
		bs := (*[qkK / 16]int16)(xbs[b*qkK/16:])
		var isum int32
		for h := range 2 {
			ql := (*[64]byte)(blk[64*h:])
			qh := (*[32]byte)(blk[128+32*h:])
			x := (*[128]byte)(xq[b*qkK+128*h:])
			for g := range 2 {
				// 16 elements of each of the sub-blocks k, k+2, k+4, k+6.
				qa, qb := (*[16]byte)(ql[16*g:]), (*[16]byte)(ql[32+16*g:])
				hb := (*[16]byte)(qh[16*g:])
				x1, x2 := (*[16]byte)(x[16*g:]), (*[16]byte)(x[32+16*g:])
				x3, x4 := (*[16]byte)(x[64+16*g:]), (*[16]byte)(x[96+16*g:])
				var s1, s2, s3, s4 int32
				for l := 0; l < 16; l += 8 {
					la, lb, hv := le64(qa[l:l+8]), le64(qb[l:l+8]), le64(hb[l:l+8])
					q1 := la&lanes0f | (hv&lanes03)<<4
					q2 := lb&lanes0f | (hv>>2&lanes03)<<4
					q3 := la>>4&lanes0f | (hv>>4&lanes03)<<4
					q4 := lb>>4&lanes0f | (hv>>6&lanes03)<<4
					v1, v2, v3, v4 := le64(x1[l:l+8]), le64(x2[l:l+8]), le64(x3[l:l+8]), le64(x4[l:l+8])
					s1 += dot4u(q1, v1) + dot4u(q1>>32, v1>>32)
					s2 += dot4u(q2, v2) + dot4u(q2>>32, v2>>32)
					s3 += dot4u(q3, v3) + dot4u(q3>>32, v3>>32)
					s4 += dot4u(q4, v4) + dot4u(q4>>32, v4>>32)
				}
				k := 8*h + g // sub-blocks k, k+2, k+4, k+6
				isum += int32(int8(sc[k]))*(s1-32*int32(bs[k])) +
					int32(int8(sc[k+2]))*(s2-32*int32(bs[k+2])) +
					int32(int8(sc[k+4]))*(s3-32*int32(bs[k+4])) +
					int32(int8(sc[k+6]))*(s4-32*int32(bs[k+6]))
			}
		}
		d := float32(half(blk[208], blk[209]) * dx)
		sum += float32(d * float32(isum))
	}
	return sum
}

// dotRowsQ6K is dotQ6K for several activations at once: a chunk of the
// row's super-blocks is unpacked into lane words of 32-q (in [-31, 32], so
// 8 products sum within a lane) with their scales, and a sub-block's
// Σ (q-32)·x_q takes four multiplications per activation.
func dotRowsQ6K(out []float32, stride int, row []byte, acts []activation) {
	const chunk = 8 // super-blocks unpacked at a time: 4.6 KiB
	var blocks [chunk]q6KLanes
	nb := len(row) / q6KBlockBytes
	for b0 := 0; b0 < nb; b0 += chunk {
		wd := blocks[:min(chunk, nb-b0)]
		for i := range wd {
			wd[i].unpack((*[q6KBlockBytes]byte)(row[(b0+i)*q6KBlockBytes:]))
		}
		for t := range acts {
			a := &acts[t]
			xp, xd := a.p[8*b0:8*(b0+len(wd))], a.d[b0:b0+len(wd)]
			var sum float32
			if b0 > 0 {
				sum = out[t*stride]
			}
			for i := range wd {
				b := &wd[i]
				isum := b.sum((*[8][qk8 / 4]uint64)(xp[8*i:]))
				d := float32(b.d * xd[i])
				sum += float32(d * float32(isum))
			}
			out[t*stride] = sum
		}
	}
}

// q6KLanes is a Q6_K super-block unpacked for dotRowsQ6K.
type q6KLanes struct {
	w  [8][qk8 / 4]uint64 // per 32 elements, lanes of 32-q
	sc [16]int32
	d  float32
}

func (b *q6KLanes) unpack(blk *[q6KBlockBytes]byte) {
	b.d = half(blk[208], blk[209])
	for k := range b.sc {
		b.sc[k] = int32(int8(blk[192+k]))
	}
	for h := range 2 {
		ql := (*[64]byte)(blk[64*h:])
		qh := (*[32]byte)(blk[128+32*h:])
		for l := 0; l < 32; l += 8 {
			// Elements 128h+l.., +32, +64, +96 (as in dotQ6K).
			la, lb, hv := le64(ql[l:l+8]), le64(ql[32+l:40+l]), le64(qh[l:l+8])
			for s, q := range [4]uint64{
				la&lanes0f | (hv&lanes03)<<4, lb&lanes0f | (hv>>2&lanes03)<<4,
				la>>4&lanes0f | (hv>>4&lanes03)<<4, lb>>4&lanes0f | (hv>>6&lanes03)<<4,
			} {
				w := &b.w[4*h+s]
				w[l/4], w[l/4+1] = lanes32-q&lanesFF, lanes32-q>>8&lanesFF
			}
		}
	}
}

// sum returns Σ_k sc_k·Σ (q-32)·x_q over the sub-blocks k, for the
// activation's packed quants x: two lane sums per sub-block, eight
// products each.
func (b *q6KLanes) sum(x *[8][qk8 / 4]uint64) (isum int32) {
	for j := range 8 {
		w, x := &b.w[j], &x[j]
		s0 := topLane(w[0]*x[0]+w[1]*x[1]) + topLane(w[2]*x[2]+w[3]*x[3])
		s1 := topLane(w[4]*x[4]+w[5]*x[5]) + topLane(w[6]*x[6]+w[7]*x[7])
		isum -= b.sc[2*j]*s0 + b.sc[2*j+1]*s1
	}
	return isum
}
