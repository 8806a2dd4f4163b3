package tensor

// Q3_K: super-blocks of 256 elements in 110 bytes (ggml's block_q3_K),
// sixteen sub-blocks of 16:
//
//	offset   0  hmask   [32]byte  high bit of the quants
//	offset  32  qs      [64]byte  low 2 bits of the quants
//	offset  96  scales  [12]byte  6-bit scales (packing: see q3KScales)
//	offset 108  d       fp16      super-block scale
//
// Element 128h+32j+l (h < 2, j < 4, l < 32) takes bits 2j..2j+1 of
// qs[32h+l] and bit 4h+j of hmask[l]; its quant is (low bits) - 4 when that
// bit is clear. Sub-block k covers elements 16k..16k+15; x = d·(sc_k-32)·q.
// Rows are dotted with the activation quantized to Q8_K.

const q3KBlockBytes = qkK/8 + qkK/4 + 12 + 2

func init() {
	traitsTable[Q3_K] = &traits{vec: Q8_K, dot: dotQ3K, dotRows: dotRowsQ3K, pack: packLanesK, dequantize: dequantizeQ3K, quantize: quantizeQ3K}
}

// q3KScales unpacks the sixteen 6-bit scales of a Q3_K super-block, minus
// 32: the low 4 bits of scale k are the low nibble of s[k] for k < 8 and the
// high nibble of s[k-8] otherwise; its top 2 bits are bits 2(k/4)..2(k/4)+1
// of s[8+k%4].
func q3KScales(s *[12]byte) (sc [16]int32) {
	for k := range 16 {
		lo := s[k%8] >> (4 * (k / 8)) & 0xf
		hi := s[8+k%4] >> (2 * (k / 4)) & 3
		sc[k] = int32(lo|hi<<4) - 32
	}
	return sc
}

func dequantizeQ3K(dst []float32, src []byte) {
	for b := range len(dst) / qkK {
		blk := (*[q3KBlockBytes]byte)(src[b*q3KBlockBytes:])
		y := (*[qkK]float32)(dst[b*qkK:])
		d := half(blk[108], blk[109])
		scales := q3KScales((*[12]byte)(blk[96:108]))
		hm := (*[32]byte)(blk[0:32])
		for k := range 16 {
			h, j, half16 := k/8, k/2%4, 16*(k%2)
			dl := float32(d * float32(scales[k]))
			q := (*[16]byte)(blk[32+32*h+half16:])
			m := (*[16]byte)(hm[half16:])
			shift, bit := uint(2*j), byte(1)<<(4*h+j)
			yk := (*[16]float32)(y[16*k:])
			for l := range 16 {
				v := int32(q[l] >> shift & 3)
				if m[l]&bit == 0 {
					v -= 4
				}
				yk[l] = dl * float32(v)
			}
		}
	}
}

// quantizeQ3K follows quantize_row_q3_K_ref: per sub-block a symmetric scale
// (makeQ3Quants), the scales quantized to 6 bits against the largest in
// magnitude, then the quants recomputed with the quantized scales.
func quantizeQ3K(dst []byte, src []float32) {
	var (
		L      [qkK]int8
		scales [16]float32
	)
	for b := range len(src) / qkK {
		x := (*[qkK]float32)(src[b*qkK:])
		blk := (*[q3KBlockBytes]byte)(dst[b*q3KBlockBytes:])
		var maxScale, amax float32
		for j := range 16 {
			scales[j] = makeQ3Quants(4, x[16*j:16*j+16], L[16*j:])
			if s := abs32(scales[j]); s > amax {
				amax, maxScale = s, scales[j]
			}
		}
		s := (*[12]byte)(blk[96:108])
		*s = [12]byte{}
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j, v := range scales {
				l := int32(int8(nearestInt(float32(iscale * v))))
				l = clampInt(l, -32, 31) + 32
				if j < 8 {
					s[j] = byte(l & 0xf)
				} else {
					s[j-8] |= byte(l&0xf) << 4
				}
				s[8+j%4] |= byte(l>>4) << (2 * (j / 4))
			}
			putHalf(blk[108:], 1/iscale)
		} else {
			putHalf(blk[108:], 0)
		}
		d := half(blk[108], blk[109])
		sc := q3KScales(s)
		for j := range 16 {
			dj := float32(d * float32(sc[j]))
			if dj == 0 {
				continue
			}
			for i := 16 * j; i < 16*j+16; i++ {
				L[i] = int8(clampInt(nearestInt(x[i]/dj), -4, 3) + 4)
			}
		}
		hm := (*[32]byte)(blk[0:32])
		*hm = [32]byte{}
		for i := range L {
			if L[i] > 3 {
				hm[i%32] |= 1 << (i / 32)
				L[i] -= 4
			}
		}
		for h := range 2 {
			for l := range 32 {
				i := 128*h + l
				blk[32+32*h+l] = byte(L[i]) | byte(L[i+32])<<2 | byte(L[i+64])<<4 | byte(L[i+96])<<6
			}
		}
	}
}

