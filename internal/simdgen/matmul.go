package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// The batched kernels (matmul_*): a tile of rows times several encoded
// activation vectors (a block of prompt tokens), each weight block decoded
// once for all of them.
//
// Rows go in groups of four, as in the matrix–vector kernels, and their
// blocks a chunk at a time: the chunk's blocks of the four rows are decoded
// into scratch memory as int16 quants in element order (the quant offset
// subtracted, and for the K-quants multiplied by their sub-block scale:
// both exact), with the float scales as f32x4 of the four rows. Then every
// vector in turn takes the integer dot product of each block with its own
// quants (sign-extended as loaded), the four rows' sums in the lanes of one
// i32x4, and adds the block's float part to its f32x4 of the four rows
// (lane j: row j), the pure-Go expression in the pure-Go order. Between
// chunks a vector's sums wait in memory; after the last they are stored to
// its outputs. So each output element is the same chain of float additions
// as in the matrix–vector kernel, block after block: the same bits.
//
// The integer work per vector is the matrix–vector kernel's; what the batch
// saves is the decoding (nibbles, fifth bits, scales, fp16 scales), done
// once per block rather than once per vector, and the weights' reads:
// measured on 2048×768 matrices and 32 vectors, 2 to 4 times the
// matrix–vector kernels' throughput. The decoded chunk (up to the scratch
// the Go side gives, 12 KiB) stays in the L1 cache while the vectors go by.
//
// The kernels of one chunk per block and the relaxed ones (matmulType.paired)
// take the vectors two at a time: each decoded vector of quants is loaded
// once and dotted with both vectors' activations, which halves the loads
// of weights, the bottleneck once the decoding is shared. Each vector's
// sums are the same integers added in the same order, so the bits do not
// change. Measured in Chromium 156 (tools/wasmbrowser, BenchmarkMatMulDown:
// 2048×5632, 32 vectors, an AMD EPYC with AVX2, 2026-12-05), GFLOP/s one
// vector at a time → two: relaxed Q4_K 51 → 60, Q4_0 40 → 47, Q8_0 32 →
// 36, Q6_K 49 → 49; plain Q8_0 34.4 → 37.5, Q4_0 29 → 32, Q4_1 28 → 31,
// Q5_0 33 → 36.

// The batch descriptor: the kernels' last parameter points to these i32
// fields (byte offsets), which the Go side fills.
const (
	BatchTokens       = 0  // how many vectors
	BatchOutStride    = 4  // bytes from one vector's outputs to the next's
	BatchQ            = 8  // vector 0's int8 quants
	BatchD            = 12 // vector 0's float32 block scales
	BatchBsums        = 16 // vector 0's int16 block sums (Q8_K), or float32 s (Q8_1)
	BatchQStride      = 20 // bytes from one vector's quants to the next's
	BatchDStride      = 24 // bytes from one vector's scales to the next's, and block sums
	BatchScratch      = 28 // the decoded weights
	BatchScratchBytes = 32 // its size, at least MatMulMinScratch
	BatchAcc          = 36 // 64 bytes per vector: the sums between chunks
	BatchPacked       = 40 // not 0: the matrix is packed (see groupRows)
	BatchDescBytes    = 44
)

// scratchHead is the bytes at the start of the scratch that the kernels
// use for themselves (see blockSums), before the decoded blocks.
const scratchHead = 32

// MatMulMinScratch is the least scratch a batched kernel needs: one
// decoded Q4_K super-block of four rows.
const MatMulMinScratch = scratchHead + 8*256 + q4KExtraBytes

