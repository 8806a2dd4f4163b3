package tensor

// Q4_K: super-blocks of 256 elements in 144 bytes (ggml's block_q4_K),
// eight sub-blocks of 32:
//
//	offset  0  d       fp16       scale of the sub-block scales
//	offset  2  dmin    fp16       scale of the sub-block mins
//	offset  4  scales  [12]byte   6-bit scale sc and min m per sub-block
//	                              (packing: see scaleMinK4)
//	offset 16  qs      [128]byte  4-bit quants: bytes 32c..32c+31 hold
//	                              sub-block 2c in their low nibbles and
//	                              sub-block 2c+1 in their high nibbles
//
// x = d·sc·q - dmin·m. Rows are dotted with the activation quantized to Q8_K.

const q4KBlockBytes = 2 + 2 + 12 + qkK/2

func init() {
	traitsTable[Q4_K] = &traits{vec: Q8_K, dot: dotQ4K, dotRows: dotRowsQ4K, pack: packLanesK, dequantize: dequantizeQ4K, quantize: quantizeQ4K}
}

func dequantizeQ4K(dst []float32, src []byte) {
	for b := range len(dst) / qkK {
		blk := (*[q4KBlockBytes]byte)(src[b*q4KBlockBytes:])
		y := (*[qkK]float32)(dst[b*qkK:])
		d, dmin := half(blk[0], blk[1]), half(blk[2], blk[3])
		sc := (*[12]byte)(blk[4:16])
		for c := range 4 {
			q := (*[32]byte)(blk[16+32*c:])
			s0, m0 := scaleMinK4(2*c, sc)
			s1, m1 := scaleMinK4(2*c+1, sc)
			d0, min0 := float32(d*float32(s0)), float32(dmin*float32(m0))
			d1, min1 := float32(d*float32(s1)), float32(dmin*float32(m1))
			lo := (*[32]float32)(y[64*c:])
			hi := (*[32]float32)(y[64*c+32:])
			for l, v := range q {
				lo[l] = float32(d0*float32(v&0xf)) - min0
				hi[l] = float32(d1*float32(v>>4)) - min1
			}
		}
	}
}

// quantizeQ4K follows quantize_row_q4_K_ref: per sub-block a weighted
// least-squares scale and min (makeQKX2Quants, weights √(mean x²) + |x|),
// both quantized to 6 bits against the largest of the super-block, then the
// quants recomputed with the quantized scales.
func quantizeQ4K(dst []byte, src []float32) {
	var L [qkK]uint8
	for b := range len(src) / qkK {
		x := (*[qkK]float32)(src[b*qkK:])
		blk := (*[q4KBlockBytes]byte)(dst[b*q4KBlockBytes:])
		quantizeScaleMinK((*[16]byte)(blk[:16]), &L, x, 15, -1, 20)
		for c := range 4 {
			for l := range 32 {
				blk[16+32*c+l] = L[64*c+l] | L[64*c+32+l]<<4
			}
		}
	}
}

// quantizeScaleMinK is the part quantize_row_q4_K_ref and
// quantize_row_q5_K_ref share: per sub-block of super-block x a weighted
// least-squares scale and min (makeQKX2Quants with weights √(mean x²) + |x|,
// nmax levels, trial scales from rmin in nstep steps of 0.1), both quantized
// to 6 bits against the largest of the super-block and written with d and
// dmin to head (the block's first 16 bytes); then L, the quants, recomputed
// with the quantized scales.
func quantizeScaleMinK(head *[16]byte, L *[qkK]uint8, x *[qkK]float32, nmax int32, rmin float32, nstep int32) {
	var (
		laux           [32]uint8
		weights        [32]float32
		scales, mins   [8]float32
		lscale, lmin   [8]uint8
		maxScl, maxMin float32
	)
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := sqrt32(sumX2 / 32)
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2Quants(nmax, xs, weights[:], L[32*j:], laux[:], rmin, 0.1, nstep, false)
		maxScl = cmax(maxScl, scales[j])
		maxMin = cmax(maxMin, mins[j])
	}
	var invScale, invMin float32
	if maxScl > 0 {
		invScale = 63 / maxScl
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	for j := range 8 {
		lscale[j] = min(63, uint8(nearestInt(float32(invScale*scales[j]))))
		lmin[j] = min(63, uint8(nearestInt(float32(invMin*mins[j]))))
	}
	sc := (*[12]byte)(head[4:16])
	putScaleMinK4(sc, &lscale, &lmin)
	putHalf(head[0:], maxScl/63)
	putHalf(head[2:], maxMin/63)
	requantizeK(L[:], x[:], sc, half(head[0], head[1]), half(head[2], head[3]), nmax)
}

