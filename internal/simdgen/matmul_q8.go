package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// The batched kernels of the types dotted with Q8_0 activations (Q8_0,
// Q4_0, Q5_0; matmul.go has the framework): one 32-element chunk per
// block.

// The Q8_0-activation types: one chunk per block; the extras are the four
// rows' fp16 scales as f32x4, and the float part is the pure-Go
// sum += float32(float32(d·xd)·float32(isum)).

func q8Finish(k kernel, res, isum, ex, d, _ wg.Local) {
	scale := wg.F32x4Mul(wg.V128Load(get(ex), 0), wg.V128Load32Splat(get(d), 0))
	k.Set(res, wg.F32x4Add(get(res), wg.F32x4Mul(scale, wg.F32x4ConvertI32x4S(get(isum)))))
}

// storeQuads stores v[0..3] (rows 0..3, sixteen byte quants each) at
// sp+off as quads: the 16 bytes at sp+off+16i are lane i (bytes 4i..4i+3)
// of v[0], v[1], v[2] and v[3], a 4×4 transpose of 32-bit lanes.
func (k kernel) storeQuads(sp wg.Local, off uint32, v [4]wg.Local) {
	t := [4]wg.Local{k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)}
	k.Set(t[0], pairs32(get(v[0]), get(v[1]), [4]int{0, 4, 1, 5})) // a0 b0 a1 b1
	k.Set(t[1], pairs32(get(v[0]), get(v[1]), [4]int{2, 6, 3, 7})) // a2 b2 a3 b3
	k.Set(t[2], pairs32(get(v[2]), get(v[3]), [4]int{0, 4, 1, 5})) // c0 d0 c1 d1
	k.Set(t[3], pairs32(get(v[2]), get(v[3]), [4]int{2, 6, 3, 7})) // c2 d2 c3 d3
	k.V128Store(get(sp), off, pairs32(get(t[0]), get(t[2]), [4]int{0, 1, 4, 5}))
	k.V128Store(get(sp), off+16, pairs32(get(t[0]), get(t[2]), [4]int{2, 3, 6, 7}))
	k.V128Store(get(sp), off+32, pairs32(get(t[1]), get(t[3]), [4]int{0, 1, 4, 5}))
	k.V128Store(get(sp), off+48, pairs32(get(t[1]), get(t[3]), [4]int{2, 3, 6, 7}))
}

// q8Scales stores the fp16 scales at offset 0 of the rows p as f32x4 at
// sp + off.
func q8Scales(k kernel, p [4]wg.Local, sp wg.Local, off uint32) {
	h := k.Local(wg.V128)
	k.Set(h, gatherHalf(p, 0))
	k.V128Store(get(sp), off, f16ToF32(h))
}

func emitMatMulQ8_0(m *wg.Module) {
	emitMatMul(m, matmulType{name: MatMulQ8_0, blockBytes: q8_0BlockBytes, chunks: 1, extraBytes: 16,
		decode: func(k kernel, p [4]wg.Local, sp wg.Local) {
			for j := range p {
				for i := range 4 {
					k.V128Store(get(sp), uint32(64*j+16*i), wg.V128Load8x8S(get(p[j]), uint32(2+8*i)))
				}
			}
			q8Scales(k, p, sp, 256)
		},
		finish: q8Finish,
	})
}

// nibbles stores the 32 4-bit quants of the 16 bytes in v (element i in
// the low nibble of byte i, i+16 in the high one) at dst as four i16x8 in
// element order, each lane plus high[i] (if not nil) minus offset.
func (k kernel) nibbles(dst wg.Local, off uint32, v, lo, hi wg.Local, high []wg.Expr, offset uint16) {
	k.Set(lo, wg.V128And(get(v), i8x16Splat(15)))
	k.Set(hi, wg.V128And(wg.I16x8ShrU(get(v), i32(4)), i8x16Splat(15)))
	q := [4]wg.Expr{
		wg.I16x8ExtendLowI8x16U(get(lo)), wg.I16x8ExtendHighI8x16U(get(lo)),
		wg.I16x8ExtendLowI8x16U(get(hi)), wg.I16x8ExtendHighI8x16U(get(hi)),
	}
	for i := range q {
		e := q[i]
		if high != nil {
			e = wg.V128Or(e, high[i])
		}
		if offset != 0 {
			e = wg.I16x8Sub(e, i16x8Splat(offset))
		}
		k.V128Store(get(dst), off+uint32(16*i), e)
	}
}

// decodeNibbles4 decodes the 4-bit quants at offset qs of the blocks p
// (Q4_0, Q4_1) into scratch at sp, minus offset.
func decodeNibbles4(k kernel, p [4]wg.Local, sp wg.Local, qs uint32, offset uint16) {
	v, lo, hi := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	for j := range p {
		k.Set(v, wg.V128Load(get(p[j]), qs))
		k.nibbles(sp, uint32(64*j), v, lo, hi, nil, offset)
	}
}

