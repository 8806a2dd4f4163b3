package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// The batched kernels of the 2-bit K-quants, Q2_K and Q3_K (emitMatMul's
// framework; they have no matrix–vector kernel, so a single vector takes
// the pure-Go one). Both have sixteen sub-blocks of 16 per super-block,
// each with its own scale: a 32-element chunk of scratch holds two, each
// multiplied by its scale as Q6_K's are. The products fit int16 exactly:
// Q2_K's quants 0..3 times scales 0..15, Q3_K's -4..3 times -32..31 (at
// most 128 in magnitude). The integer sums are then the pure-Go ones:
//
//   - Q2_K: isum = Σ_k sc_k·Σ q·x and msum = Σ_k m_k·bsums[k], the float
//     part float32(d·dx·isum) - float32(dmin·dx·msum): minsFinish, the
//     extras laid out as Q4_K's (each min once, where Q4_K's are twice);
//   - Q3_K: a quant q (low bits | high bit<<2) is decoded as q-4, so
//     Σ_k sc_k·Σ (q-4)·x is the pure-Go Σ_k sc_k·(Σ q·x - 4·bsums[k]), and
//     the float part float32(d·dx·isum) is Q8_0's (q8Finish).
//
// Both take less scratch per block than Q4_K (MatMulMinScratch).
//
// BenchmarkMatMul (2048×768, 200 iterations, wasm under Node on a shared
// 2-core machine), in GFLOP/s with 2, 4, 8 and 32 vectors: Q2_K 19, 31,
// 38, 50 and Q3_K 13, 23, 32, 47, where the pure-Go dotRows they replace
// made 1.8, 2.5, 2.9, 3.2 and 2.3, 3.0, 3.7, 4.3.

const (
	q2KBlockBytes = 84  // scales [16], qs [64], d and dmin fp16
	q3KBlockBytes = 110 // hmask [32], qs [64], scales [12], d fp16
	// q2KExtraBytes: the rows' sixteen mins as int16, then d and dmin as
	// f32x4 (minsFinish).
	q2KExtraBytes = 4*32 + 16 + 16
)

func emitMatMulQ2K(m *wg.Module) {
	emitMatMul(m, matmulType{name: MatMulQ2_K, blockBytes: q2KBlockBytes, chunks: 8, extraBytes: q2KExtraBytes,
		decode: func(k kernel, p [4]wg.Local, sp wg.Local) {
			const ex = 8 * 256
			u, t := k.Local(wg.V128), k.Local(wg.V128)
			// Byte k of the scales: sc_k in the low nibble, m_k in the high.
			scales := func(j, pj, scv wg.Local) {
				k.Set(u, wg.V128Load(get(pj), 0))
				k.Set(scv, wg.V128And(get(u), i8x16Splat(15)))
				k.Set(t, wg.I8x16ShrU(get(u), i32(4)))
				mins := wg.I32Add(get(sp), wg.I32Shl(get(j), i32(5)))
				k.V128Store(mins, ex, wg.I16x8ExtendLowI8x16U(get(t)))
				k.V128Store(mins, ex+16, wg.I16x8ExtendHighI8x16U(get(t)))
			}
			k.decodeTwoBits(p, sp, 16, scales, func(low wg.Expr, _, _ wg.Local, _ int) wg.Expr { return low })
			k.Set(t, gatherHalf(p, 80))
			k.V128Store(get(sp), ex+128, f16ToF32(t))
			k.Set(t, gatherHalf(p, 82))
			k.V128Store(get(sp), ex+144, f16ToF32(t))
		},
		finish: minsFinish,
	})
}

func emitMatMulQ3K(m *wg.Module) {
	emitMatMul(m, matmulType{name: MatMulQ3_K, blockBytes: q3KBlockBytes, chunks: 8, extraBytes: 16,
		decode: func(k kernel, p [4]wg.Local, sp wg.Local) {
			u, t := k.Local(wg.V128), k.Local(wg.V128)
			hm := [2]wg.Local{k.Local(wg.V128), k.Local(wg.V128)}
			scales := func(_, pj, scv wg.Local) {
				k.unpackScalesQ3K(scv, u, pj)
				k.Set(hm[0], wg.V128Load(get(pj), 0))
				k.Set(hm[1], wg.V128Load(get(pj), 16))
			}
			// Element 128h+32i+l's high bit is bit 4h+i of hmask[l].
			quant := func(low wg.Expr, h, i wg.Local, half int) wg.Expr {
				bit := wg.I8x16ShrU(get(hm[half]), wg.I32Add(wg.I32Shl(get(h), i32(2)), get(i)))
				high := wg.V128And(wg.I8x16Shl(bit, i32(2)), i8x16Splat(4))
				return wg.I8x16Sub(wg.V128Or(low, high), i8x16Splat(4))
			}
			k.decodeTwoBits(p, sp, 32, scales, quant)
			k.Set(t, gatherHalf(p, 108))
			k.V128Store(get(sp), 8*256, f16ToF32(t))
		},
		finish: q8Finish,
	})
}