// requantizeK recomputes the quants of a Q4_K/Q5_K super-block from its
// stored scales: L = clamp(nearest_int((x + dmin·m)/(d·sc)), 0, nmax),
// leaving sub-blocks whose scale is zero as they were.
func requantizeK(L []uint8, x []float32, sc *[12]byte, d, dmin float32, nmax int32) {
	for j := range 8 {
		s, m := scaleMinK4(j, sc)
		dj := float32(d * float32(s))
		if dj == 0 {
			continue
		}
		mj := float32(dmin * float32(m))
		for i := 32 * j; i < 32*j+32; i++ {
			L[i] = uint8(clampInt(nearestInt(float32(x[i]+mj)/dj), 0, nmax))
		}
	}
}

// dotQ4K is ggml_vec_dot_q4_K_q8_K: per super-block
// d_x·(d·Σ_j sc_j·Σ q·x_q - dmin·Σ_j m_j·Σ x_q), the inner sums in integers
// and Σ x_q taken from the Q8_K block sums.
func dotQ4K(row []byte, a *activation) float32 {
	nb := len(row) / q4KBlockBytes
	xq, xd, xbs := int8Bytes(a.q[:nb*qkK]), a.d[:nb], a.bsums[:nb*qkK/16]
	var sum float32
	for b, dx := range xd {
		blk := (*[q4KBlockBytes]byte)(row[b*q4KBlockBytes:])
		sc := (*[12]byte)(blk[4:16])
		bs := (*[qkK / 16]int16)(xbs[b*qkK/16:])
		var isum, msum int32
		for c := range 4 {
			q := (*[32]byte)(blk[16+32*c:])
			xl := (*[32]byte)(xq[b*qkK+64*c:])
			xh := (*[32]byte)(xq[b*qkK+64*c+32:])
			var s0, s1 int32
			for l := 0; l < 32; l += 8 {
				v := le64(q[l : l+8])
				lo, hi := v&lanes0f, v>>4&lanes0f
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

// dotRowsQ4K is dotQ4K for several activations at once: a chunk of the
// row's super-blocks is unpacked into lane words of 8-q (in [-7, 8], so a
// sub-block's 32 products sum within a lane) with their scales and mins,
// and a sub-block's Σ q·x_q is Σ (q-8)·x_q + 8·Σ x_q, Σ x_q from the block
// sums: eight multiplications per sub-block and activation.
func dotRowsQ4K(out []float32, stride int, row []byte, acts []activation) {
	const chunk = 8 // super-blocks unpacked at a time: 4.7 KiB
	var blocks [chunk]q4KLanes
	nb := len(row) / q4KBlockBytes
	for b0 := 0; b0 < nb; b0 += chunk {
		wd := blocks[:min(chunk, nb-b0)]
		for i := range wd {
			blk := (*[q4KBlockBytes]byte)(row[(b0+i)*q4KBlockBytes:])
			b := &wd[i]
			b.d, b.dmin = half(blk[0], blk[1]), half(blk[2], blk[3])
			for j := range 8 {
				sc, m := scaleMinK4(j, (*[12]byte)(blk[4:16]))
				b.sc[j], b.m[j] = int32(sc), int32(m)
			}
			for c := range 4 {
				for k := range 4 {
					b.w[2*c][2*k], b.w[2*c][2*k+1], b.w[2*c+1][2*k], b.w[2*c+1][2*k+1] = nibbleLanes(le64(blk[16+32*c+8*k:]))
				}
			}
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
				x := (*[8][qk8 / 4]uint64)(xp[8*i:])
				isum, msum := b.sums(x, (*[8]int32)(xsums[8*i:]))
				d := float32(b.d * xd[i])
				dmin := float32(b.dmin * xd[i])
				sum += float32(d*float32(isum)) - float32(dmin*float32(msum))
			}
			out[t*stride] = sum
		}
	}
}

// q4KLanes is a Q4_K super-block unpacked for dotRowsQ4K.
type q4KLanes struct {
	w       [8][qk8 / 4]uint64 // per sub-block, lanes of 8-q
	sc, m   [8]int32
	d, dmin float32
}

// sums returns Σ_j sc_j·Σ q·x_q and Σ_j m_j·Σ x_q over the sub-blocks j,
// for the activation's packed quants x and sums per 32 xs.
func (b *q4KLanes) sums(x *[8][qk8 / 4]uint64, xs *[8]int32) (isum, msum int32) {
	for j := range 8 {
		isum += b.sc[j] * (8*xs[j] - topLane(dotLanes(&b.w[j], &x[j])))
		msum += b.m[j] * xs[j]
	}
	return isum, msum
}
