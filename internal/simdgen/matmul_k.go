package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// The batched kernels of the K-quants with a matrix–vector kernel too
// (Q4_K, Q6_K; matmul.go has the framework, matmul_mins.go Q5_K's and
// matmul_q2_k.go Q2_K's and Q3_K's): eight 32-element chunks per
// super-block, each sub-block's scale applied in the decode (or, in the
// relaxed kernels, after each sub-block's dots), the mins through the
// activation's block sums in minsFinish (and the relaxed Q6_K kernel's
// offset 32 in q6KQuadsFinish).

// q4KExtraBytes: the rows' mins as int16 (each twice: lanes 2i, 2i+1 are
// sub-block i's, for the sixteen block sums), then d and dmin as f32x4,
// then 16 bytes of the decoder's scratch.
const q4KExtraBytes = 4*32 + 16 + 16 + 16

// emitMatMulQ4K emits matmul_q4_k; with relaxed SIMD its nibbles stay
// bytes, in quads (matmulType.quadsK).
func emitMatMulQ4K(m *wg.Module, relaxed bool) {
	if relaxed {
		emitMatMul(m, matmulType{name: MatMulQ4_K, blockBytes: q4KBlockBytes, chunks: 8, extraBytes: q4KExtraBytes, quadsK: true,
			decode: decodeQ4KQuads, finish: minsFinish})
		return
	}
	emitMatMul(m, matmulType{name: MatMulQ4_K, blockBytes: q4KBlockBytes, chunks: 8, extraBytes: q4KExtraBytes,
		decode: func(k kernel, p [4]wg.Local, sp wg.Local) { decodeScaleMinK(k, p, sp, false) },
		finish: minsFinish,
	})
}

// decodeQ4KQuads decodes the Q4_K super-blocks p into scratch at sp for
// matmulType.quadsK: the quants as quads, the scales as i16x8 per
// sub-block (row j's in lanes 2j and 2j+1), then minsFinish's extras (the mins, d and dmin) at sp + 1152.
func decodeQ4KQuads(k kernel, p [4]wg.Local, sp wg.Local) {
	const ex = 8*128 + 8*16
	var scm, lo, hi [4]wg.Local
	for j := range p {
		scm[j], lo[j], hi[j] = k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	}
	u, a, b := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	for j := range p {
		// Scales in bytes 0..7 of scm[j], mins in 8..15; the mins as
		// minsFinish reads them.
		k.unpackScalesK4(scm[j], u, p[j])
		storeMins(k, sp, ex+uint32(32*j), scm[j])
	}
	// Sub-block c's scales of the four rows as i16x8: byte c of each row's
	// scm into bytes 0, 4, 8, 12, the rest of each lane cleared, then each
	// lane's low half copied to its high half.
	for c := range 8 {
		var s01, s23 [16]uint8
		for i := range s01 {
			s01[i], s23[i] = uint8(c), uint8(c)
		}
		s01[4], s23[12] = uint8(16+c), uint8(16+c)
		k.Set(a, wg.I8x16Shuffle(get(scm[0]), get(scm[1]), s01)) // byte 0: row 0's, byte 4: row 1's
		k.Set(b, wg.I8x16Shuffle(get(scm[2]), get(scm[3]), s23)) // byte 8: row 2's, byte 12: row 3's
		k.Set(a, wg.V128And(pairs32(get(a), get(b), [4]int{0, 1, 6, 7}), i32x4Splat(0xff)))
		k.V128Store(get(sp), uint32(1024+16*c), wg.V128Or(get(a), wg.I32x4Shl(get(a), i32(16))))
	}
	// Bytes 32c..32c+31 of the quants (c = 0..3): sub-block 2c in the low
	// nibbles, 2c+1 in the high ones; elements 0..15 then 16..31.
	for c := range 4 {
		for half := range 2 {
			for j := range p {
				k.Set(hi[j], wg.V128Load(get(p[j]), uint32(16+32*c+16*half)))
				k.Set(lo[j], wg.V128And(get(hi[j]), i8x16Splat(15)))
				k.Set(hi[j], wg.V128And(wg.I16x8ShrU(get(hi[j]), i32(4)), i8x16Splat(15)))
			}
			k.storeQuads(sp, uint32(128*(2*c)+64*half), lo)
			k.storeQuads(sp, uint32(128*(2*c+1)+64*half), hi)
		}
	}
	storeDDmin(k, p, sp, ex, a, u)
}

