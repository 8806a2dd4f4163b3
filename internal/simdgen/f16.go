package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// The 16-bit float kernels, F16 and BF16: the F32 kernel's four lanes and
// tail (see emitMatVecF32), with each weight decoded to its exact float32
// and x already rounded to the weight type by the Go side, as the pure-Go
// dotF16 and dotBF16 sum them (every product is exact in float32); and the
// decoder of an F16 KV cache's rows.

// emitMatVecF16 emits the F16 kernel.
func emitMatVecF16(m *wg.Module) {
	emitMatVecHalf(m, MatVecF16, f16ToF32, f16ToF32Scalar)
}

// emitMatVecBF16 emits the BF16 kernel: a BF16 is the top half of a float32.
func emitMatVecBF16(m *wg.Module) {
	emitMatVecHalf(m, MatVecBF16, func(h wg.Local) wg.Expr { return get(h) },
		func(h wg.Local) wg.Expr { return wg.F32ReinterpretI32(wg.I32Shl(get(h), i32(16))) })
}

// emitMatVecHalf emits a kernel with parameters (out, w, x, rows, cols) for
// 16-bit weights: decode takes four of them in the high halves of 32-bit
// lanes (the low halves zero), decodeScalar one in an i32.
func emitMatVecHalf(m *wg.Module, name string, decode, decodeScalar func(h wg.Local) wg.Expr) {
	matvec(m, name, 1, false, 0, func(n wg.Expr) wg.Expr { return wg.I32Shl(n, i32(1)) },
		func(k kernel, act []wg.Local, n wg.Local, p [4]wg.Local, _, res wg.Local) {
			x := act[0]
			c, end := k.Local(wg.I32), k.Local(wg.I32) // column index
			x0, x1, h, wv := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
			hs, xs := k.Local(wg.I32), k.Local(wg.F32)
			var acc [4]wg.Local
			for j := range acc {
				acc[j] = k.Local(wg.V128)
				k.Set(acc[j], f32x4Zero())
			}
			xAt := func() wg.Expr { return wg.I32Add(get(x), wg.I32Shl(get(c), i32(2))) }
			wAt := func(j int) wg.Expr { return wg.I32Add(get(p[j]), wg.I32Shl(get(c), i32(1))) }
			addProduct := func(j int, xl wg.Local) {
				k.Set(acc[j], wg.F32x4Add(get(acc[j]), wg.F32x4Mul(decode(h), get(xl))))
			}
			// Eight columns per iteration (one 16-byte load per row), then
			// four, then one.
			k.Set(end, wg.I32And(get(n), i32(^7)))
			k.forRange(c, i32(0), get(end), 8, func() {
				k.Set(x0, wg.V128Load(xAt(), 0))
				k.Set(x1, wg.V128Load(xAt(), 16))
				for j := range acc {
					k.Set(wv, wg.V128Load(wAt(j), 0))
					k.Set(h, halvesHigh(wv, 0))
					addProduct(j, x0)
					k.Set(h, halvesHigh(wv, 4))
					addProduct(j, x1)
				}
			})
			k.Set(end, wg.I32And(get(n), i32(^3)))
			k.forRange(c, get(c), get(end), 4, func() {
				k.Set(x0, wg.V128Load(xAt(), 0))
				for j := range acc {
					k.Set(h, wg.I32x4Shl(wg.V128Load16x4U(wAt(j), 0), i32(16)))
					addProduct(j, x0)
				}
			})
			k.forRange(c, get(c), get(n), 1, func() {
				k.Set(xs, wg.F32Load(xAt(), 0))
				for j := range acc {
					k.Set(hs, wg.I32Load16U(wAt(j), 0))
					prod := wg.F32Mul(decodeScalar(hs), get(xs))
					k.Set(acc[j], wg.F32x4ReplaceLane(get(acc[j]), 0,
						wg.F32Add(wg.F32x4ExtractLane(get(acc[j]), 0), prod)))
				}
			})
			k.transposeSum(res, wg.F32x4Add, acc)
		})
}

// halvesHigh puts the uint16 lanes first..first+3 of v into the high halves
// of four 32-bit lanes, the low halves zero.
func halvesHigh(v wg.Local, first int) wg.Expr {
	// Exactly the interleaving of 16-bit lanes of a zero vector and v, which
	// V8 compiles to one punpcklwd or punpckhwd.
	var s [16]uint8
	for k := range 4 {
		s[4*k], s[4*k+1] = uint8(2*(first+k)), uint8(2*(first+k)+1)
		s[4*k+2], s[4*k+3] = uint8(16+2*(first+k)), uint8(17+2*(first+k))
	}
	return wg.I8x16Shuffle(f32x4Zero(), get(v), s)
}

// f16ToF32 decodes four F16 bit patterns in the high halves of the
// 32-bit lanes of h into exactly the float32 of the pure-Go table: an
// arithmetic shift by 3 puts the exponent and mantissa where float32 has
// them (and copies the sign into the bits the mask clears), which is the
// value scaled by 2^-112, normal and subnormal F16 alike, so one
// multiplication by 2^112 rescales it (float32 multiplication keeps
// subnormals); exponent 31 (Inf, NaN with its payload) then gets all its
// exponent bits set.
func f16ToF32(h wg.Local) wg.Expr {
	mag := wg.F32x4Mul(
		wg.V128And(wg.I32x4ShrS(get(h), i32(3)), i32x4Splat(0x8fffe000)),
		i32x4Splat(0x77800000)) // 2^112
	special := wg.V128And(
		wg.I32x4Eq(wg.V128And(get(h), i32x4Splat(0x7c000000)), i32x4Splat(0x7c000000)),
		i32x4Splat(0x7f800000))
	return wg.V128Or(mag, special)
}

