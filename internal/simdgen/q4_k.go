package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// emitMatVecQ4K emits ggml_vec_dot_q4_K_q8_K as the pure-Go dotQ4K
// computes it: per super-block the integers isum = Σ_j sc_j·Σ q·x and
// msum = Σ_j m_j·(bsums[2j] + bsums[2j+1]), then
// float32(d·dx·isum) - float32(dmin·dx·msum) added to the sum.
func emitMatVecQ4K(m *wg.Module, relaxed bool) {
	emitMatVecScaleMinK(m, MatVecQ4_K, q4KBlockBytes, false, relaxed)
}

// emitMatVecQ5K emits ggml_vec_dot_q5_K_q8_K as dotQ5K computes it: Q4_K's
// kernel with each quant's fifth bit, bit 2c (sub-block 2c) or 2c+1
// (sub-block 2c+1) of qh[l] for element l of its sub-block, worth 16.
// The quants (0..31) are still in i7's range for the relaxed dot, and four
// products of at most 31·128 still fit an int16 lane.
func emitMatVecQ5K(m *wg.Module, relaxed bool) {
	emitMatVecScaleMinK(m, MatVecQ5_K, q5KBlockBytes, true, relaxed)
}

// emitMatVecScaleMinK emits the kernel of Q4_K, or with fifth Q5_K's
// (whose qh, 32 bytes at 16, comes before the quants).
func emitMatVecScaleMinK(m *wg.Module, name string, blockBytes int32, fifth, relaxed bool) {
	qs := uint32(16)
	if fifth {
		qs = 48
	}
	emitQ8KKernel(m, name, blockBytes, true, func(k kernel, p [4]wg.Local, qx, dx, bs, scratch wg.Local) wg.Expr {
		// Per row: the unpacked scales and mins; Σ_j sc_j·Σ q·x; Σ_j m_j·Σ x.
		// The eight scales of row j go to the scratch for the chunk loop,
		// as int16 at 16j with relaxed SIMD, as int32 at 32j without.
		var scm, isum, msum [4]wg.Local
		for j := range p {
			scm[j], isum[j], msum[j] = k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
		}
		sums, t, u := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
		isumV, msumV, dd := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
		// The activations (four sixteens of bytes with relaxed SIMD, eight
		// vectors of int16 without) and, without relaxed SIMD only, the
		// chunk's partial sums and the nibble mask.
		x := make([]wg.Local, 4)
		var part [4]wg.Local
		var mask wg.Local
		if !relaxed {
			x = make([]wg.Local, 8)
			for j := range p {
				part[j] = k.Local(wg.V128)
			}
			mask = k.Local(wg.V128)
			k.Set(mask, i16x8Splat(15))
		}
		for i := range x {
			x[i] = k.Local(wg.V128)
		}

		// The activation's sums of sub-blocks 0..7 (bsums[2j] +
		// bsums[2j+1], at most 32·128) as int16.
		k.Set(sums, wg.I16x8NarrowI32x4S(
			wg.I32x4ExtaddPairwiseI16x8S(wg.V128Load(get(bs), 0)),
			wg.I32x4ExtaddPairwiseI16x8S(wg.V128Load(get(bs), 16))))
		for j := range p {
			k.unpackScalesK4(scm[j], u, p[j])
			k.Set(u, wg.I16x8ExtendLowI8x16U(get(scm[j])))
			if relaxed {
				k.V128Store(get(scratch), uint32(16*j), get(u))
			} else {
				k.V128Store(get(scratch), uint32(32*j), wg.I32x4ExtendLowI16x8U(get(u)))
				k.V128Store(get(scratch), uint32(32*j+16), wg.I32x4ExtendHighI16x8U(get(u)))
			}
			// Lane i: m_2i·sum_2i + m_2i+1·sum_2i+1, the mins widened to
			// int16 and multiplied with the sums by i32x4.dot_i16x8_s.
			k.Set(msum[j], wg.I32x4DotI16x8S(get(sums), wg.I16x8ExtendHighI8x16U(get(scm[j]))))
			k.Set(isum[j], f32x4Zero())
		}
		k.transposeSum(msumV, wg.I32x4Add, msum)
		// Chunk c: 32 bytes at 16+32c, sub-block 2c in the low nibbles
		// (activations 64c..64c+31), 2c+1 in the high ones (+32). A loop,
		// not unrolled: V8 schedules a long basic block with no regard to
		// register pressure, and spills.
		var pc [4]wg.Local
		for j := range pc {
			pc[j] = k.Local(wg.I32)
			k.Set(pc[j], get(p[j]))
		}
		// sp: the scales of sub-blocks 2c and 2c+1 at sp+16j (relaxed) or
		// sp+32j.
		c, cq, sp := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
		var qh *q5KFifth
		if fifth {
			qh = &q5KFifth{h: [2]wg.Local{k.Local(wg.V128), k.Local(wg.V128)}, shift: wg.I32Shl(get(c), i32(1))}
		}
		k.Set(cq, get(qx))
		k.Set(sp, get(scratch))
		k.forRange(c, i32(0), i32(4), 1, func() {
			if relaxed {
				q4KChunkRelaxed(k, p, pc, cq, sp, x, isum, t, u, qs, qh)
				return
			}
			// x[2i], x[2i+1]: the even and odd elements of activations
			// 64c+16i.., as int16 (the quants are split the same way).
			for i := range 4 {
				k.Set(t, wg.V128Load(get(cq), uint32(16*i)))
				k.Set(x[2*i], wg.I16x8ShrS(wg.I16x8Shl(get(t), i32(8)), i32(8)))
				k.Set(x[2*i+1], wg.I16x8ShrS(get(t), i32(8)))
			}
			for j := range p {
				// Bytes l..l+15 (l = 0, 16) of the chunk as int16 lanes of
				// two bytes: the nibbles of the even byte are lane&15 (low,
				// sub-block 2c) and lane>>4&15 (high, 2c+1), of the odd
				// byte lane>>8&15 and lane>>12.
				for half := range 2 {
					k.Set(t, wg.V128Load(get(pc[j]), qs+uint32(16*half)))
					xl, xh := x[2*half:2*half+2], x[4+2*half:4+2*half+2]
					q := [4]wg.Expr{ // low even, low odd, high even, high odd
						wg.V128And(get(t), get(mask)),
						wg.V128And(wg.I16x8ShrU(get(t), i32(8)), get(mask)),
						wg.V128And(wg.I16x8ShrU(get(t), i32(4)), get(mask)),
						wg.I16x8ShrU(get(t), i32(12)),
					}
					if fifth {
						// qh's bytes l.. as int16 lanes moved right by 2c:
						// bit 0 of the even byte is its element's fifth bit
						// in sub-block 2c, bit 1 in 2c+1; bits 8 and 9 the
						// odd byte's.
						h := qh.h[0]
						k.Set(h, wg.I16x8ShrU(wg.V128Load(get(p[j]), uint32(16+16*half)), qh.shift))
						sixteen := i16x8Splat(16)
						q[0] = wg.V128Or(q[0], wg.V128And(wg.I16x8Shl(get(h), i32(4)), sixteen))
						q[1] = wg.V128Or(q[1], wg.V128And(wg.I16x8ShrU(get(h), i32(4)), sixteen))
						q[2] = wg.V128Or(q[2], wg.V128And(wg.I16x8Shl(get(h), i32(3)), sixteen))
						q[3] = wg.V128Or(q[3], wg.V128And(wg.I16x8ShrU(get(h), i32(5)), sixteen))
					}
					k.Set(part[2*half], wg.I32x4Add(
						wg.I32x4DotI16x8S(q[0], get(xl[0])),
						wg.I32x4DotI16x8S(q[1], get(xl[1]))))
					k.Set(part[2*half+1], wg.I32x4Add(
						wg.I32x4DotI16x8S(q[2], get(xh[0])),
						wg.I32x4DotI16x8S(q[3], get(xh[1]))))
				}
				k.Set(isum[j], wg.I32x4Add(get(isum[j]), wg.I32x4Add(
					wg.I32x4Mul(wg.I32x4Add(get(part[0]), get(part[2])), wg.V128Load32Splat(get(sp), uint32(32*j))),
					wg.I32x4Mul(wg.I32x4Add(get(part[1]), get(part[3])), wg.V128Load32Splat(get(sp), uint32(32*j+4))))))
				k.Set(pc[j], wg.I32Add(get(pc[j]), i32(32)))
			}
			k.Set(cq, wg.I32Add(get(cq), i32(64)))
			k.Set(sp, wg.I32Add(get(sp), i32(8)))
		})
		k.transposeSum(isumV, wg.I32x4Add, isum)
		// d and dmin: the fp16 pair at offset 0 of each row.
		var v wg.Expr = f32x4Zero()
		for j := range p {
			v = wg.V128Load32Lane(get(p[j]), 0, v, uint8(j))
		}
		k.Set(t, v)
		k.Set(u, wg.I32x4Shl(get(t), i32(16)))
		k.Set(dd, wg.F32x4Splat(wg.F32Load(get(dx), 0)))
		k.Set(isumV, wg.F32x4Mul(
			wg.F32x4Mul(f16ToF32(u), get(dd)),
			wg.F32x4ConvertI32x4S(get(isumV))))
		k.Set(u, wg.V128And(get(t), i32x4Splat(0xffff0000)))
		k.Set(msumV, wg.F32x4Mul(
			wg.F32x4Mul(f16ToF32(u), get(dd)),
			wg.F32x4ConvertI32x4S(get(msumV))))
		return wg.F32x4Sub(get(isumV), get(msumV))
	})
}

