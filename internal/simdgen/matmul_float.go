package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// The batched kernels of the float types (matmul_f32, matmul_f16,
// matmul_bf16): each vector's product with four rows is the
// matrix–vector kernel's, the pure-Go four partial sums of the columns
// ≡ l (mod 4) in lane l of one f32x4 per row, the columns past the last
// multiple of four added to lane 0 one by one, then (s0+s1)+(s2+s3). The
// rows' columns go a chunk at a time: for F16 and BF16 the chunk is first
// decoded into scratch as float32, once for all the vectors (the
// matrix–vector kernel decodes each weight for each vector); F32 rows are
// read where they are, the chunk small enough to stay in the L1 cache
// while the vectors go by. Between chunks a vector's four partial sums
// wait in memory (64 bytes per vector).

// emitMatMulF32 emits MatMulF32.
func emitMatMulF32(m *wg.Module) {
	emitMatMulFloat(m, MatMulF32, 4, nil, nil)
}

// emitMatMulF16 emits MatMulF16.
func emitMatMulF16(m *wg.Module) {
	emitMatMulFloat(m, MatMulF16, 2, f16ToF32, f16ToF32Scalar)
}

// emitMatMulBF16 emits MatMulBF16: a BF16 is the top half of a float32.
func emitMatMulBF16(m *wg.Module) {
	emitMatMulFloat(m, MatMulBF16, 2, func(h wg.Local) wg.Expr { return get(h) },
		func(h wg.Local) wg.Expr { return wg.F32ReinterpretI32(wg.I32Shl(get(h), i32(16))) })
}