// matmulType is what a batched kernel knows of its weight type.
type matmulType struct {
	name       string
	blockBytes int32 // bytes of a weight block
	chunks     int32 // 32-element chunks per block: 1, or 8 for the K-quants
	extraBytes int32 // scratch per block after the decoded quants
	// decode decodes the blocks at p[0..3] (four rows) into scratch at sp:
	// chunk c's quants at sp + 256c, row j's 32 as four i16x8 at +64j
	// (elements in order), then the extra bytes at sp + 256·chunks.
	decode func(k kernel, p [4]wg.Local, sp wg.Local)
	// finish emits res += the block's float part, from isum (lane j: row
	// j's integer sum), the decoded extras at ex, the token's block scale
	// at d and (Q8_K, Q8_1) its block sums at bs.
	finish func(k kernel, res, isum, ex, d, bs wg.Local)
	// byteOffset, if not 0 (relaxed SIMD, one chunk per block of 4- or
	// 5-bit quants only): decode stores the four rows' quants as bytes,
	// unsigned (0..15 or 0..31, in i7's range) and without their offset,
	// which is byteOffset (8 or 16),
	// four elements of each row at a time: the 16 bytes at sp + 16i are
	// elements 4i..4i+3 of rows 0, 1, 2 and 3 (quads); the extras follow at
	// sp + 128. A vector's four activations 4i.. splat over the four rows
	// then make one i16x8.relaxed_dot per sixteen products, the four rows'
	// sums come out in their lanes with no transposing, and byteOffset·Σx
	// (the activation's block sums, which the Go side puts where Q8_K's
	// block sums go) is taken off. Each int16 lane adds eight pairs of
	// products of at most 15·128: at most 30720, no overflow. Quants of
	// five bits (byteOffset 16: 0..31) are widened to int32 every four
	// relaxed dots instead (four pairs of at most 31·128: 31744).
	byteOffset int32
	// quadsK (relaxed SIMD, Q4_K): decode stores each of the eight 32-element
	// sub-blocks as quads, as byteOffset does a block (128 bytes each, sub-block
	// c at sp + 128c), the nibbles not multiplied by their sub-block's scale,
	// then the four rows' scales of sub-block c as an i16x8 (row j's in
	// lanes 2j and 2j+1) at sp + 1024 + 16c; the extras follow at sp +
	// 1152. A vector's sub-block sums (one relaxed dot per sixteen
	// products, the same int16 bound as byteOffset's) are widened by
	// i32x4.dot_i16x8_s with the scales, which applies them at once, and
	// added up: Σ_c sc_c·Σ q·x, the integer the plain kernel computes.
	quadsK bool
	// quads6K (relaxed SIMD, Q6_K): decode stores each of the sixteen
	// 16-element sub-blocks as quads (64 bytes each, sub-block s at sp +
	// 64s), the quants 0..63 without their offset 32 nor their scale, then
	// the four rows' scales of sub-block s as an i16x8 (row j's in lanes 2j
	// and 2j+1) at sp + 1024 + 16s; the extras follow at sp + 1280. Two
	// relaxed dots add four products of at most 63·128 in each int16 lane
	// (32256: no overflow), and i32x4.dot_i16x8_s with the scales widens
	// them and applies the scale at once: Σ_s sc_s·Σ q·x, from which finish
	// takes Σ_s 32·sc_s·bsums[s].
	quads6K bool
}

// paired reports whether two vectors at a time go through the decoded
// blocks (the types of one chunk per block, and the relaxed kernels'
// quads): each decoded vector of weights is loaded once for both.
func (typ matmulType) paired() bool {
	return typ.byteOffset != 0 || typ.quadsK || typ.quads6K || typ.chunks == 1
}

// quantBytes is the scratch a block's decoded quants take.
func (typ matmulType) quantBytes() int32 {
	switch {
	case typ.byteOffset != 0:
		return 128
	case typ.quadsK:
		return 8*128 + 8*16
	case typ.quads6K:
		return 16*64 + 16*16
	}
	return typ.chunks * 256
}

