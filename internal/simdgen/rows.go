package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// The elementwise kernels of a forward pass's glue, each the pure-Go
// function's bits: F16 rounding and encoding of activations (F16 matrices'
// products, an F16 KV cache), a vector's sum with another (residuals,
// biases) and LayerNorm. In Go's WebAssembly these scalar loops were a
// tenth of an encoder's time.

// emitRoundF16 emits RoundF16 (dst, src, n), n a multiple of 4: dst[i] =
// src[i] rounded to the nearest F16 (ties to even, as f32ToF16), as
// float32.
func emitRoundF16(m *wg.Module) {
	k := kernel{Func: m.Func(RoundF16, []wg.ValType{wg.I32, wg.I32, wg.I32}, nil)}
	dst, src, n := k.Param(0), k.Param(1), k.Param(2)
	i := k.Local(wg.I32)
	v, h := k.Local(wg.V128), k.Local(wg.V128)
	k.forRange(i, i32(0), wg.I32Shl(get(n), i32(2)), 16, func() {
		k.Set(v, wg.V128Load(wg.I32Add(get(src), get(i)), 0))
		k.f16Bits(h, v)
		k.Set(h, wg.I32x4Shl(get(h), i32(16))) // f16ToF32 takes the bits in the high halves
		k.V128Store(wg.I32Add(get(dst), get(i)), 0, f16ToF32(h))
	})
}

// emitEncodeF16 emits EncodeF16 (dst, src, n), n a multiple of 4: the
// uint16 dst[i] = the F16 bits of src[i] (as f32ToF16).
func emitEncodeF16(m *wg.Module) {
	k := kernel{Func: m.Func(EncodeF16, []wg.ValType{wg.I32, wg.I32, wg.I32}, nil)}
	dst, src, n := k.Param(0), k.Param(1), k.Param(2)
	i := k.Local(wg.I32)
	v, h := k.Local(wg.V128), k.Local(wg.V128)
	k.forRange(i, i32(0), get(n), 4, func() {
		k.Set(v, wg.V128Load(wg.I32Add(get(src), wg.I32Shl(get(i), i32(2))), 0))
		k.f16Bits(h, v)
		for l := range uint8(4) {
			k.I32Store16(wg.I32Add(get(dst), wg.I32Shl(get(i), i32(1))), 2*uint32(l), wg.I32x4ExtractLane(get(h), l))
		}
	})
}

// emitAddF32 emits AddF32 (dst, src, n): dst[i] += src[i].
func emitAddF32(m *wg.Module) {
	k := kernel{Func: m.Func(AddF32, []wg.ValType{wg.I32, wg.I32, wg.I32}, nil)}
	dst, src, n := k.Param(0), k.Param(1), k.Param(2)
	i, end := k.Local(wg.I32), k.Local(wg.I32)
	at := func(p wg.Local) wg.Expr { return wg.I32Add(get(p), get(i)) }
	k.Set(end, wg.I32Shl(wg.I32And(get(n), i32(^7)), i32(2)))
	k.forRange(i, i32(0), get(end), 32, func() {
		for o := uint32(0); o < 32; o += 16 {
			k.V128Store(at(dst), o, wg.F32x4Add(wg.V128Load(at(dst), o), wg.V128Load(at(src), o)))
		}
	})
	k.forRange(i, get(end), wg.I32Shl(get(n), i32(2)), 4, func() {
		k.F32Store(at(dst), 0, wg.F32Add(wg.F32Load(at(dst), 0), wg.F32Load(at(src), 0)))
	})
}

// emitLayerNormF32 emits LayerNormF32 (x, weight, bias, n, eps) with eps a
// float32's bits, n ≥ 1: the pure-Go LayerNorm (ggml_norm, then the weight
// and the bias): the sum of x in float64 in order, the mean rounded to
// float32, d = x − mean in float32, the sum of float64(d·d) in order, the
// variance rounded to float32, scale = 1/float32(√float64(variance+eps)),
// x = float32(d·scale)·weight + bias.
func emitLayerNormF32(m *wg.Module) {
	k := kernel{Func: m.Func(LayerNormF32, []wg.ValType{wg.I32, wg.I32, wg.I32, wg.I32, wg.I32}, nil)}
	x, weight, bias, n, epsBits := k.Param(0), k.Param(1), k.Param(2), k.Param(3), k.Param(4)
	i, end := k.Local(wg.I32), k.Local(wg.I32)
	sum := k.Local(wg.F64)
	mean, scale := k.Local(wg.F32), k.Local(wg.F32)
	v, mv, d2 := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	at := func(p wg.Local) wg.Expr { return wg.I32Add(get(p), get(i)) }
	bytes := wg.I32Shl(get(n), i32(2))
	k.Set(end, wg.I32Shl(wg.I32And(get(n), i32(^3)), i32(2)))

	k.Set(sum, wg.F64PromoteF32(wg.F32Const(0)))
	k.forRange(i, i32(0), bytes, 4, func() {
		k.Set(sum, wg.F64Add(get(sum), wg.F64PromoteF32(wg.F32Load(at(x), 0))))
	})
	k.Set(mean, wg.F32DemoteF64(wg.F64Div(get(sum), wg.F64ConvertI32S(get(n)))))
	k.Set(mv, wg.F32x4Splat(get(mean)))
	k.Set(sum, wg.F64PromoteF32(wg.F32Const(0)))
	k.forRange(i, i32(0), get(end), 16, func() {
		k.Set(v, wg.F32x4Sub(wg.V128Load(at(x), 0), get(mv)))
		k.V128Store(at(x), 0, get(v))
		k.Set(d2, wg.F32x4Mul(get(v), get(v)))
		for l := range uint8(4) {
			k.Set(sum, wg.F64Add(get(sum), wg.F64PromoteF32(wg.F32x4ExtractLane(get(d2), l))))
		}
	})
	k.forRange(i, get(end), bytes, 4, func() {
		k.Set(scale, wg.F32Sub(wg.F32Load(at(x), 0), get(mean))) // scale: a scratch here
		k.F32Store(at(x), 0, get(scale))
		k.Set(sum, wg.F64Add(get(sum), wg.F64PromoteF32(wg.F32Mul(get(scale), get(scale)))))
	})
	variance := wg.F32DemoteF64(wg.F64Div(get(sum), wg.F64ConvertI32S(get(n))))
	k.Set(scale, wg.F32Div(wg.F32Const(1), wg.F32DemoteF64(wg.F64Sqrt(wg.F64PromoteF32(
		wg.F32Add(variance, wg.F32ReinterpretI32(get(epsBits))))))))
	k.Set(mv, wg.F32x4Splat(get(scale)))
	k.forRange(i, i32(0), get(end), 16, func() {
		k.V128Store(at(x), 0, wg.F32x4Add(wg.F32x4Mul(wg.F32x4Mul(wg.V128Load(at(x), 0), get(mv)),
			wg.V128Load(at(weight), 0)), wg.V128Load(at(bias), 0)))
	})
	k.forRange(i, get(end), bytes, 4, func() {
		k.F32Store(at(x), 0, wg.F32Add(wg.F32Mul(wg.F32Mul(wg.F32Load(at(x), 0), get(scale)),
			wg.F32Load(at(weight), 0)), wg.F32Load(at(bias), 0)))
	})
}