// decodeNibbles5 decodes the 5-bit quants of the blocks p (Q5_0, Q5_1),
// their low bits at offset qs and their fifth bits at qh, into scratch at
// sp, minus offset.
func decodeNibbles5(k kernel, p [4]wg.Local, sp wg.Local, qh, qs uint32, offset uint16) {
	v, lo, hi, b0, b1 := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	// Bit e of qh is the 5th bit of element e; lane l of elements 8i..
	// takes bit 8i+l: the masked bits compared with the mask itself give 0
	// or -1, of which 16 is kept.
	var m0, m1 [8]uint16
	for l := range m0 {
		m0[l], m1[l] = 1<<l, 1<<(8+l)
	}
	fifth := func(b wg.Local, mask [8]uint16) wg.Expr {
		mv := wg.I16x8Const(mask)
		return wg.V128And(wg.I16x8Eq(wg.V128And(get(b), mv), mv), i16x8Splat(16))
	}
	for j := range p {
		k.Set(b0, wg.I16x8Splat(wg.I32Load(get(p[j]), qh)))
		k.Set(b1, wg.I16x8Splat(wg.I32ShrU(wg.I32Load(get(p[j]), qh), i32(16))))
		k.Set(v, wg.V128Load(get(p[j]), qs))
		high := []wg.Expr{fifth(b0, m0), fifth(b0, m1), fifth(b1, m0), fifth(b1, m1)}
		k.nibbles(sp, uint32(64*j), v, lo, hi, high, offset)
	}
}

// emitMatMulQ4_0 emits matmul_q4_0; with relaxed SIMD its nibbles stay
// bytes, in quads (matmulType.byteOffset).
func emitMatMulQ4_0(m *wg.Module, relaxed bool) {
	if relaxed {
		emitMatMul(m, matmulType{name: MatMulQ4_0, blockBytes: q4_0BlockBytes, chunks: 1, extraBytes: 16, byteOffset: 8,
			decode: func(k kernel, p [4]wg.Local, sp wg.Local) {
				var lo, hi [4]wg.Local
				for j := range p {
					lo[j], hi[j] = k.Local(wg.V128), k.Local(wg.V128)
					k.Set(hi[j], wg.V128Load(get(p[j]), 2))
					k.Set(lo[j], wg.V128And(get(hi[j]), i8x16Splat(15)))
					k.Set(hi[j], wg.V128And(wg.I16x8ShrU(get(hi[j]), i32(4)), i8x16Splat(15)))
				}
				k.storeQuads(sp, 0, lo)
				k.storeQuads(sp, 64, hi)
				q8Scales(k, p, sp, 128)
			},
			finish: q8Finish,
		})
		return
	}
	emitMatMul(m, matmulType{name: MatMulQ4_0, blockBytes: q4_0BlockBytes, chunks: 1, extraBytes: 16,
		decode: func(k kernel, p [4]wg.Local, sp wg.Local) {
			decodeNibbles4(k, p, sp, 2, 8)
			q8Scales(k, p, sp, 256)
		},
		finish: q8Finish,
	})
}

// emitMatMulQ5_0 emits matmul_q5_0; with relaxed SIMD its quants (0..31)
// stay bytes, in quads (matmulType.byteOffset), their fifth bits picked
// per byte as the relaxed matvec_q5_0 picks them (fifthBits).
func emitMatMulQ5_0(m *wg.Module, relaxed bool) {
	if relaxed {
		emitMatMul(m, matmulType{name: MatMulQ5_0, blockBytes: q5_0BlockBytes, chunks: 1, extraBytes: 16, byteOffset: 16,
			decode: func(k kernel, p [4]wg.Local, sp wg.Local) {
				var lo, hi [4]wg.Local
				qh := k.Local(wg.V128)
				for j := range p {
					lo[j], hi[j] = k.Local(wg.V128), k.Local(wg.V128)
					k.Set(qh, wg.V128Load32Splat(get(p[j]), 2))
					k.Set(hi[j], wg.V128Load(get(p[j]), 6))
					k.Set(lo[j], wg.V128Or(wg.V128And(get(hi[j]), i8x16Splat(15)), fifthBits(qh, 0)))
					k.Set(hi[j], wg.V128Or(wg.V128And(wg.I16x8ShrU(get(hi[j]), i32(4)), i8x16Splat(15)), fifthBits(qh, 2)))
				}
				k.storeQuads(sp, 0, lo)
				k.storeQuads(sp, 64, hi)
				q8Scales(k, p, sp, 128)
			},
			finish: q8Finish,
		})
		return
	}
	emitMatMul(m, matmulType{name: MatMulQ5_0, blockBytes: q5_0BlockBytes, chunks: 1, extraBytes: 16,
		decode: func(k kernel, p [4]wg.Local, sp wg.Local) {
			decodeNibbles5(k, p, sp, 2, 6, 16)
			q8Scales(k, p, sp, 256)
		},
		finish: q8Finish,
	})
}

// The Q8_K-activation types: eight chunks per super-block, each
// sub-block's scale multiplied into its quants.
