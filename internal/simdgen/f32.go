package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// emitMatVecF32 emits the F32 kernel, tensor.DotF32 for four rows at once:
// each row's accumulator is one f32x4 whose lane l holds the pure-Go
// partial sum s_l of the columns ≡ l (mod 4), each product rounded before it
// is added (f32x4.mul, then f32x4.add: no fused multiply-add); the columns
// past the last multiple of four go into lane 0 one by one, as the pure-Go
// tail loop adds them to s0; then (s0+s1)+(s2+s3).
func emitMatVecF32(m *wg.Module) {
	rowBytes := func(stride wg.Expr) wg.Expr { return wg.I32Shl(stride, i32(2)) }
	matvec(m, MatVecF32, 1, true, 0, rowBytes, func(k kernel, act []wg.Local, n wg.Local, p [4]wg.Local, _, res wg.Local) {
		x := act[0]
		i, end := k.Local(wg.I32), k.Local(wg.I32)
		xv, xs := k.Local(wg.V128), k.Local(wg.F32)
		var acc [4]wg.Local
		for j := range acc {
			acc[j] = k.Local(wg.V128)
			k.Set(acc[j], f32x4Zero())
		}
		step := func(offset uint32) {
			k.Set(xv, wg.V128Load(wg.I32Add(get(x), get(i)), offset))
			for j := range acc {
				prod := wg.F32x4Mul(wg.V128Load(wg.I32Add(get(p[j]), get(i)), offset), get(xv))
				k.Set(acc[j], wg.F32x4Add(get(acc[j]), prod))
			}
		}
		// i is a byte offset into the rows and x. Eight columns per
		// iteration (measured: sixteen is slower, V8 spills), then four,
		// then one.
		k.Set(end, wg.I32Shl(wg.I32And(get(n), i32(^7)), i32(2)))
		k.forRange(i, i32(0), get(end), 32, func() {
			step(0)
			step(16)
		})
		k.Set(end, wg.I32Shl(wg.I32And(get(n), i32(^3)), i32(2)))
		k.forRange(i, get(i), get(end), 16, func() { step(0) })
		k.forRange(i, get(i), wg.I32Shl(get(n), i32(2)), 4, func() {
			k.Set(xs, wg.F32Load(wg.I32Add(get(x), get(i)), 0))
			for j := range acc {
				prod := wg.F32Mul(wg.F32Load(wg.I32Add(get(p[j]), get(i)), 0), get(xs))
				k.Set(acc[j], wg.F32x4ReplaceLane(get(acc[j]), 0,
					wg.F32Add(wg.F32x4ExtractLane(get(acc[j]), 0), prod)))
			}
		})
		k.transposeSum(res, wg.F32x4Add, acc)
	})
}