// q5KFifth is what the chunk loop of Q5_K's kernel needs of its fifth
// bits: two v128 locals for them and the shift that brings chunk c's to
// bits 0 and 1 of each byte (2c).
type q5KFifth struct {
	h     [2]wg.Local
	shift wg.Expr
}

// q4KChunkRelaxed is the chunk loop's body of emitMatVecQ4K with relaxed
// SIMD: the nibbles stay bytes (0..15, in i7's range) and
// i16x8.relaxed_dot multiplies them with the activation bytes as loaded
// (x[0..3]: activations 64c.. in four sixteens). Per row and sub-block
// the int16 lanes add four products of at most 15·128: no overflow; and
// i32x4.dot_i16x8_s with the sub-block's scale splat (row j's sub-blocks
// 2c and 2c+1 at sp+16j, then sp moves on by two scales) widens and
// scales them at once,
// where extadd and i32x4.mul took two instructions, the multiply a slow
// one (in Chromium 2048×768 Q4_K ran at 32.7 GFLOP/s so, 24.8 before). The
// quants are at qs in each super-block; with qh (Q5_K) their fifth bits,
// from the 32 bytes at 16, are or-ed in (quants 0..31: four products of at
// most 31·128 still fit).
func q4KChunkRelaxed(k kernel, p, pc [4]wg.Local, cq, sp wg.Local, x []wg.Local, isum [4]wg.Local, t, u wg.Local, qs uint32, qh *q5KFifth) {
	for i := range x {
		k.Set(x[i], wg.V128Load(get(cq), uint32(16*i)))
	}
	mask := k.constant(nibbleMask)
	for j := range p {
		k.Set(t, wg.V128Load(get(pc[j]), qs))
		k.Set(u, wg.V128Load(get(pc[j]), qs+16))
		q := [4]wg.Expr{ // sub-block 2c's elements 0-15 and 16-31, then 2c+1's
			wg.V128And(get(t), mask), wg.V128And(get(u), mask),
			wg.V128And(wg.I16x8ShrU(get(t), i32(4)), mask), wg.V128And(wg.I16x8ShrU(get(u), i32(4)), mask),
		}
		if qh != nil {
			for half, h := range qh.h {
				// int16 shifts (x86 has no byte shifts): of each byte only
				// bits 0 and 1, moved to bit 4, are kept.
				k.Set(h, wg.I16x8ShrU(wg.V128Load(get(p[j]), uint32(16+16*half)), qh.shift))
				q[half] = wg.V128Or(q[half], wg.V128And(wg.I16x8Shl(get(h), i32(4)), i8x16Splat(16)))
				q[2+half] = wg.V128Or(q[2+half], wg.V128And(wg.I16x8Shl(get(h), i32(3)), i8x16Splat(16)))
			}
		}
		k.Set(isum[j], wg.I32x4Add(get(isum[j]), wg.I32x4Add(
			wg.I32x4DotI16x8S(wg.I16x8Add(
				wg.I16x8RelaxedDotI8x16I7x16S(get(x[0]), q[0]),
				wg.I16x8RelaxedDotI8x16I7x16S(get(x[1]), q[1])), wg.V128Load16Splat(get(sp), uint32(16*j))),
			wg.I32x4DotI16x8S(wg.I16x8Add(
				wg.I16x8RelaxedDotI8x16I7x16S(get(x[2]), q[2]),
				wg.I16x8RelaxedDotI8x16I7x16S(get(x[3]), q[3])), wg.V128Load16Splat(get(sp), uint32(16*j+2))))))
		k.Set(pc[j], wg.I32Add(get(pc[j]), i32(32)))
	}
	k.Set(cq, wg.I32Add(get(cq), i32(64)))
	k.Set(sp, wg.I32Add(get(sp), i32(4)))
}