// decodeScaleMinK decodes the Q4_K super-blocks p into scratch at sp, or
// with fifth Q5_K's (the same but for the fifth bits, qh at 16, and the
// quants after them).
func decodeScaleMinK(k kernel, p [4]wg.Local, sp wg.Local, fifth bool) {
	scm, u, v0, v1, lo, hi := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	sl, sh := k.Local(wg.V128), k.Local(wg.V128)
	c, pc, dst := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	const ex = 8 * 256
	qs := uint32(16)
	var qh [2]wg.Local // Q5_K's fifth bits of elements 0..15 and 16..31
	if fifth {
		qs += 32
		qh = [2]wg.Local{k.Local(wg.V128), k.Local(wg.V128)}
	}
	for j := range p {
		// Scales in bytes 0..7 of scm, mins in 8..15; the scales
		// go through memory to be splat in the loop.
		k.unpackScalesK4(scm, u, p[j])
		k.V128Store(get(sp), ex+160, get(scm))
		storeMins(k, sp, ex+uint32(32*j), scm)
		// Bytes 32c..32c+31 of the quants: sub-block 2c in the low
		// nibbles (chunk 2c), 2c+1 in the high ones (chunk 2c+1).
		k.Set(pc, get(p[j]))
		k.Set(dst, wg.I32Add(get(sp), i32(int32(64*j))))
		if fifth {
			k.Set(qh[0], wg.V128Load(get(p[j]), 16))
			k.Set(qh[1], wg.V128Load(get(p[j]), 32))
		}
		k.forRange(c, i32(0), i32(4), 1, func() {
			k.Set(sl, wg.I16x8Splat(wg.I32Load8U(wg.I32Add(get(sp), wg.I32Shl(get(c), i32(1))), ex+160)))
			k.Set(sh, wg.I16x8Splat(wg.I32Load8U(wg.I32Add(get(sp), wg.I32Shl(get(c), i32(1))), ex+161)))
			k.Set(v0, wg.V128Load(get(pc), qs))
			k.Set(v1, wg.V128Load(get(pc), qs+16))
			for half, v := range []wg.Local{v0, v1} {
				k.Set(lo, wg.V128And(get(v), i8x16Splat(15)))
				k.Set(hi, wg.V128And(wg.I16x8ShrU(get(v), i32(4)), i8x16Splat(15)))
				if fifth {
					// Bit 2c of qh[l] is worth 16 in element l of sub-block
					// 2c, bit 2c+1 in that of 2c+1: qh moves right by two
					// for the next c.
					h := get(qh[half])
					k.Set(lo, wg.V128Or(get(lo), wg.V128And(wg.I8x16Shl(h, i32(4)), i8x16Splat(16))))
					k.Set(hi, wg.V128Or(get(hi), wg.V128And(wg.I8x16Shl(h, i32(3)), i8x16Splat(16))))
					k.Set(qh[half], wg.I8x16ShrU(h, i32(2)))
				}
				off := uint32(32 * half)
				k.V128Store(get(dst), off, wg.I16x8Mul(wg.I16x8ExtendLowI8x16U(get(lo)), get(sl)))
				k.V128Store(get(dst), off+16, wg.I16x8Mul(wg.I16x8ExtendHighI8x16U(get(lo)), get(sl)))
				k.V128Store(get(dst), 256+off, wg.I16x8Mul(wg.I16x8ExtendLowI8x16U(get(hi)), get(sh)))
				k.V128Store(get(dst), 256+off+16, wg.I16x8Mul(wg.I16x8ExtendHighI8x16U(get(hi)), get(sh)))
			}
			k.Set(pc, wg.I32Add(get(pc), i32(32)))
			k.Set(dst, wg.I32Add(get(dst), i32(512)))
		})
	}
	storeDDmin(k, p, sp, ex, v0, u)
}

