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
const scratchHead = 16

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
	// then the four rows' scales of sub-block c as an i32x4 at sp + 1024 +
	// 16c; the extras follow at sp + 1152. A vector's sub-block sums (one
	// relaxed dot per sixteen products, the same int16 bound as byteOffset's)
	// are multiplied by the scales and added up: Σ_c sc_c·Σ q·x, the integer
	// the plain kernel computes.
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
	k := kernel{m.Func(typ.name, []wg.ValType{wg.I32, wg.I32, wg.I32, wg.I32, wg.I32}, nil)}
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
	bx, bd, bbs := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	res, isum := k.Local(wg.V128), k.Local(wg.V128)
	var x [4]wg.Local
	for i := range x {
		x[i] = k.Local(wg.V128)
	}
	s := [2]wg.Local{k.Local(wg.V128), k.Local(wg.V128)}
	c, cp, cq, cx := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)

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
	// loadX sets x to the 32 activation quants at cx as int16.
	loadX := func(cx wg.Local) {
		for i := range x {
			k.Set(x[i], wg.V128Load8x8S(get(cx), uint32(8*i)))
		}
	}
	// pairSum(a, b) = [a0+a1, a2+a3, b0+b1, b2+b3]: twice, the transpose
	// of transposeSum.
	pairSum := func(a, b wg.Local) wg.Expr {
		return wg.I32x4Add(pairs32(get(a), get(b), [4]int{0, 2, 4, 6}), pairs32(get(a), get(b), [4]int{1, 3, 5, 7}))
	}
	// blockSums sets isum to the four rows' integer sums of the block of
	// decoded quants at sp with the activation quants at bx, lane j row
	// j's, as transposeSum would (pairSum twice). V8 schedules a basic
	// block's loads first and its arithmetic late: the sixteen vectors of
	// four rows loaded at once would not fit in the registers beside the
	// activations, and it would spill. So rows 0 and 1 go first and their
	// pair sums through memory (the scratch's head), a store V8 must make
	// before it loads rows 2 and 3; in the K-quants the two pairs are a
	// loop around the chunks' loop (which reloads the activations).
	// Measured: with the store, 49 GFLOP/s for Q8_0; with the pairs a
	// loop (which V8 unrolls), 43; all sixteen at once, 38.
	u, prev, pr := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.I32)
	quadSums := func(q, x wg.Local, from, to int) { // u = the pair sums of quads from..to-1 at q with the activations at x
		for i := from; i < to; i++ {
			dot := wg.I16x8RelaxedDotI8x16I7x16S(wg.V128Load32Splat(get(x), uint32(4*i)), wg.V128Load(get(q), uint32(16*i)))
			if i > from {
				dot = wg.I16x8Add(get(u), dot)
			}
			k.Set(u, dot)
		}
	}
	blockSums := func(sp, bx wg.Local) {
		if typ.quads6K {
			k.Set(isum, f32x4Zero())
			k.Set(cq, get(sp))
			k.Set(cx, get(bx))
			// A sub-block at a time (two or four at a time ran at 0.9
			// and 0.7 times the speed), its two halves widened apart.
			k.forRange(c, i32(0), i32(16), 1, func() {
				for i := range 2 {
					quadSums(cq, cx, 2*i, 2*i+2)
					sc := wg.V128Load(wg.I32Add(get(sp), wg.I32Shl(get(c), i32(4))), 1024)
					k.Set(isum, wg.I32x4Add(get(isum), wg.I32x4DotI16x8S(get(u), sc)))
				}
				k.Set(cq, wg.I32Add(get(cq), i32(64)))
				k.Set(cx, wg.I32Add(get(cx), i32(16)))
			})
			return
		}
		if typ.quadsK {
			k.Set(isum, f32x4Zero())
			k.Set(cq, get(sp))
			k.Set(cx, get(bx))
			k.forRange(c, i32(0), i32(8), 1, func() {
				quadSums(cq, cx, 0, 8)
				k.Set(isum, wg.I32x4Add(get(isum), wg.I32x4Mul(wg.I32x4ExtaddPairwiseI16x8S(get(u)),
					wg.V128Load(wg.I32Add(get(sp), wg.I32Shl(get(c), i32(4))), 1024))))
				k.Set(cq, wg.I32Add(get(cq), i32(128)))
				k.Set(cx, wg.I32Add(get(cx), i32(32)))
			})
			return
		}
		if typ.byteOffset != 0 { // quads
			shift := int32(3) // offset·Σx: 8·Σx, or 16·Σx
			if typ.byteOffset == 16 {
				shift = 4
				quadSums(sp, bx, 0, 4)
				k.Set(prev, wg.I32x4ExtaddPairwiseI16x8S(get(u)))
				quadSums(sp, bx, 4, 8)
			} else {
				quadSums(sp, bx, 0, 8)
			}
			sum := wg.I32x4ExtaddPairwiseI16x8S(get(u))
			if typ.byteOffset == 16 {
				sum = wg.I32x4Add(get(prev), sum)
			}
			k.Set(isum, wg.I32x4Sub(sum, wg.I32x4Shl(wg.V128Load32Splat(get(bbs), 0), i32(shift))))
			return
		}
		if typ.chunks == 1 {
			loadX(bx)
			k.Set(cp, get(sp))
			dots(cp, false)
			k.V128Store(get(scratch), 0, pairSum(s[0], s[1]))
			k.Set(cp, wg.I32Add(get(sp), i32(128)))
			dots(cp, false)
			k.Set(u, pairSum(s[0], s[1]))
			k.Set(prev, wg.V128Load(get(scratch), 0))
			k.Set(isum, pairSum(prev, u))
			return
		}
		k.Set(cp, get(sp))
		k.forRange(pr, i32(0), i32(2), 1, func() {
			k.Set(s[0], f32x4Zero())
			k.Set(s[1], f32x4Zero())
			k.Set(cq, get(cp))
			k.Set(cx, get(bx))
			k.forRange(c, i32(0), i32(typ.chunks), 1, func() {
				loadX(cx)
				dots(cq, true)
				k.Set(cq, wg.I32Add(get(cq), i32(256)))
				k.Set(cx, wg.I32Add(get(cx), i32(32)))
			})
			// In the first pass isum is garbage, in the second the sums.
			k.Set(u, pairSum(s[0], s[1]))
			k.Set(isum, pairSum(prev, u))
			k.Set(prev, get(u))
			k.Set(cp, wg.I32Add(get(cp), i32(128)))
		})
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
			k.forRange(t, i32(0), get(tokens), 1, func() {
				k.resumeSums(cb, pa, res)
				k.Set(sp, wg.I32Add(get(scratch), i32(scratchHead)))
				k.Set(bx, get(px))
				k.Set(bd, get(pd))
				k.Set(bbs, get(pbs))
				k.Loop(func() {
					blockSums(sp, bx)
					k.Set(cp, wg.I32Add(get(sp), i32(typ.quantBytes())))
					typ.finish(k, res, isum, cp, bd, bbs)
					k.Set(sp, wg.I32Add(get(sp), i32(perBlock)))
					k.Set(bx, wg.I32Add(get(bx), i32(elems)))
					k.Set(bd, wg.I32Add(get(bd), i32(4)))
					k.Set(bbs, wg.I32Add(get(bbs), i32(2*elems/16)))
					k.BrIf(0, wg.I32LtU(get(sp), get(spEnd)))
				})
				k.keepSums(ce, blocks, pa, func() { k.storeRows(po, res, r, rows) }, res)
				k.Set(px, wg.I32Add(get(px), get(qStride)))
				k.Set(pd, wg.I32Add(get(pd), get(dStride)))
				k.Set(pbs, wg.I32Add(get(pbs), get(dStride)))
				k.Set(po, wg.I32Add(get(po), get(outStride)))
				k.Set(pa, wg.I32Add(get(pa), i32(16)))
			})
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