// emitMatMulFloat emits a batched float kernel with parameters (out, w,
// rows, cols, batch), the batch descriptor's Q and QStride being the
// vectors' float32 activations. For 16-bit weights (elemBytes 2), decode
// takes four in the high halves of 32-bit lanes (the low halves zero),
// decodeScalar one in the low half of an i32; F32 (elemBytes 4) has none.
func emitMatMulFloat(m *wg.Module, name string, elemBytes int32, decode, decodeScalar func(h wg.Local) wg.Expr) {
	k := kernel{Func: m.Func(name, []wg.ValType{wg.I32, wg.I32, wg.I32, wg.I32, wg.I32}, nil)}
	out, w, rows, cols, desc := k.Param(0), k.Param(1), k.Param(2), k.Param(3), k.Param(4)
	field := func(off uint32) wg.Expr { return wg.I32Load(get(desc), off) }
	tokens, outStride, x0, xStride, scratch, acc := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	k.Set(tokens, field(BatchTokens))
	k.Set(outStride, field(BatchOutStride))
	k.Set(x0, field(BatchQ))
	k.Set(xStride, field(BatchQStride))
	k.Set(scratch, wg.I32Add(field(BatchScratch), i32(scratchHead)))
	k.Set(acc, field(BatchAcc))

	// kc: columns per chunk, a multiple of eight whose four rows of
	// float32 fit in the scratch.
	kc, rb, r := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	k.Set(kc, wg.I32And(wg.I32ShrU(wg.I32Sub(field(BatchScratchBytes), i32(scratchHead)), i32(4)), i32(^7)))
	k.Set(rb, wg.I32Mul(get(cols), i32(elemBytes)))
	var p, wp [4]wg.Local // the rows; their chunk's float32 (F32: in place)
	for j := range p {
		p[j], wp[j] = k.Local(wg.I32), k.Local(wg.I32)
	}
	c0, c1, end, i := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	t, px, po, pa := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	h, wv, res := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	hs, ws := k.Local(wg.I32), k.Local(wg.F32)
	// Two vectors at a time: a[u][j] is vector u's sums of row j. The
	// pure-Go order makes each lane a chain of additions; one vector's
	// four rows are too few chains to hide their latency (26 GFLOP/s),
	// two vectors' eight are enough.
	var a [2][4]wg.Local
	var xv [2]wg.Local
	var xs [2]wg.Local
	for u := range a {
		for j := range a[u] {
			a[u][j] = k.Local(wg.V128)
		}
		xv[u], xs[u] = k.Local(wg.V128), k.Local(wg.F32)
	}
	// vectors emits the products of g vectors (1 or 2) from px on with
	// the chunk's rows.
	vectors := func(g int) {
		xAt := func(u int) wg.Expr {
			return wg.I32Add(wg.I32Add(get(px), wg.I32Mul(get(xStride), i32(int32(u)))), get(i))
		}
		sums := make([]wg.Local, 0, 8) // a[u][j] at pa + 64u + 16j
		for u := range g {
			sums = append(sums, a[u][:]...)
		}
		k.resumeSums(c0, pa, sums...)
		// i is the byte offset of column c from column c0, in the rows'
		// float32 and the vectors'.
		k.forRange(i, i32(0), wg.I32Shl(wg.I32Sub(get(end), get(c0)), i32(2)), 16, func() {
			for u := range g {
				k.Set(xv[u], wg.V128Load(xAt(u), 0))
			}
			for j := range wp {
				k.Set(wv, wg.V128Load(wg.I32Add(get(wp[j]), get(i)), 0))
				for u := range g {
					k.Set(a[u][j], wg.F32x4Add(get(a[u][j]), wg.F32x4Mul(get(wv), get(xv[u]))))
				}
			}
		})
		k.keepSums(c1, cols, pa, func() {
			// The last columns into lane 0, then the sums.
			k.forRange(i, get(i), wg.I32Shl(wg.I32Sub(get(c1), get(c0)), i32(2)), 4, func() {
				for u := range g {
					k.Set(xs[u], wg.F32Load(xAt(u), 0))
				}
				for j := range wp {
					k.Set(ws, wg.F32Load(wg.I32Add(get(wp[j]), get(i)), 0))
					for u := range g {
						k.Set(a[u][j], wg.F32x4ReplaceLane(get(a[u][j]), 0,
							wg.F32Add(wg.F32x4ExtractLane(get(a[u][j]), 0), wg.F32Mul(get(ws), get(xs[u])))))
					}
				}
			})
			for u := range g {
				k.transposeSum(res, wg.F32x4Add, a[u])
				dst := k.Local(wg.I32)
				k.Set(dst, wg.I32Add(get(po), wg.I32Mul(get(outStride), i32(int32(u)))))
				k.storeRows(dst, res, r, rows)
			}
		}, sums...)
		k.Set(px, wg.I32Add(get(px), wg.I32Mul(get(xStride), i32(int32(g)))))
		k.Set(po, wg.I32Add(get(po), wg.I32Mul(get(outStride), i32(int32(g)))))
		k.Set(pa, wg.I32Add(get(pa), i32(int32(64*g))))
	}

	k.forRange(r, i32(0), get(rows), 4, func() {
		k.rowStarts(p, w, r, rows, rb)
		k.Set(c0, i32(0))
		k.Loop(func() {
			k.chunkEnd(c1, c0, kc, cols)
			// end: the chunk's columns taken four at a time.
			k.Set(end, wg.I32And(get(c1), i32(^3)))
			if decode == nil {
				for j := range wp {
					k.Set(wp[j], wg.I32Add(get(p[j]), wg.I32Shl(get(c0), i32(2))))
				}
			} else {
				// Decode columns c0..c1-1 of the four rows: row j's at
				// scratch + 4·kc·j, column c at 4(c-c0) from there.
				for j := range wp {
					k.Set(wp[j], wg.I32Add(get(scratch), wg.I32Shl(wg.I32Mul(get(kc), i32(int32(j))), i32(2))))
					src := func() wg.Expr { return wg.I32Add(get(p[j]), wg.I32Shl(get(i), i32(1))) }
					dst := func() wg.Expr {
						return wg.I32Add(get(wp[j]), wg.I32Shl(wg.I32Sub(get(i), get(c0)), i32(2)))
					}
					k.forRange(i, get(c0), get(end), 4, func() {
						k.Set(h, wg.I32x4Shl(wg.V128Load16x4U(src(), 0), i32(16)))
						k.V128Store(dst(), 0, decode(h))
					})
					k.forRange(i, get(i), get(c1), 1, func() {
						k.Set(hs, wg.I32Load16U(src(), 0))
						k.F32Store(dst(), 0, decodeScalar(hs))
					})
				}
			}
			// Every vector's products with them.
			k.Set(px, wg.I32Add(get(x0), wg.I32Shl(get(c0), i32(2))))
			k.Set(po, wg.I32Add(get(out), wg.I32Shl(get(r), i32(2))))
			k.Set(pa, get(acc))
			k.Set(t, i32(0))
			k.Block(func() {
				k.Loop(func() {
					k.BrIf(1, wg.I32GeS(wg.I32Add(get(t), i32(1)), get(tokens)))
					vectors(2)
					k.Set(t, wg.I32Add(get(t), i32(2)))
					k.Br(0)
				})
			})
			k.If(wg.I32LtS(get(t), get(tokens)), func() { vectors(1) })
			k.Set(c0, get(c1))
			k.BrIf(0, wg.I32LtS(get(c0), get(cols)))
		})
	})
}