// unpackScalesK4 sets t to the 6-bit scales of sub-blocks 0..7 in bytes
// 0..7 and their mins in bytes 8..15, unpacked from the 12 bytes at p+4 as
// the pure-Go scaleMinK4 reads them: scale j<4 is s[j]&63 and min j<4 is
// s[j+4]&63; scale j≥4 is s[j+4]&15 | (s[j-4]>>6)<<4 and min j≥4 is
// s[j+4]>>4 | (s[j]>>6)<<4. u is scratch. Its shuffles move whole 32-bit
// lanes (x86's pshufd, where a byte shuffle is a pshufb and its mask
// made anew each time) and its shifts are int16 ones (x86 has no byte
// shifts), the bits a shift brings in from the neighbouring byte masked
// off.
func (k kernel) unpackScalesK4(t, u wg.Local, p wg.Local) {
	k.Set(u, wg.V128Load(get(p), 4)) // s[0..11], then 4 quant bytes
	// a = s[0..3], s[8..11], s[4..7], s[8..11]: the low bits of each.
	k.Set(t, pairs32(get(u), get(u), [4]int{0, 2, 1, 2}))
	// The low six bits of scales and mins 0..3, the low four of scales
	// 4..7 (s[8..11]&15) and of mins 4..7 (s[8..11]>>4).
	low := wg.V128Or(
		wg.V128And(get(t), wg.I8x16Const([16]uint8{63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0})),
		wg.V128And(wg.I16x8ShrU(get(t), i32(4)), wg.I8x16Const([16]uint8{12: 15, 13: 15, 14: 15, 15: 15})))
	// b = -, s[0..3], -, s[4..7]: their top two bits to bits 4, 5 of the
	// scales and mins 4..7.
	top := wg.V128And(wg.I16x8ShrU(pairs32(get(u), get(u), [4]int{0, 0, 1, 1}), i32(2)),
		wg.I8x16Const([16]uint8{4: 0x30, 5: 0x30, 6: 0x30, 7: 0x30, 12: 0x30, 13: 0x30, 14: 0x30, 15: 0x30}))
	k.Set(t, wg.V128Or(low, top))
}