// dotQ3K is ggml_vec_dot_q3_K_q8_K: per super-block
// d·d_x·Σ_k (sc_k-32)·Σ q·x_q, with each quant taken as (low bits | high
// bit<<2) and the -4 folded into -4·Σ x_q from the block sums.
func dotQ3K(row []byte, a *activation) float32 {
	nb := len(row) / q3KBlockBytes
	xq, xd, xbs := int8Bytes(a.q[:nb*qkK]), a.d[:nb], a.bsums[:nb*qkK/16]
	var sum float32
	for b, dx := range xd {
		blk := (*[q3KBlockBytes]byte)(row[b*q3KBlockBytes:])
		hm := (*[32]byte)(blk[0:32])
		h0, h1, h2, h3 := le64(hm[0:8]), le64(hm[8:16]), le64(hm[16:24]), le64(hm[24:32])
		bs := (*[qkK / 16]int16)(xbs[b*qkK/16:])
		scales := q3KScales((*[12]byte)(blk[96:108]))
		var isum int32
		for h := range 2 {
			q := (*[32]byte)(blk[32+32*h:])
			q0, q1, q2, q3 := le64(q[0:8]), le64(q[8:16]), le64(q[16:24]), le64(q[24:32])
			for j := range 4 {
				shift, hshift := uint(2*j), uint(4*h+j)
				x := (*[32]byte)(xq[b*qkK+128*h+32*j:])
				v0 := q0>>shift&lanes03 | (h0>>hshift&lanes01)<<2
				v1 := q1>>shift&lanes03 | (h1>>hshift&lanes01)<<2
				v2 := q2>>shift&lanes03 | (h2>>hshift&lanes01)<<2
				v3 := q3>>shift&lanes03 | (h3>>hshift&lanes01)<<2
				x0, x1, x2, x3 := le64(x[0:8]), le64(x[8:16]), le64(x[16:24]), le64(x[24:32])
				s0 := dot4u(v0, x0) + dot4u(v0>>32, x0>>32) + dot4u(v1, x1) + dot4u(v1>>32, x1>>32)
				s1 := dot4u(v2, x2) + dot4u(v2>>32, x2>>32) + dot4u(v3, x3) + dot4u(v3>>32, x3>>32)
				k := 8*h + 2*j
				isum += scales[k]*(s0-4*int32(bs[k])) + scales[k+1]*(s1-4*int32(bs[k+1]))
			}
		}
		d := float32(half(blk[108], blk[109]) * dx)
		sum += float32(d * float32(isum))
	}
	return sum
}

// dotRowsQ3K is dotQ3K for several activations at once: a chunk of the
// row's super-blocks is unpacked into lane words of the quants as dotQ3K
// takes them, minus 4 (in [-4, 3]), with their scales, and a sub-block's
// Σ (q-4)·x_q takes four multiplications per activation.
func dotRowsQ3K(out []float32, stride int, row []byte, acts []activation) {
	const chunk = 8 // super-blocks unpacked at a time: 4.6 KiB
	var blocks [chunk]q3KLanes
	nb := len(row) / q3KBlockBytes
	for b0 := 0; b0 < nb; b0 += chunk {
		wd := blocks[:min(chunk, nb-b0)]
		for i := range wd {
			wd[i].unpack((*[q3KBlockBytes]byte)(row[(b0+i)*q3KBlockBytes:]))
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

// q3KLanes is a Q3_K super-block unpacked for dotRowsQ3K.
type q3KLanes struct {
	w  [8][qk8 / 4]uint64 // per 32 elements, lanes of (low bits | high bit<<2) - 4
	sc [16]int32          // sc_k - 32
	d  float32
}

func (b *q3KLanes) unpack(blk *[q3KBlockBytes]byte) {
	b.d = half(blk[108], blk[109])
	b.sc = q3KScales((*[12]byte)(blk[96:108]))
	hm := (*[32]byte)(blk[0:32])
	for h := range 2 {
		q := (*[32]byte)(blk[32+32*h:])
		for g := range 4 {
			v, hv := le64(q[8*g:]), le64(hm[8*g:])
			for j := range 4 { // elements 128h+32j+8g..
				u := v>>(2*j)&lanes03 | (hv>>(4*h+j)&lanes01)<<2
				b.w[4*h+j][2*g], b.w[4*h+j][2*g+1] = u&lanesFF-lanes4, u>>8&lanesFF-lanes4
			}
		}
	}
}

// sum returns Σ_k (sc_k-32)·Σ (q-4)·x_q over the sub-blocks k, for the
// activation's packed quants x.
func (b *q3KLanes) sum(x *[8][qk8 / 4]uint64) (isum int32) {
	for j := range 8 {
		lo, hi := dotLanes16(&b.w[j], &x[j])
		isum += b.sc[2*j]*lo + b.sc[2*j+1]*hi
	}
	return isum
}