// emitMatMul emits a batched kernel with parameters (out, w, rows, blocks,
// batch): for every vector t of the batch descriptor and row r,
// out[t·outStride + 4r] = the matrix–vector kernel's result.
func emitMatMul(m *wg.Module, typ matmulType) {
	k := kernel{Func: m.Func(typ.name, []wg.ValType{wg.I32, wg.I32, wg.I32, wg.I32, wg.I32}, nil)}
	out, w, rows, blocks, desc := k.Param(0), k.Param(1), k.Param(2), k.Param(3), k.Param(4)
	field := func(off uint32) wg.Expr { return wg.I32Load(get(desc), off) }
	tokens, outStride, q0, d0, bs0 := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	qStride, dStride := k.Local(wg.I32), k.Local(wg.I32)
	scratch, acc := k.Local(wg.I32), k.Local(wg.I32)
	k.Set(tokens, field(BatchTokens))
	k.Set(outStride, field(BatchOutStride))
	k.Set(q0, field(BatchQ))
	k.Set(d0, field(BatchD))
	k.Set(bs0, field(BatchBsums))
	k.Set(qStride, field(BatchQStride))
	k.Set(dStride, field(BatchDStride))
	k.Set(scratch, field(BatchScratch))
	k.Set(acc, field(BatchAcc))

	perBlock := typ.quantBytes() + typ.extraBytes
	elems := typ.chunks * 32
	// kb: blocks per chunk, as many as the scratch holds.
	kb, rb, r, step, packed := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	k.Set(packed, field(BatchPacked))
	k.Set(kb, wg.I32DivU(wg.I32Sub(field(BatchScratchBytes), i32(scratchHead)), i32(perBlock)))
	k.Set(rb, wg.I32Mul(get(blocks), i32(typ.blockBytes)))
	var p [4]wg.Local
	for j := range p {
		p[j] = k.Local(wg.I32)
	}
	cb, ce, sp, spEnd := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	t, px, pd, pbs, po, pa := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	// The vectors' own locals: two vectors go through the blocks together
	// where paired (one load of each decoded quad serves both).
	var bx, bd, bbs, res, isum, us [2]wg.Local
	for i := range 2 {
		bx[i], bd[i], bbs[i] = k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
		res[i], isum[i], us[i] = k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	}
	var x [4]wg.Local
	for i := range x {
		x[i] = k.Local(wg.V128)
	}
	s := [2]wg.Local{k.Local(wg.V128), k.Local(wg.V128)}
	var x2 [4]wg.Local // the second vector's, where paired
	for i := range x2 {
		x2[i] = k.Local(wg.V128)
	}
	s2 := [2]wg.Local{k.Local(wg.V128), k.Local(wg.V128)}
	c, cp, cq, cx, cx1 := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)

	// dots sets (or adds to, with add) s[0] and s[1] the integer dot
	// products of the decoded chunks at cp and cp+64 (two rows) with the
	// activation quants in x.
	dots := func(cp wg.Local, add bool) {
		for j := range 2 {
			d := func(i int) wg.Expr {
				return wg.I32x4DotI16x8S(wg.V128Load(get(cp), uint32(64*j+16*i)), get(x[i]))
			}
			sum := wg.I32x4Add(wg.I32x4Add(d(0), d(1)), wg.I32x4Add(d(2), d(3)))
			if add {
				sum = wg.I32x4Add(get(s[j]), sum)
			}
			k.Set(s[j], sum)
		}
	}
	// loadX sets dst (x, or x2) to the 32 activation quants at cx as int16.
	loadX := func(dst [4]wg.Local, cx wg.Local) {
		for i := range dst {
			k.Set(dst[i], wg.V128Load8x8S(get(cx), uint32(8*i)))
		}
	}
	// pairSum(a, b) = [a0+a1, a2+a3, b0+b1, b2+b3]: twice, the transpose
	// of transposeSum.
	pairSum := func(a, b wg.Local) wg.Expr {
		return wg.I32x4Add(pairs32(get(a), get(b), [4]int{0, 2, 4, 6}), pairs32(get(a), get(b), [4]int{1, 3, 5, 7}))
	}
	// blockSums sets isum[i] to the four rows' integer sums of the block
	// of decoded quants at sp with the activation quants at xs[i] (one
	// vector, or two where typ.paired), lane j row j's, as transposeSum
	// would (pairSum twice). V8 schedules a basic block's loads first and
	// its arithmetic late: the sixteen vectors of four rows loaded at once
	// would not fit in the registers beside the activations, and it would
	// spill. So rows 0 and 1 go first and their pair sums through memory
	// (the scratch's head), a store V8 must make before it loads rows 2
	// and 3; in the K-quants the two pairs are a loop around the chunks'
	// loop (which reloads the activations). Measured: with the store, 49
	// GFLOP/s for Q8_0; with the pairs a loop (which V8 unrolls), 43; all
	// sixteen at once, 38.
	u, prev, pr, qv, sc := us[0], k.Local(wg.V128), k.Local(wg.I32), k.Local(wg.V128), k.Local(wg.V128)
	// quadSums sets us[i] to the pair sums of quads from..to-1 at q with
	// the activations at xs[i]: each quad loaded once for the vectors.
	quadSums := func(q wg.Local, xs []wg.Local, from, to int) {
		for i := from; i < to; i++ {
			k.Set(qv, wg.V128Load(get(q), uint32(16*i)))
			for v, x := range xs {
				dot := wg.I16x8RelaxedDotI8x16I7x16S(wg.V128Load32Splat(get(x), uint32(4*i)), get(qv))
				if i > from {
					dot = wg.I16x8Add(get(us[v]), dot)
				}
				k.Set(us[v], dot)
			}
		}
	}
	blockSums := func(sp wg.Local, xs []wg.Local) {
		if typ.quads6K || typ.quadsK {
			size, subBlocks := 64, 16 // bytes of a sub-block's quads
			if typ.quadsK {
				size, subBlocks = 128, 8
			}
			cxs := []wg.Local{cx, cx1}[:len(xs)]
			for v := range xs {
				k.Set(isum[v], f32x4Zero())
				k.Set(cxs[v], get(xs[v]))
			}
			k.Set(cq, get(sp))
			// A sub-block at a time (for Q6_K, two or four at a time ran
			// at 0.9 and 0.7 times the speed), each scale (i16x8: row j's
			// in lanes 2j and 2j+1) applied in the widening, which Q6_K's
			// int16 bound needs every two quads.
			group := 8
			if typ.quads6K {
				group = 2
			}
			k.forRange(c, i32(0), i32(int32(subBlocks)), 1, func() {
				k.Set(sc, wg.V128Load(wg.I32Add(get(sp), wg.I32Shl(get(c), i32(4))), uint32(subBlocks*size)))
				for g := 0; g < size/16; g += group {
					quadSums(cq, cxs, g, g+group)
					for v := range xs {
						k.Set(isum[v], wg.I32x4Add(get(isum[v]), wg.I32x4DotI16x8S(get(us[v]), get(sc))))
					}
				}
				k.Set(cq, wg.I32Add(get(cq), i32(int32(size))))
				for v := range xs {
					k.Set(cxs[v], wg.I32Add(get(cxs[v]), i32(int32(size/4))))
				}
			})
			return
		}
		if typ.byteOffset != 0 { // quads
			shift := int32(3) // offset·Σx: 8·Σx, or 16·Σx
			if typ.byteOffset == 16 {
				shift = 4
			}
			var sums [2]wg.Expr
			if typ.byteOffset == 16 {
				quadSums(sp, xs, 0, 4)
				for v := range xs {
					k.Set(isum[v], wg.I32x4ExtaddPairwiseI16x8S(get(us[v])))
				}
				quadSums(sp, xs, 4, 8)
				for v := range xs {
					sums[v] = wg.I32x4Add(get(isum[v]), wg.I32x4ExtaddPairwiseI16x8S(get(us[v])))
				}
			} else {
				quadSums(sp, xs, 0, 8)
				for v := range xs {
					sums[v] = wg.I32x4ExtaddPairwiseI16x8S(get(us[v]))
				}
			}
			for v := range xs {
				k.Set(isum[v], wg.I32x4Sub(sums[v], wg.I32x4Shl(wg.V128Load32Splat(get(bbs[v]), 0), i32(shift))))
			}
			return
		}
		bx := xs[0]
		if typ.chunks == 1 && len(xs) == 2 {
			// Both vectors' activations in registers, each decoded vector
			// loaded once for the two; the rows' pair sums through the
			// scratch's head as below, the two vectors' side by side.
			loadX(x, xs[0])
			loadX(x2, xs[1])
			for half := range 2 {
				k.Set(cp, wg.I32Add(get(sp), i32(int32(128*half))))
				for j := range 2 {
					for i := range 4 {
						k.Set(qv, wg.V128Load(get(cp), uint32(64*j+16*i)))
						for v, xv := range [2][4]wg.Local{x, x2} {
							acc := [2][2]wg.Local{s, s2}[v][j]
							dot := wg.I32x4DotI16x8S(get(qv), get(xv[i]))
							if i > 0 {
								dot = wg.I32x4Add(get(acc), dot)
							}
							k.Set(acc, dot)
						}
					}
				}
				if half == 0 {
					k.V128Store(get(scratch), 0, pairSum(s[0], s[1]))
					k.V128Store(get(scratch), 16, pairSum(s2[0], s2[1]))
					continue
				}
				for v, acc := range [2][2]wg.Local{s, s2} {
					k.Set(u, pairSum(acc[0], acc[1]))
					k.Set(prev, wg.V128Load(get(scratch), uint32(16*v)))
					k.Set(isum[v], pairSum(prev, u))
				}
			}
			return
		}
		if typ.chunks == 1 {
			loadX(x, bx)
			k.Set(cp, get(sp))
			dots(cp, false)
			k.V128Store(get(scratch), 0, pairSum(s[0], s[1]))
			k.Set(cp, wg.I32Add(get(sp), i32(128)))
			dots(cp, false)
			k.Set(u, pairSum(s[0], s[1]))
			k.Set(prev, wg.V128Load(get(scratch), 0))
			k.Set(isum[0], pairSum(prev, u))
			return
		}
		k.Set(cp, get(sp))
		k.forRange(pr, i32(0), i32(2), 1, func() {
			k.Set(s[0], f32x4Zero())
			k.Set(s[1], f32x4Zero())
			k.Set(cq, get(cp))
			k.Set(cx, get(bx))
			k.forRange(c, i32(0), i32(typ.chunks), 1, func() {
				loadX(x, cx)
				dots(cq, true)
				k.Set(cq, wg.I32Add(get(cq), i32(256)))
				k.Set(cx, wg.I32Add(get(cx), i32(32)))
			})
			// In the first pass isum is garbage, in the second the sums.
			k.Set(u, pairSum(s[0], s[1]))
			k.Set(isum[0], pairSum(prev, u))
			k.Set(prev, get(u))
			k.Set(cp, wg.I32Add(get(cp), i32(128)))
		})
	}
	// vectors emits the products of the decoded blocks with n vectors
	// (1, or 2 where typ.paired), from the one whose quants are at px
	// (the next's a qStride on), and advances px, pd, pbs, po and pa past
	// them.
	vectors := func(n int) {
		k.resumeSums(cb, pa, res[:n]...)
		k.Set(sp, wg.I32Add(get(scratch), i32(scratchHead)))
		for v := range n {
			if v == 0 {
				k.Set(bx[0], get(px))
				k.Set(bd[0], get(pd))
				k.Set(bbs[0], get(pbs))
				continue
			}
			k.Set(bx[v], wg.I32Add(get(bx[v-1]), get(qStride)))
			k.Set(bd[v], wg.I32Add(get(bd[v-1]), get(dStride)))
			k.Set(bbs[v], wg.I32Add(get(bbs[v-1]), get(dStride)))
		}
		k.Loop(func() {
			blockSums(sp, bx[:n])
			k.Set(cp, wg.I32Add(get(sp), i32(typ.quantBytes())))
			for v := range n {
				typ.finish(k, res[v], isum[v], cp, bd[v], bbs[v])
			}
			k.Set(sp, wg.I32Add(get(sp), i32(perBlock)))
			for v := range n {
				k.Set(bx[v], wg.I32Add(get(bx[v]), i32(elems)))
				k.Set(bd[v], wg.I32Add(get(bd[v]), i32(4)))
				k.Set(bbs[v], wg.I32Add(get(bbs[v]), i32(2*elems/16)))
			}
			k.BrIf(0, wg.I32LtU(get(sp), get(spEnd)))
		})
		for v := range n {
			k.keepSums(ce, blocks, pa, func() { k.storeRows(po, res[v], r, rows) }, res[v])
			k.Set(px, wg.I32Add(get(px), get(qStride)))
			k.Set(pd, wg.I32Add(get(pd), get(dStride)))
			k.Set(pbs, wg.I32Add(get(pbs), get(dStride)))
			k.Set(po, wg.I32Add(get(po), get(outStride)))
			k.Set(pa, wg.I32Add(get(pa), i32(16)))
		}
	}

	k.forRange(r, i32(0), get(rows), 4, func() {
		k.groupRows(p, step, w, r, rows, rb, packed, typ.blockBytes)
		k.Set(cb, i32(0))
		k.Loop(func() {
			k.chunkEnd(ce, cb, kb, blocks)
			// Decode blocks cb..ce-1 of the four rows.
			k.Set(sp, wg.I32Add(get(scratch), i32(scratchHead)))
			k.Set(spEnd, wg.I32Add(get(sp), wg.I32Mul(wg.I32Sub(get(ce), get(cb)), i32(perBlock))))
			k.Loop(func() {
				typ.decode(k, p, sp)
				for j := range p {
					k.Set(p[j], wg.I32Add(get(p[j]), get(step)))
				}
				k.Set(sp, wg.I32Add(get(sp), i32(perBlock)))
				k.BrIf(0, wg.I32LtU(get(sp), get(spEnd)))
			})
			// Every token's products with them.
			k.Set(px, wg.I32Add(get(q0), wg.I32Mul(get(cb), i32(elems))))
			k.Set(pd, wg.I32Add(get(d0), wg.I32Shl(get(cb), i32(2))))
			k.Set(pbs, wg.I32Add(get(bs0), wg.I32Mul(get(cb), i32(2*elems/16))))
			k.Set(po, wg.I32Add(get(out), wg.I32Shl(get(r), i32(2))))
			k.Set(pa, get(acc))
			if typ.paired() {
				k.forRange(t, i32(0), wg.I32Sub(get(tokens), i32(1)), 2, func() { vectors(2) })
				k.If(wg.I32LtS(get(t), get(tokens)), func() { vectors(1) })
			} else {
				k.forRange(t, i32(0), get(tokens), 1, func() { vectors(1) })
			}
			k.Set(cb, get(ce))
			k.BrIf(0, wg.I32LtS(get(cb), get(blocks)))
		})
	})
}

