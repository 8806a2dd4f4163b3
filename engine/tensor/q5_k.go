package tensor

// Q5_K: super-blocks of 256 elements in 176 bytes (ggml's block_q5_K),
// eight sub-blocks of 32:
//
//	offset  0  d       fp16       scale of the sub-block scales
//	offset  2  dmin    fp16       scale of the sub-block mins
//	offset  4  scales  [12]byte   6-bit scale sc and min m per sub-block
//	                              (packing: see scaleMinK4)
//	offset 16  qh      [32]byte   5th bits: bit 2c of qh[l] for element l of
//	                              sub-block 2c, bit 2c+1 for sub-block 2c+1
//	offset 48  qs      [128]byte  low 4 bits, as Q4_K's qs
//
// x = d·sc·q - dmin·m. Rows are dotted with the activation quantized to Q8_K.

const q5KBlockBytes = 2 + 2 + 12 + qkK/8 + qkK/2

func init() {
	traitsTable[Q5_K] = &traits{vec: Q8_K, dot: dotQ5K, dotRows: dotRowsQ5K, pack: packLanesK, dequantize: dequantizeQ5K, quantize: quantizeQ5K}
}

func dequantizeQ5K(dst []float32, src []byte) {
	for b := range len(dst) / qkK {
		blk := (*[q5KBlockBytes]byte)(src[b*q5KBlockBytes:])
		y := (*[qkK]float32)(dst[b*qkK:])
		d, dmin := half(blk[0], blk[1]), half(blk[2], blk[3])
		sc := (*[12]byte)(blk[4:16])
		qh := (*[32]byte)(blk[16:48])
		for c := range 4 {
			q := (*[32]byte)(blk[48+32*c:])
			s0, m0 := scaleMinK4(2*c, sc)
			s1, m1 := scaleMinK4(2*c+1, sc)
			d0, min0 := float32(d*float32(s0)), float32(dmin*float32(m0))
			d1, min1 := float32(d*float32(s1)), float32(dmin*float32(m1))
			lo := (*[32]float32)(y[64*c:])
			hi := (*[32]float32)(y[64*c+32:])
			for l, v := range q {
				h := qh[l] >> (2 * c)
				lo[l] = float32(d0*float32(v&0xf|(h&1)<<4)) - min0
				hi[l] = float32(d1*float32(v>>4|(h&2)<<3)) - min1
			}
		}
	}
}

// quantizeQ5K follows quantize_row_q5_K_ref: as Q4_K with 5-bit quants
// (makeQKX2Quants with nmax 31 and 16 trial scales from -0.5).
func quantizeQ5K(dst []byte, src []float32) {
	var L [qkK]uint8
	for b := range len(src) / qkK {
		x := (*[qkK]float32)(src[b*qkK:])
		blk := (*[q5KBlockBytes]byte)(dst[b*q5KBlockBytes:])
		quantizeScaleMinK((*[16]byte)(blk[:16]), &L, x, 31, -0.5, 15)
		qh := (*[32]byte)(blk[16:48])
		*qh = [32]byte{}
		for c := range 4 {
			for l := range 32 {
				q0, q1 := L[64*c+l], L[64*c+32+l]
				qh[l] |= (q0>>4)<<(2*c) | (q1>>4)<<(2*c+1)
				blk[48+32*c+l] = q0&0xf | (q1&0xf)<<4
			}
		}
	}
}