// f16ToF32Finite is f16ToF32 for F16 values known to be finite: the
// three instructions that decode every value but exponent 31 (Inf and NaN,
// which it turns into finite numbers of 65536 and more). The kernels
// whose block scales are F16 (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1) use it in
// their matrix–vector products, which engine/tensor runs only on matrices
// whose block scales it has checked (Matrix.finiteScales): four of their
// some fifty instructions a block. In Chromium 156 (2048×768, relaxed
// kernels) Q4_0 went from 34.9 to 40.2 GFLOP/s, Q4_1 28.5 → 33.0, Q5_0
// 16.9 → 17.9, Q5_1 15.1 → 16.4, Q8_0 19.5 → 20.8; streamed from RAM
// (BenchmarkMatVecStreamed) 4–11% faster.
func f16ToF32Finite(k kernel, h wg.Local) wg.Expr {
	return wg.F32x4Mul(wg.V128And(wg.I32x4ShrS(get(h), i32(3)), k.constant(f16FiniteMask)), k.constant(f16FiniteScale))
}

// f16FiniteMask and f16FiniteScale are f16ToF32Finite's constants: the
// sign, exponent and mantissa bits of a shifted F16, and 2^112.
var f16FiniteMask, f16FiniteScale = bytes32(0x8fffe000), bytes32(0x77800000)

// f16ToF32Scalar is f16ToF32 for one F16 bit pattern in the low half of
// an i32 (where the mask, not the shift, keeps the sign out of the way).
func f16ToF32Scalar(h wg.Local) wg.Expr {
	mag := wg.I32ReinterpretF32(wg.F32Mul(
		wg.F32ReinterpretI32(wg.I32Shl(wg.I32And(get(h), i32(0x7fff)), i32(13))),
		wg.F32Const(0x1p112)))
	sign := wg.I32Shl(wg.I32And(get(h), i32(0x8000)), i32(16))
	special := wg.Select(i32(0x7f800000), i32(0),
		wg.I32Eq(wg.I32And(get(h), i32(0x7c00)), i32(0x7c00)))
	return wg.F32ReinterpretI32(wg.I32Or(wg.I32Or(mag, sign), special))
}

// emitDecodeF16Rows emits DecodeF16Rows (dst, src, rows, cols, stride):
// row r, the cols F16 values at src + 2·r·stride, decoded exactly
// (f16ToF32: the pure-Go table's values, Inf and NaN payloads included) to
// the float32 at dst + 4·r·cols. Attention over an F16 cache decodes a
// chunk of a key/value head's rows so, once for the group of query heads
// that share it, and runs the F32 kernels over it.
func emitDecodeF16Rows(m *wg.Module) {
	k := kernel{Func: m.Func(DecodeF16Rows, []wg.ValType{wg.I32, wg.I32, wg.I32, wg.I32, wg.I32}, nil)}
	dst, src, rows, cols, stride := k.Param(0), k.Param(1), k.Param(2), k.Param(3), k.Param(4)
	r, c, end, d, s := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	wv, h := k.Local(wg.V128), k.Local(wg.V128)
	hs := k.Local(wg.I32)
	k.forRange(r, i32(0), get(rows), 1, func() {
		// Eight values per iteration (one 16-byte load), then four, then one.
		k.Set(d, get(dst))
		k.Set(s, get(src))
		k.Set(end, wg.I32And(get(cols), i32(^7)))
		k.forRange(c, i32(0), get(end), 8, func() {
			k.Set(wv, wg.V128Load(get(s), 0))
			k.Set(h, halvesHigh(wv, 0))
			k.V128Store(get(d), 0, f16ToF32(h))
			k.Set(h, halvesHigh(wv, 4))
			k.V128Store(get(d), 16, f16ToF32(h))
			k.Set(s, wg.I32Add(get(s), i32(16)))
			k.Set(d, wg.I32Add(get(d), i32(32)))
		})
		k.Set(end, wg.I32And(get(cols), i32(^3)))
		k.forRange(c, get(c), get(end), 4, func() {
			k.Set(h, wg.I32x4Shl(wg.V128Load16x4U(get(s), 0), i32(16)))
			k.V128Store(get(d), 0, f16ToF32(h))
			k.Set(s, wg.I32Add(get(s), i32(8)))
			k.Set(d, wg.I32Add(get(d), i32(16)))
		})
		k.forRange(c, get(c), get(cols), 1, func() {
			k.Set(hs, wg.I32Load16U(get(s), 0))
			k.F32Store(get(d), 0, f16ToF32Scalar(hs))
			k.Set(s, wg.I32Add(get(s), i32(2)))
			k.Set(d, wg.I32Add(get(d), i32(4)))
		})
		k.Set(dst, wg.I32Add(get(dst), wg.I32Shl(get(cols), i32(2))))
		k.Set(src, wg.I32Add(get(src), wg.I32Shl(get(stride), i32(1))))
	})
}