// The batched kernels take a group of four rows a chunk at a time (of
// columns, or of blocks), and between chunks keep each vector's sums in
// memory (the batch descriptor's BatchAcc): chunkEnd, resumeSums and
// keepSums are the steps their chunk loops share.

// chunkEnd sets end to start + size, but at most limit: the end of the
// chunk that starts at start.
func (k kernel) chunkEnd(end, start, size, limit wg.Local) {
	k.Set(end, wg.I32Add(get(start), get(size)))
	k.Set(end, wg.Select(get(end), get(limit), wg.I32LtS(get(end), get(limit))))
}

// resumeSums sets sums to zero in a row group's first chunk (start 0),
// else to what the previous chunk kept at pa (keepSums).
func (k kernel) resumeSums(start, pa wg.Local, sums ...wg.Local) {
	k.IfElse(wg.I32Eq(get(start), i32(0)), func() {
		for _, s := range sums {
			k.Set(s, f32x4Zero())
		}
	}, func() {
		for i, s := range sums {
			k.Set(s, wg.V128Load(get(pa), uint32(16*i)))
		}
	})
}

// keepSums stores sums at pa, 16 bytes each, for the next chunk when this
// one is not the group's last (end < limit); after the last, last emits
// the results.
func (k kernel) keepSums(end, limit, pa wg.Local, last func(), sums ...wg.Local) {
	k.IfElse(wg.I32LtS(get(end), get(limit)), func() {
		for i, s := range sums {
			k.V128Store(get(pa), uint32(16*i), get(s))
		}
	}, last)
}

// storeRows stores the lanes of res for rows r..r+3 at dst, only those of
// existing rows (r+j < rows).
func (k kernel) storeRows(dst, res, r, rows wg.Local) {
	k.IfElse(wg.I32GeS(wg.I32Sub(get(rows), get(r)), i32(4)), func() {
		k.V128Store(get(dst), 0, get(res))
	}, func() {
		k.V128Store32Lane(get(dst), 0, get(res), 0)
		for j := 1; j < 3; j++ {
			k.If(wg.I32LtS(wg.I32Add(get(r), i32(int32(j))), get(rows)), func() {
				k.V128Store32Lane(get(dst), uint32(4*j), get(res), uint8(j))
			})
		}
	})
}