// dotQ5K is ggml_vec_dot_q5_K_q8_K, as dotQ4K with 5-bit quants.
func dotQ5K(row []byte, a *activation) float32 {
	nb := len(row) / q5KBlockBytes
	xq, xd, xbs := int8Bytes(a.q[:nb*qkK]), a.d[:nb], a.bsums[:nb*qkK/16]
	var sum float32
	for b, dx := range xd {
		blk := (*[q5KBlockBytes]byte)(row[b*q5KBlockBytes:])
		sc := (*[12]byte)(blk[4:16])
		qh := (*[32]byte)(blk[16:48])
		bs := (*[qkK / 16]int16)(xbs[b*qkK/16:])
		var isum, msum int32
		for c := range 4 {
			q := (*[32]byte)(blk[48+32*c:])
			xl := (*[32]byte)(xq[b*qkK+64*c:])
			xh := (*[32]byte)(xq[b*qkK+64*c+32:])
			shift := uint(2 * c)
			var s0, s1 int32
			for l := 0; l < 32; l += 8 {
				v, h := le64(q[l:l+8]), le64(qh[l:l+8])>>shift
				lo := v&lanes0f | (h&lanes01)<<4
				hi := v>>4&lanes0f | (h>>1&lanes01)<<4
				x0, x1 := le64(xl[l:l+8]), le64(xh[l:l+8])
				s0 += dot4u(lo, x0) + dot4u(lo>>32, x0>>32)
				s1 += dot4u(hi, x1) + dot4u(hi>>32, x1>>32)
			}
			sc0, m0 := scaleMinK4(2*c, sc)
			sc1, m1 := scaleMinK4(2*c+1, sc)
			isum += int32(sc0)*s0 + int32(sc1)*s1
			msum += int32(m0)*(int32(bs[4*c])+int32(bs[4*c+1])) + int32(m1)*(int32(bs[4*c+2])+int32(bs[4*c+3]))
		}
		d := float32(half(blk[0], blk[1]) * dx)
		dmin := float32(half(blk[2], blk[3]) * dx)
		sum += float32(d*float32(isum)) - float32(dmin*float32(msum))
	}
	return sum
}

// dotRowsQ5K is dotQ5K for several activations at once, as dotRowsQ4K
// with lane words of 16-q (in [-15, 16]: each half of a sub-block is read
// on its own) and Σ q·x_q = Σ (q-16)·x_q + 16·Σ x_q.
func dotRowsQ5K(out []float32, stride int, row []byte, acts []activation) {
	const chunk = 8 // super-blocks unpacked at a time: 4.7 KiB
	var blocks [chunk]q5KLanes
	nb := len(row) / q5KBlockBytes
	for b0 := 0; b0 < nb; b0 += chunk {
		wd := blocks[:min(chunk, nb-b0)]
		for i := range wd {
			wd[i].unpack((*[q5KBlockBytes]byte)(row[(b0+i)*q5KBlockBytes:]))
		}
		for t := range acts {
			a := &acts[t]
			xp, xd, xsums := a.p[8*b0:8*(b0+len(wd))], a.d[b0:b0+len(wd)], a.sum[8*b0:8*(b0+len(wd))]
			var sum float32
			if b0 > 0 {
				sum = out[t*stride]
			}
			for i := range wd {
				b := &wd[i]
				isum, msum := b.sums((*[8][qk8 / 4]uint64)(xp[8*i:]), (*[8]int32)(xsums[8*i:]))
				d := float32(b.d * xd[i])
				dmin := float32(b.dmin * xd[i])
				sum += float32(d*float32(isum)) - float32(dmin*float32(msum))
			}
			out[t*stride] = sum
		}
	}
}

// q5KLanes is a Q5_K super-block unpacked for dotRowsQ5K.
type q5KLanes q4KLanes // lanes of 16-q

func (b *q5KLanes) unpack(blk *[q5KBlockBytes]byte) {
	b.d, b.dmin = half(blk[0], blk[1]), half(blk[2], blk[3])
	for j := range 8 {
		sc, m := scaleMinK4(j, (*[12]byte)(blk[4:16]))
		b.sc[j], b.m[j] = int32(sc), int32(m)
	}
	qh := (*[32]byte)(blk[16:48])
	for c := range 4 {
		q := (*[32]byte)(blk[48+32*c:])
		lo, hi := &b.w[2*c], &b.w[2*c+1]
		for k := range 4 {
			v, h := le64(q[8*k:]), le64(qh[8*k:])>>(2*c)
			l := v&lanes0f | (h&lanes01)<<4
			u := v>>4&lanes0f | (h>>1&lanes01)<<4
			lo[2*k], lo[2*k+1] = lanes16-l&lanesFF, lanes16-l>>8&lanesFF
			hi[2*k], hi[2*k+1] = lanes16-u&lanesFF, lanes16-u>>8&lanesFF
		}
	}
}

// sums returns Σ_j sc_j·Σ q·x_q and Σ_j m_j·Σ x_q over the sub-blocks j,
// for the activation's packed quants x and sums per 32 xs.
func (b *q5KLanes) sums(x *[8][qk8 / 4]uint64, xs *[8]int32) (isum, msum int32) {
	for j := range 8 {
		lo, hi := dotLanes16(&b.w[j], &x[j])
		isum += b.sc[j] * (16*xs[j] - lo - hi)
		msum += b.m[j] * xs[j]
	}
	return isum, msum
}