// minsFinish is the float part of the K-quants with mins (Q4_K, Q5_K,
// Q2_K): the pure-Go float32(d·dx·isum) - float32(dmin·dx·msum), msum =
// Σ_i m_i·bsums[i] per row over the sixteen block sums, from the extras
// at ex: row j's sixteen mins as int16 at 32j (Q4_K's and Q5_K's eight
// each twice), then d and dmin as f32x4 at 128 and 144.
func minsFinish(k kernel, res, isum, ex, d, bs wg.Local) {
	dd := k.Local(wg.V128)
	msum := k.blockSumDots(ex, bs)
	k.Set(dd, wg.V128Load32Splat(get(d), 0))
	a := wg.F32x4Mul(wg.F32x4Mul(wg.V128Load(get(ex), 128), get(dd)), wg.F32x4ConvertI32x4S(get(isum)))
	b := wg.F32x4Mul(wg.F32x4Mul(wg.V128Load(get(ex), 144), get(dd)), wg.F32x4ConvertI32x4S(get(msum)))
	k.Set(res, wg.F32x4Add(get(res), wg.F32x4Sub(a, b)))
}

// emitMatMulQ6K emits matmul_q6_k; with relaxed SIMD its quants (0..63)
// stay bytes, in quads (matmulType.quads6K).
func emitMatMulQ6K(m *wg.Module, relaxed bool) {
	if relaxed {
		emitMatMul(m, matmulType{name: MatMulQ6_K, blockBytes: q6KBlockBytes, chunks: 8, extraBytes: 4*32 + 16, quads6K: true,
			decode: decodeQ6KQuads, finish: q6KQuadsFinish})
		return
	}
	emitMatMul(m, matmulType{name: MatMulQ6_K, blockBytes: q6KBlockBytes, chunks: 8, extraBytes: 16,
		decode: func(k kernel, p [4]wg.Local, sp wg.Local) {
			la, lb, hb, q, sc := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
			h, g, pq, dst := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
			for j := range p {
				// Half h, then g, the low or high 16 of each 32: elements
				// 128h+32i+16g.. (chunk 4h+i, vectors 2g and 2g+1) of
				// sub-block 8h+2i+g, from ql at 64h+16g (+32 for i odd),
				// qh at 128+32h+16g (bits 2i, 2i+1).
				k.forRange(h, i32(0), i32(2), 1, func() {
					k.forRange(g, i32(0), i32(2), 1, func() {
						k.Set(pq, wg.I32Add(get(p[j]), wg.I32Add(wg.I32Shl(get(h), i32(6)), wg.I32Shl(get(g), i32(4)))))
						k.Set(la, wg.V128Load(get(pq), 0))
						k.Set(lb, wg.V128Load(get(pq), 32))
						k.Set(hb, wg.V128Load(wg.I32Sub(get(pq), wg.I32Shl(get(h), i32(5))), 128))
						k.Set(dst, wg.I32Add(get(sp), wg.I32Add(wg.I32Shl(get(h), i32(10)), wg.I32Add(wg.I32Shl(get(g), i32(5)), i32(int32(64*j))))))
						mask4, mask2 := i8x16Splat(0x0f), i8x16Splat(0x30)
						quants := [4]wg.Expr{
							wg.V128Or(wg.V128And(get(la), mask4), wg.V128And(wg.I8x16Shl(get(hb), i32(4)), mask2)),
							wg.V128Or(wg.V128And(get(lb), mask4), wg.V128And(wg.I8x16Shl(get(hb), i32(2)), mask2)),
							wg.V128Or(wg.I8x16ShrU(get(la), i32(4)), wg.V128And(get(hb), mask2)),
							wg.V128Or(wg.I8x16ShrU(get(lb), i32(4)), wg.V128And(wg.I8x16ShrU(get(hb), i32(2)), mask2)),
						}
						for i, qe := range quants {
							k.Set(q, wg.I8x16Sub(qe, i8x16Splat(32)))
							// Scale 8h+2i+g: at 192 + (pq - p - 16g)/8 + g
							// + 2i = 192 + 8h + g + 2i.
							k.Set(sc, wg.I16x8Splat(wg.I32Load8S(wg.I32Add(get(p[j]), wg.I32Add(wg.I32Shl(get(h), i32(3)), get(g))), uint32(192+2*i))))
							off := uint32(256 * i)
							k.V128Store(get(dst), off, wg.I16x8Mul(wg.I16x8ExtendLowI8x16S(get(q)), get(sc)))
							k.V128Store(get(dst), off+16, wg.I16x8Mul(wg.I16x8ExtendHighI8x16S(get(q)), get(sc)))
						}
					})
				})
			}
			t := k.Local(wg.V128)
			k.Set(t, gatherHalf(p, 208))
			k.V128Store(get(sp), 8*256, f16ToF32(t))
		},
		finish: func(k kernel, res, isum, ex, d, _ wg.Local) {
			dd := wg.F32x4Mul(wg.V128Load(get(ex), 0), wg.V128Load32Splat(get(d), 0))
			k.Set(res, wg.F32x4Add(get(res), wg.F32x4Mul(dd, wg.F32x4ConvertI32x4S(get(isum)))))
		},
	})
}

