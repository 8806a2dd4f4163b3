package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// emitAddScaledRowsF32 emits the attention-weighted sum of the values: each
// out[i] is its own chain of additions in t order, exactly the pure-Go
// loop, so the lanes of a vector can be four (or sixteen) consecutive i.
// The scores of the same attention use MatVecF32 with the key stride.
func emitAddScaledRowsF32(m *wg.Module) {
	k := kernel{Func: m.Func(AddScaledRowsF32, []wg.ValType{wg.I32, wg.I32, wg.I32, wg.I32, wg.I32, wg.I32}, nil)}
	out, a, v, rows, cols, stride := k.Param(0), k.Param(1), k.Param(2), k.Param(3), k.Param(4), k.Param(5)
	i, t, end, o, pa, pv, rb := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32),
		k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	at := k.Local(wg.V128)
	as := k.Local(wg.F32)
	var acc [4]wg.Local
	for j := range acc {
		acc[j] = k.Local(wg.V128)
	}
	k.Set(rb, wg.I32Shl(get(stride), i32(2)))
	// columns emits the work on columns [i, i+width) (width 16, 4 or 1):
	// load them from out, add every row's products in order, store them.
	columns := func(width int32) {
		vectors := int(width / 4)
		k.Set(o, wg.I32Add(get(out), wg.I32Shl(get(i), i32(2))))
		for j := range vectors {
			k.Set(acc[j], wg.V128Load(get(o), uint32(16*j)))
		}
		if width == 1 {
			k.Set(as, wg.F32Load(get(o), 0))
		}
		k.Set(pa, get(a))
		k.Set(pv, wg.I32Add(get(v), wg.I32Shl(get(i), i32(2))))
		k.forRange(t, i32(0), get(rows), 1, func() {
			if width == 1 {
				k.Set(as, wg.F32Add(get(as), wg.F32Mul(wg.F32Load(get(pa), 0), wg.F32Load(get(pv), 0))))
			} else {
				k.Set(at, wg.V128Load32Splat(get(pa), 0))
				for j := range vectors {
					k.Set(acc[j], wg.F32x4Add(get(acc[j]), wg.F32x4Mul(get(at), wg.V128Load(get(pv), uint32(16*j)))))
				}
			}
			k.Set(pa, wg.I32Add(get(pa), i32(4)))
			k.Set(pv, wg.I32Add(get(pv), get(rb)))
		})
		for j := range vectors {
			k.V128Store(get(o), uint32(16*j), get(acc[j]))
		}
		if width == 1 {
			k.F32Store(get(o), 0, get(as))
		}
	}
	k.Set(end, wg.I32And(get(cols), i32(^15)))
	k.forRange(i, i32(0), get(end), 16, func() { columns(16) })
	k.Set(end, wg.I32And(get(cols), i32(^3)))
	k.forRange(i, get(i), get(end), 4, func() { columns(4) })
	k.forRange(i, get(i), get(cols), 1, func() { columns(1) })
}
