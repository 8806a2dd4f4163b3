package tensor

// Q2_K: super-blocks of 256 elements in 84 bytes (ggml's block_q2_K),
// sixteen sub-blocks of 16:
//
//	offset  0  scales  [16]byte  per sub-block: scale sc in the low nibble,
//	                             min m in the high nibble
//	offset 16  qs      [64]byte  2-bit quants
//	offset 80  d       fp16      scale of the sub-block scales
//	offset 82  dmin    fp16      scale of the sub-block mins
//
// Each half h (elements 128h..128h+127) uses qs[32h:32h+32]: element
// 128h+32j+l (j < 4, l < 32) is bits 2j..2j+1 of qs[32h+l]. Sub-block k
// covers elements 16k..16k+15. x = d·sc·q - dmin·m. Rows are dotted with the
// activation quantized to Q8_K.

const q2KBlockBytes = qkK/16 + qkK/4 + 2 + 2

func init() {
	traitsTable[Q2_K] = &traits{vec: Q8_K, dot: dotQ2K, dotRows: dotRowsQ2K, pack: packLanesK, dequantize: dequantizeQ2K, quantize: quantizeQ2K}
}

func dequantizeQ2K(dst []float32, src []byte) {
	for b := range len(dst) / qkK {
		blk := (*[q2KBlockBytes]byte)(src[b*q2KBlockBytes:])
		y := (*[qkK]float32)(dst[b*qkK:])
		d, dmin := half(blk[80], blk[81]), half(blk[82], blk[83])
		for k := range 16 {
			sc := blk[k]
			dl, ml := float32(d*float32(sc&0xf)), float32(dmin*float32(sc>>4))
			q := (*[16]byte)(blk[16+32*(k/8)+16*(k%2):])
			shift := uint(2 * (k / 2 % 4))
			yk := (*[16]float32)(y[16*k:])
			for l, v := range q {
				yk[l] = float32(dl*float32(v>>shift&3)) - ml
			}
		}
	}
}

// quantizeQ2K follows quantize_row_q2_K_ref: per sub-block a scale and min
// minimizing the |x|-weighted absolute error (makeQKX2Quants, nmax 3), both
// quantized to 4 bits against the largest, then the quants recomputed.
func quantizeQ2K(dst []byte, src []float32) {
	var (
		L            [qkK]uint8
		laux         [16]uint8
		weights      [16]float32
		scales, mins [16]float32
	)
	const q4scale = 15
	for b := range len(src) / qkK {
		x := (*[qkK]float32)(src[b*qkK:])
		blk := (*[q2KBlockBytes]byte)(dst[b*q2KBlockBytes:])
		var maxScale, maxMin float32
		for j := range 16 {
			xs := x[16*j : 16*j+16]
			for l, v := range xs {
				weights[l] = abs32(v)
			}
			scales[j], mins[j] = makeQKX2Quants(3, xs, weights[:], L[16*j:], laux[:], -0.5, 0.1, 15, true)
			maxScale = cmax(maxScale, scales[j])
			maxMin = cmax(maxMin, mins[j])
		}
		if maxScale > 0 {
			iscale := q4scale / maxScale
			for j := range 16 {
				blk[j] = uint8(nearestInt(float32(iscale * scales[j])))
			}
			putHalf(blk[80:], maxScale/q4scale)
		} else {
			clear(blk[:16])
			putHalf(blk[80:], 0)
		}
		if maxMin > 0 {
			iscale := q4scale / maxMin
			for j := range 16 {
				blk[j] |= uint8(nearestInt(float32(iscale*mins[j])) << 4)
			}
			putHalf(blk[82:], maxMin/q4scale)
		} else {
			putHalf(blk[82:], 0)
		}
		d, dmin := half(blk[80], blk[81]), half(blk[82], blk[83])
		for j := range 16 {
			dj := float32(d * float32(blk[j]&0xf))
			if dj == 0 {
				continue
			}
			mj := float32(dmin * float32(blk[j]>>4))
			for i := 16 * j; i < 16*j+16; i++ {
				L[i] = uint8(clampInt(nearestInt(float32(x[i]+mj)/dj), 0, 3))
			}
		}
		for h := range 2 {
			for l := range 32 {
				i := 128*h + l
				blk[16+32*h+l] = L[i] | L[i+32]<<2 | L[i+64]<<4 | L[i+96]<<6
			}
		}
	}
}