// storeMins stores the mins of a row's unpacked scales (bytes 8..15 of
// scm, unpackScalesK4) at sp+off as minsFinish reads them: sixteen int16,
// each min twice (lanes 2i and 2i+1 are sub-block i's).
func storeMins(k kernel, sp wg.Local, off uint32, scm wg.Local) {
	var m0, m1 [16]uint8
	for l := range 8 {
		m0[2*l], m0[2*l+1] = uint8(8+l/2), 16
		m1[2*l], m1[2*l+1] = uint8(12+l/2), 16
	}
	k.V128Store(get(sp), off, wg.I8x16Shuffle(get(scm), f32x4Zero(), m0))
	k.V128Store(get(sp), off+16, wg.I8x16Shuffle(get(scm), f32x4Zero(), m1))
}

// storeDDmin stores the four rows' d and dmin (the fp16 pair at offset 0
// of each super-block p[j]) as f32x4 at sp+ex+128 and sp+ex+144, as
// minsFinish reads them; t and u are scratch.
func storeDDmin(k kernel, p [4]wg.Local, sp wg.Local, ex uint32, t, u wg.Local) {
	var e wg.Expr = f32x4Zero()
	for j := range p {
		e = wg.V128Load32Lane(get(p[j]), 0, e, uint8(j))
	}
	k.Set(t, e)
	k.Set(u, wg.I32x4Shl(get(t), i32(16)))
	k.V128Store(get(sp), ex+128, f16ToF32(u))
	k.Set(u, wg.V128And(get(t), i32x4Splat(0xffff0000)))
	k.V128Store(get(sp), ex+144, f16ToF32(u))
}

