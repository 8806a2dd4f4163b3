package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// emitMatVecQ6K emits ggml_vec_dot_q6_K_q8_K as the pure-Go dotQ6K
// computes it: per super-block the integer isum = Σ_k sc_k·Σ (q-32)·x over
// the 16 sub-blocks k (the pure-Go Σ q·x - 32·bsums[k] is the same number),
// then float32(d·dx·isum) added to the sum.
//
// With relaxed SIMD the quants stay 0..63 (in i7's range) for
// i16x8.relaxed_dot with the activation bytes as loaded, and 32·x is
// taken off in int16, once per activation vector for the four rows: each
// lane's Σ q·x - Σ 32·x is at most 2·63·128 + 2·32·128 in magnitude, and
// i32x4.dot_i16x8_s with the sub-block's scale splat widens and scales
// those sums at once (extadd and i32x4.mul before: in Chromium 2048×768
// from 13.4 to 14.5 GFLOP/s, streamed from RAM 4.9 to 5.1 GB/s).
func emitMatVecQ6K(m *wg.Module, relaxed bool) {
	emitQ8KKernel(m, MatVecQ6_K, q6KBlockBytes, false, func(k kernel, p [4]wg.Local, qx, dx, _, _ wg.Local) wg.Expr {
		var scv, isum [4]wg.Local // per row: the int8 scales in loop order (rotated as it goes), Σ
		var pc [4]wg.Local        // per row: ql + 64h + 16g
		for j := range p {
			scv[j], isum[j], pc[j] = k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.I32)
		}
		t, la, lb, hb, q := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
		x := make([]wg.Local, 8)
		for i := range x {
			x[i] = k.Local(wg.V128)
		}
		mask4, mask2, bias := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
		h, g, cq := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
		isumV, sc := k.Local(wg.V128), k.Local(wg.V128)
		k.Set(mask4, i8x16Splat(0x0f))
		k.Set(mask2, i8x16Splat(0x30))
		k.Set(bias, i8x16Splat(32))
		for j := range p {
			// Iteration (h, g) uses the scales of sub-blocks 8h+g+2i,
			// i = 0..3: put them in bytes 4(2h+g)+i.
			k.Set(scv[j], wg.I8x16Shuffle(wg.V128Load(get(p[j]), 192), f32x4Zero(),
				[16]uint8{0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15}))
			k.Set(isum[j], f32x4Zero())
			k.Set(pc[j], get(p[j]))
		}
		k.Set(cq, get(qx))
		// Loops, not unrolled (see the Q4_K kernel): half h of the
		// super-block, then g, the low or high 16 of each 32.
		k.forRange(h, i32(0), i32(2), 1, func() {
			k.forRange(g, i32(0), i32(2), 1, func() {
				// Elements 128h+16g+l+32i (l < 16) of sub-block 8h+g+2i,
				// for i = 0..3, whose scales are in bytes 0..3 of scv.
				for i := range 4 {
					if relaxed { // x[2i]: the bytes; x[2i+1]: their pair sums times 32
						k.Set(x[2*i], wg.V128Load(get(cq), uint32(32*i)))
						k.Set(x[2*i+1], wg.I16x8RelaxedDotI8x16I7x16S(get(x[2*i]), get(bias)))
						continue
					}
					k.extendX(x[2*i:2*i+2], cq, uint32(32*i), t)
				}
				for j := range p {
					if relaxed { // the four scales as int16
						k.Set(sc, wg.I16x8ExtendLowI8x16S(get(scv[j])))
					} else {
						k.Set(sc, wg.I32x4ExtendLowI16x8S(wg.I16x8ExtendLowI8x16S(get(scv[j]))))
					}
					k.Set(la, wg.V128Load(get(pc[j]), 0))
					k.Set(lb, wg.V128Load(get(pc[j]), 32))
					k.Set(hb, wg.V128Load(wg.I32Sub(get(pc[j]), wg.I32Shl(get(h), i32(5))), 128))
					quants := [4]wg.Expr{
						wg.V128Or(wg.V128And(get(la), get(mask4)), wg.V128And(wg.I8x16Shl(get(hb), i32(4)), get(mask2))),
						wg.V128Or(wg.V128And(get(lb), get(mask4)), wg.V128And(wg.I8x16Shl(get(hb), i32(2)), get(mask2))),
						wg.V128Or(wg.I8x16ShrU(get(la), i32(4)), wg.V128And(get(hb), get(mask2))),
						wg.V128Or(wg.I8x16ShrU(get(lb), i32(4)), wg.V128And(wg.I8x16ShrU(get(hb), i32(2)), get(mask2))),
					}
					for i, qe := range quants {
						if relaxed { // widened and scaled at once
							dot := wg.I16x8Sub(wg.I16x8RelaxedDotI8x16I7x16S(get(x[2*i]), qe), get(x[2*i+1]))
							k.Set(isum[j], wg.I32x4Add(get(isum[j]), wg.I32x4DotI16x8S(dot, lane16(get(sc), i))))
							continue
						}
						k.Set(q, wg.I8x16Sub(qe, get(bias)))
						k.Set(isum[j], wg.I32x4Add(get(isum[j]),
							wg.I32x4Mul(dot16(q, x[2*i:2*i+2]), lane32(get(sc), i))))
					}
					k.Set(scv[j], rotateBytes(scv[j], 4))
					k.Set(pc[j], wg.I32Add(get(pc[j]), i32(16)))
				}
				k.Set(cq, wg.I32Add(get(cq), i32(16)))
			})
			// ql advances 64 per half (32 done), qh 32 (pc-32h above),
			// the activations 128 (32 done).
			for j := range p {
				k.Set(pc[j], wg.I32Add(get(pc[j]), i32(32)))
			}
			k.Set(cq, wg.I32Add(get(cq), i32(96)))
		})
		k.transposeSum(isumV, wg.I32x4Add, isum)
		k.Set(t, gatherHalf(p, 208))
		d := wg.F32x4Mul(f16ToF32(t), wg.V128Load32Splat(get(dx), 0))
		return wg.F32x4Mul(d, wg.F32x4ConvertI32x4S(get(isumV)))
	})
}