// dotQ2K is ggml_vec_dot_q2_K_q8_K: per super-block
// d_x·(d·Σ_k sc_k·Σ q·x_q - dmin·Σ_k m_k·Σ x_q), Σ x_q from the block sums.
func dotQ2K(row []byte, a *activation) float32 {
	nb := len(row) / q2KBlockBytes
	xq, xd, xbs := int8Bytes(a.q[:nb*qkK]), a.d[:nb], a.bsums[:nb*qkK/16]
	var sum float32
	for b, dx := range xd {
		blk := (*[q2KBlockBytes]byte)(row[b*q2KBlockBytes:])
		sc := (*[16]byte)(blk[:16])
		bs := (*[qkK / 16]int16)(xbs[b*qkK/16:])
		var isum, msum int32
		for h := range 2 {
			q := (*[32]byte)(blk[16+32*h:])
			q0, q1, q2, q3 := le64(q[0:8]), le64(q[8:16]), le64(q[16:24]), le64(q[24:32])
			for j := range 4 {
				shift := uint(2 * j)
				x := (*[32]byte)(xq[b*qkK+128*h+32*j:])
				v0, v1 := q0>>shift&lanes03, q1>>shift&lanes03
				v2, v3 := q2>>shift&lanes03, q3>>shift&lanes03
				x0, x1, x2, x3 := le64(x[0:8]), le64(x[8:16]), le64(x[16:24]), le64(x[24:32])
				s0 := dot4u(v0, x0) + dot4u(v0>>32, x0>>32) + dot4u(v1, x1) + dot4u(v1>>32, x1>>32)
				s1 := dot4u(v2, x2) + dot4u(v2>>32, x2>>32) + dot4u(v3, x3) + dot4u(v3>>32, x3>>32)
				k := 8*h + 2*j
				isum += int32(sc[k]&0xf)*s0 + int32(sc[k+1]&0xf)*s1
			}
		}
		for k, s := range sc {
			msum += int32(s>>4) * int32(bs[k])
		}
		d := float32(half(blk[80], blk[81]) * dx)
		dmin := float32(half(blk[82], blk[83]) * dx)
		sum += float32(d*float32(isum)) - float32(dmin*float32(msum))
	}
	return sum
}

// dotRowsQ2K is dotQ2K for several activations at once: a chunk of the
// row's super-blocks is unpacked into lane words of q (in [0, 3]) with
// their 4-bit scales and mins, and a sub-block's Σ q·x_q takes four
// multiplications per activation.
func dotRowsQ2K(out []float32, stride int, row []byte, acts []activation) {
	const chunk = 8 // super-blocks unpacked at a time: 4.6 KiB
	var blocks [chunk]q2KLanes
	nb := len(row) / q2KBlockBytes
	for b0 := 0; b0 < nb; b0 += chunk {
		wd := blocks[:min(chunk, nb-b0)]
		for i := range wd {
			wd[i].unpack((*[q2KBlockBytes]byte)(row[(b0+i)*q2KBlockBytes:]))
		}
		for t := range acts {
			a := &acts[t]
			xp, xd, xbs := a.p[8*b0:8*(b0+len(wd))], a.d[b0:b0+len(wd)], a.bsums[16*b0:16*(b0+len(wd))]
			var sum float32
			if b0 > 0 {
				sum = out[t*stride]
			}
			for i := range wd {
				b := &wd[i]
				isum, msum := b.sums((*[8][qk8 / 4]uint64)(xp[8*i:]), (*[qkK / 16]int16)(xbs[16*i:]))
				d := float32(b.d * xd[i])
				dmin := float32(b.dmin * xd[i])
				sum += float32(d*float32(isum)) - float32(dmin*float32(msum))
			}
			out[t*stride] = sum
		}
	}
}

// q2KLanes is a Q2_K super-block unpacked for dotRowsQ2K.
type q2KLanes struct {
	w       [8][qk8 / 4]uint64 // per 32 elements, lanes of q
	sc, m   [16]int32
	d, dmin float32
}

func (b *q2KLanes) unpack(blk *[q2KBlockBytes]byte) {
	b.d, b.dmin = half(blk[80], blk[81]), half(blk[82], blk[83])
	for k, s := range blk[:16] {
		b.sc[k], b.m[k] = int32(s&0xf), int32(s>>4)
	}
	for h := range 2 {
		q := (*[32]byte)(blk[16+32*h:])
		for g := range 4 {
			v := le64(q[8*g:])
			for j := range 4 { // elements 128h+32j+8g..
				u := v >> (2 * j) & lanes03
				b.w[4*h+j][2*g], b.w[4*h+j][2*g+1] = u&lanesFF, u>>8&lanesFF
			}
		}
	}
}

// sums returns Σ_k sc_k·Σ q·x_q and Σ_k m_k·Σ x_q over the sub-blocks k,
// for the activation's packed quants x and block sums bs.
func (b *q2KLanes) sums(x *[8][qk8 / 4]uint64, bs *[qkK / 16]int16) (isum, msum int32) {
	for j := range 8 {
		lo, hi := dotLanes16(&b.w[j], &x[j])
		isum += b.sc[2*j]*lo + b.sc[2*j+1]*hi
	}
	for k, s := range bs {
		msum += b.m[k] * int32(s)
	}
	return isum, msum
}