// decodeTwoBits decodes four rows' Q2_K or Q3_K super-blocks at p into
// scratch at sp as emitMatMul lays them out, each quant times its
// sub-block's scale. Element 128h+32i+l (h < 2, i < 4, l < 32) is in bits
// 2i, 2i+1 of qs[32h+l], qs at byte qsOffset of the block: chunk 4h+i, its
// elements l < 16 of sub-block 8h+2i, the others of 8h+2i+1. For row j
// (its block at pj), scales(j, pj, scv) sets the bytes of scv to the
// sixteen sub-blocks' scales as int8 (and decodes what else the row has);
// quant(low, h, i, half) is the int8 quants of elements 128h+32i+16half..
// from their low bits, the bytes of low.
//
// Rows, halves and chunks are loops, not unrolled: the module's size is a
// budget, and the decoding is done once for all the vectors. Unrolled
// rows and chunks made each kernel 3 to 5 KB larger; unrolled chunks
// alone, 0.5 to 0.8 KB larger and 10 to 15% faster with two vectors, no
// faster with 32 (a prompt block's default).
func (k kernel) decodeTwoBits(p [4]wg.Local, sp wg.Local, qsOffset uint32,
	scales func(j, pj, scv wg.Local), quant func(low wg.Expr, h, i wg.Local, half int) wg.Expr) {
	scv, sc, s, q := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	v := [2]wg.Local{k.Local(wg.V128), k.Local(wg.V128)}
	j, pj, h, i, pq, dst, dq := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	k.forRange(j, i32(0), i32(4), 1, func() {
		// pj = p[j], the rows being a loop.
		k.Set(pj, wg.Select(get(p[0]), wg.Select(get(p[1]), wg.Select(get(p[2]), get(p[3]),
			wg.I32Eq(get(j), i32(2))), wg.I32Eq(get(j), i32(1))), wg.I32Eq(get(j), i32(0))))
		scales(j, pj, scv)
		k.Set(pq, get(pj))
		k.Set(dst, wg.I32Add(get(sp), wg.I32Shl(get(j), i32(6))))
		k.forRange(h, i32(0), i32(2), 1, func() {
			k.Set(sc, wg.I16x8ExtendLowI8x16S(get(scv))) // sub-blocks 8h..8h+7
			k.Set(v[0], wg.V128Load(get(pq), qsOffset))
			k.Set(v[1], wg.V128Load(get(pq), qsOffset+16))
			k.Set(dq, get(dst))
			k.forRange(i, i32(0), i32(4), 1, func() {
				for half := range v {
					low := wg.I8x16ShrU(get(v[half]), wg.I32Shl(get(i), i32(1)))
					k.Set(q, quant(wg.V128And(low, i8x16Splat(3)), h, i, half))
					k.Set(s, lane16(get(sc), half))
					off := uint32(32 * half)
					k.V128Store(get(dq), off, wg.I16x8Mul(wg.I16x8ExtendLowI8x16S(get(q)), get(s)))
					k.V128Store(get(dq), off+16, wg.I16x8Mul(wg.I16x8ExtendHighI8x16S(get(q)), get(s)))
				}
				k.Set(sc, rotateBytes(sc, 4)) // the next chunk's two scales to lanes 0, 1
				k.Set(dq, wg.I32Add(get(dq), i32(256)))
			})
			k.Set(scv, rotateBytes(scv, 8))
			k.Set(pq, wg.I32Add(get(pq), i32(32)))
			k.Set(dst, wg.I32Add(get(dst), i32(4*256)))
		})
	})
}

// unpackScalesQ3K sets t to the sixteen 6-bit scales of the Q3_K
// super-block at p, minus 32, as int8, unpacked as the pure-Go q3KScales
// does from the 12 bytes s at p+96: the low 4 bits of scale k are the low
// nibble of s[k] for k < 8 and the high nibble of s[k-8] otherwise, its
// top 2 bits are bits 2(k/4), 2(k/4)+1 of s[8+k%4]. u is scratch.
func (k kernel) unpackScalesQ3K(t, u, p wg.Local) {
	// The 16 bytes that end the block (the load ends at it, not past the
	// row): s[i] is byte 2+i.
	k.Set(u, wg.V128Load(get(p), q3KBlockBytes-16))
	var lo, top01, top23, top [16]uint8
	for i := range 8 {
		lo[i], lo[8+i] = uint8(2+i), uint8(16+2+i)
		top[i], top[8+i] = uint8(i), uint8(16+8+i)
	}
	for i := range 4 {
		top01[i], top01[4+i] = uint8(10+i), uint8(16+10+i)
		top23[8+i], top23[12+i] = uint8(10+i), uint8(16+10+i)
	}
	low := wg.I8x16Shuffle(wg.V128And(get(u), i8x16Splat(15)), wg.I8x16ShrU(get(u), i32(4)), lo)
	// s[8+k%4] shifted to bring bits 2(k/4), 2(k/4)+1 to bits 4, 5: left
	// by 4 or 2 for k < 8 (top01's bytes 0..7), by 0 or right by 2 for
	// k ≥ 8 (top23's bytes 8..15).
	a := wg.I8x16Shuffle(wg.I8x16Shl(get(u), i32(4)), wg.I8x16Shl(get(u), i32(2)), top01)
	b := wg.I8x16Shuffle(get(u), wg.I8x16ShrU(get(u), i32(2)), top23)
	high := wg.V128And(wg.I8x16Shuffle(a, b, top), i8x16Splat(0x30))
	k.Set(t, wg.I8x16Sub(wg.V128Or(low, high), i8x16Splat(32)))
}

// lane16 broadcasts 16-bit lane i of v to all eight lanes.
func lane16(v wg.Expr, i int) wg.Expr {
	var s [16]uint8
	for l := range s {
		s[l] = uint8(2*i + l%2)
	}
	return wg.I8x16Shuffle(v, v, s)
}