// decodeQ6KQuads decodes the Q6_K super-blocks p into scratch at sp for
// matmulType.quads6K: the quants (0..63) as quads, the scales as i16x8
// per sub-block, then q6KQuadsFinish's extras at sp + 1280: row j's
// sixteen 32·sc as int16 at 32j, and d as f32x4 at 128.
func decodeQ6KQuads(k kernel, p [4]wg.Local, sp wg.Local) {
	const ex = 16*64 + 16*16
	var v [4]wg.Local
	for j := range v {
		v[j] = k.Local(wg.V128)
	}
	a, sb := k.Local(wg.V128), k.Local(wg.I32)
	for j := range p {
		k.Set(a, wg.V128Load(get(p[j]), 192))
		k.V128Store(get(sp), ex+uint32(32*j), wg.I16x8Shl(wg.I16x8ExtendLowI8x16S(get(a)), i32(5)))
		k.V128Store(get(sp), ex+uint32(32*j+16), wg.I16x8Shl(wg.I16x8ExtendHighI8x16S(get(a)), i32(5)))
	}
	// Sub-block s's scales of the four rows: scale s of row j in the high
	// byte of lanes 2j and 2j+1 (the 16 bits at 191 + s), then each lane
	// shifted right by 8, sign-extending.
	k.forRange(sb, i32(0), i32(16), 1, func() {
		var e wg.Expr = f32x4Zero()
		for j := range p {
			for l := range 2 {
				e = wg.V128Load16Lane(wg.I32Add(get(p[j]), get(sb)), 191, e, uint8(2*j+l))
			}
		}
		k.V128Store(wg.I32Add(get(sp), wg.I32Shl(get(sb), i32(4))), 1024, wg.I16x8ShrS(e, i32(8)))
	})
	// Half h, then g, the low or high 16 of each 32, then i = 0, 1:
	// elements 128h+32i+16g.. of sub-block 8h+2i+g, from the low nibbles
	// of ql at 64h+16g+32i and bits 2i, 2i+1 of qh at 128+32h+16g, and
	// elements 64 further of sub-block 8h+2i+4+g, from the high nibbles and
	// bits 2i+4, 2i+5 (as in the plain kernel). Looping over i too made
	// the kernel 7% slower.
	h, g, o, oh, dst := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	k.forRange(h, i32(0), i32(2), 1, func() {
		k.forRange(g, i32(0), i32(2), 1, func() {
			k.Set(o, wg.I32Add(wg.I32Shl(get(h), i32(6)), wg.I32Shl(get(g), i32(4))))
			k.Set(oh, wg.I32Sub(get(o), wg.I32Shl(get(h), i32(5))))
			k.Set(dst, wg.I32Add(get(sp), wg.I32Shl(wg.I32Add(wg.I32Shl(get(h), i32(3)), get(g)), i32(6))))
			for i := range 2 {
				for high := range 2 {
					for j := range p {
						l := wg.V128Load(wg.I32Add(get(p[j]), get(o)), uint32(32*i))
						hb := wg.V128Load(wg.I32Add(get(p[j]), get(oh)), 128)
						if i == 1 {
							hb = wg.I8x16ShrU(hb, i32(2))
						}
						if high == 0 {
							k.Set(v[j], wg.V128Or(wg.V128And(l, i8x16Splat(0x0f)), wg.V128And(wg.I8x16Shl(hb, i32(4)), i8x16Splat(0x30))))
						} else {
							k.Set(v[j], wg.V128Or(wg.I8x16ShrU(l, i32(4)), wg.V128And(hb, i8x16Splat(0x30))))
						}
					}
					k.storeQuads(dst, uint32(128*i+256*high), v)
				}
			}
		})
	})
	k.Set(a, gatherHalf(p, 208))
	k.V128Store(get(sp), ex+128, f16ToF32(a))
}

// q6KQuadsFinish is matmul_q6_k's float part with relaxed SIMD: the
// integer sum less Σ_s 32·sc_s·bsums[s] per row (the offset 32 the quants
// kept), then the plain kernel's float32(d·dx)·float32(isum).
func q6KQuadsFinish(k kernel, res, isum, ex, d, bs wg.Local) {
	osum := k.blockSumDots(ex, bs)
	dd := wg.F32x4Mul(wg.V128Load(get(ex), 128), wg.V128Load32Splat(get(d), 0))
	k.Set(res, wg.F32x4Add(get(res), wg.F32x4Mul(dd, wg.F32x4ConvertI32x4S(wg.I32x4Sub(get(isum), get(osum))))))
}

// blockSumDots returns a local whose lane j it sets to Σ_i w_i·bs_i over
// row j's sixteen int16 weights w at ex + 32j and the activation's sixteen
// block sums bs.
func (k kernel) blockSumDots(ex, bs wg.Local) wg.Local {
	b0, b1, dst := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	var rs [4]wg.Local
	for j := range rs {
		rs[j] = k.Local(wg.V128)
	}
	k.Set(b0, wg.V128Load(get(bs), 0))
	k.Set(b1, wg.V128Load(get(bs), 16))
	for j := range rs {
		k.Set(rs[j], wg.I32x4Add(
			wg.I32x4DotI16x8S(wg.V128Load(get(ex), uint32(32*j)), get(b0)),
			wg.I32x4DotI16x8S(wg.V128Load(get(ex), uint32(32*j+16)), get(b1))))
	}
	k.transposeSum(dst, wg.I32x4Add, rs)
	return dst
}
