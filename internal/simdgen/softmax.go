package simdgen

import (
	"math"

	"github.com/wasmlm/wasmlm/internal/fmath"
	wg "github.com/wasmlm/wasmlm/internal/wasmgen"
)

// The softmax and GELU kernels: what the pure-Go engine/tensor.Softmax and
// GELUByTable compute, the same bits. In Go's WebAssembly these were an
// encoder's costliest loops after the products (a scalar e^x through
// fmath.Exp64 and a scalar rounding to F16 for every value).

// f64x2Splat is a v128 constant of v in both float64 lanes.
func f64x2Splat(v float64) wg.Expr {
	b := math.Float64bits(v)
	return wg.I32x4Const([4]uint32{uint32(b), uint32(b >> 32), uint32(b), uint32(b >> 32)})
}

// The arguments at which the exponential is clamped: e^-110 rounds to a
// float32 zero and e^89 to a float32 infinity, as fmath.Exp gives for every
// argument beyond them, and between them Exp64 needs none of its special
// cases (2^m stays a normal float64).
const (
	expLow  = -110
	expHigh = 89
)

// exp2 sets dst's two float64 lanes to fmath.Exp64 of x's, operation for
// operation as the pure-Go function (its table at table: 32 float64), for
// x in [expLow, expHigh] (x is clamped there first; a NaN stays a NaN).
func (k kernel) exp2(dst, x, table wg.Local) {
	n, r, q, ni := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	k.Set(x, wg.F64x2Pmax(wg.F64x2Pmin(get(x), f64x2Splat(expHigh)), f64x2Splat(expLow)))
	// n = floor(x·32/ln2 + 0.5); r = (x − n·ln2Hi/32) − n·ln2Lo/32
	k.Set(n, wg.F64x2Floor(wg.F64x2Add(wg.F64x2Mul(get(x), f64x2Splat(fmath.ExpScale)), f64x2Splat(0.5))))
	k.Set(r, wg.F64x2Sub(wg.F64x2Sub(get(x), wg.F64x2Mul(get(n), f64x2Splat(fmath.ExpLn2Hi))),
		wg.F64x2Mul(get(n), f64x2Splat(fmath.ExpLn2Lo))))
	// e^r − 1 by Horner's rule, each product rounded before it is added.
	k.Set(q, wg.F64x2Add(wg.F64x2Mul(f64x2Splat(1.0/720), get(r)), f64x2Splat(1.0/120)))
	for _, c := range []float64{1.0 / 24, 1.0 / 6, 0.5, 1} {
		k.Set(q, wg.F64x2Add(wg.F64x2Mul(get(q), get(r)), f64x2Splat(c)))
	}
	k.Set(q, wg.F64x2Mul(get(q), get(r)))
	// n = 32m + j: t = table[j], then (t + t·q)·2^m with 2^m made from
	// its bits (m + 1023 is a normal exponent in the clamped range).
	k.Set(ni, wg.I32x4TruncSatF64x2SZero(get(n)))
	t := k.Local(wg.V128)
	k.Set(t, f32x4Zero())
	for l := range uint8(2) {
		j := wg.I32And(wg.I32x4ExtractLane(get(ni), l), i32(31))
		k.Set(t, wg.V128Load64Lane(wg.I32Add(get(table), wg.I32Shl(j, i32(3))), 0, get(t), l))
	}
	pow := wg.I64x2Shl(wg.I64x2ExtendLowI32x4S(wg.I32x4Add(wg.I32x4ShrS(get(ni), i32(5)), i32x4Splat(1023))), i32(52))
	k.Set(dst, wg.F64x2Mul(wg.F64x2Add(get(t), wg.F64x2Mul(get(t), get(q))), pow))
}

// exp4 sets dst's four float32 lanes to fmath.Exp of x's: Exp64 of each
// promoted to float64, rounded back to float32.
func (k kernel) exp4(dst, x, table wg.Local) {
	lo, hi := k.Local(wg.V128), k.Local(wg.V128)
	k.Set(lo, wg.F64x2PromoteLowF32x4(get(x)))
	k.Set(hi, wg.F64x2PromoteLowF32x4(pairs32(get(x), get(x), [4]int{2, 3, 2, 3})))
	k.exp2(lo, lo, table)
	k.exp2(hi, hi, table)
	k.Set(dst, pairs32(wg.F32x4DemoteF64x2Zero(get(lo)), wg.F32x4DemoteF64x2Zero(get(hi)), [4]int{0, 1, 4, 5}))
}

// emitSoftmaxF32 emits SoftmaxF32 (x, n, rows, scale, table): for each of
// the rows of n ≥ 1 float32 from x on, one after the other, x[i] *= scale
// (scale a float32's bits), then the pure-Go softmax: the maximum m (the
// first element, then any larger one), x[i] = fmath.Exp(x[i] − m) (the
// difference in float32), their sum in order, and each multiplied by 1/sum. Without NaNs the maximum does not depend on the order it is
// looked for in (±0 give the same differences but for their sign, and
// e^±0 is 1), so the lanes look for it.
func emitSoftmaxF32(m *wg.Module) {
	k := kernel{Func: m.Func(SoftmaxF32, []wg.ValType{wg.I32, wg.I32, wg.I32, wg.I32, wg.I32}, nil)}
	x, n, rows, scaleBits, table := k.Param(0), k.Param(1), k.Param(2), k.Param(3), k.Param(4)
	i, end, r := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	v, mx, e := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	s, mxs, sum, inv := k.Local(wg.F32), k.Local(wg.F32), k.Local(wg.F32), k.Local(wg.F32)
	at := func() wg.Expr { return wg.I32Add(get(x), get(i)) } // i counts bytes

	k.Set(s, wg.F32ReinterpretI32(get(scaleBits)))
	k.Set(end, wg.I32Shl(wg.I32And(get(n), i32(^3)), i32(2)))
	k.forRange(r, i32(0), get(rows), 1, func() {
		// Scale, and the maximum: lanes first, then the tail one by one.
		k.Set(mxs, wg.F32Mul(wg.F32Load(get(x), 0), get(s)))
		k.Set(mx, wg.F32x4Splat(get(mxs)))
		k.forRange(i, i32(0), get(end), 16, func() {
			k.Set(v, wg.F32x4Mul(wg.V128Load(at(), 0), wg.F32x4Splat(get(s))))
			k.V128Store(at(), 0, get(v))
			k.Set(mx, wg.F32x4Pmax(get(mx), get(v)))
		})
		k.horizontal(mx, wg.F32x4Pmax)
		k.Set(mxs, wg.F32x4ExtractLane(get(mx), 0))
		k.forRange(i, get(end), wg.I32Shl(get(n), i32(2)), 4, func() {
			k.Set(sum, wg.F32Mul(wg.F32Load(at(), 0), get(s))) // sum: a scratch here
			k.F32Store(at(), 0, get(sum))
			k.If(wg.F32Gt(get(sum), get(mxs)), func() { k.Set(mxs, get(sum)) })
		})
		k.Set(mx, wg.F32x4Splat(get(mxs)))
		// The exponentials and their sum, in order.
		k.Set(sum, wg.F32Const(0))
		k.forRange(i, i32(0), get(end), 16, func() {
			k.Set(v, wg.F32x4Sub(wg.V128Load(at(), 0), get(mx)))
			k.exp4(e, v, table)
			k.V128Store(at(), 0, get(e))
			for l := range uint8(4) {
				k.Set(sum, wg.F32Add(get(sum), wg.F32x4ExtractLane(get(e), l)))
			}
		})
		k.forRange(i, get(end), wg.I32Shl(get(n), i32(2)), 4, func() {
			k.Set(v, wg.F32x4Sub(wg.V128Load32Splat(at(), 0), get(mx)))
			k.exp4(e, v, table)
			k.F32Store(at(), 0, wg.F32x4ExtractLane(get(e), 0))
			k.Set(sum, wg.F32Add(get(sum), wg.F32x4ExtractLane(get(e), 0)))
		})
		// Each times 1/sum.
		k.Set(inv, wg.F32Div(wg.F32Const(1), get(sum)))
		k.Set(v, wg.F32x4Splat(get(inv)))
		k.forRange(i, i32(0), get(end), 16, func() {
			k.V128Store(at(), 0, wg.F32x4Mul(wg.V128Load(at(), 0), get(v)))
		})
		k.forRange(i, get(end), wg.I32Shl(get(n), i32(2)), 4, func() {
			k.F32Store(at(), 0, wg.F32Mul(wg.F32Load(at(), 0), get(inv)))
		})
		k.Set(x, wg.I32Add(get(x), wg.I32Shl(get(n), i32(2))))
	})
}

// emitSwiGLUF32 emits SwiGLUF32 (gate, up, n, table), n a multiple of 4:
// the pure-Go tensor.SwiGLU, gate[i] = float32(g/(1 + fmath.Exp(−g)))·up[i]
// with g = gate[i], each operation in float32 as Go does it, e^−g by exp4.
func emitSwiGLUF32(m *wg.Module) {
	k := kernel{Func: m.Func(SwiGLUF32, []wg.ValType{wg.I32, wg.I32, wg.I32, wg.I32}, nil)}
	gate, up, n, table := k.Param(0), k.Param(1), k.Param(2), k.Param(3)
	i := k.Local(wg.I32)
	g, e := k.Local(wg.V128), k.Local(wg.V128)
	k.forRange(i, i32(0), wg.I32Shl(get(n), i32(2)), 16, func() {
		k.Set(g, wg.V128Load(wg.I32Add(get(gate), get(i)), 0))
		k.Set(e, wg.F32x4Neg(get(g)))
		k.exp4(e, e, table)
		k.Set(e, wg.F32x4Div(get(g), wg.F32x4Add(wg.F32x4Splat(wg.F32Const(1)), get(e))))
		k.V128Store(wg.I32Add(get(gate), get(i)), 0, wg.F32x4Mul(get(e), wg.V128Load(wg.I32Add(get(up), get(i)), 0)))
	})
}

// emitGELUF16 emits GELUF16 (x, n, table), n a multiple of 4: x[i] = 0
// where x[i] ≤ -10, x[i] where x[i] ≥ 10, else table[h] (float32, 65536 of
// them) with h the F16 bits of x[i] rounded to nearest, ties to even (the
// pure-Go f32ToF16; a NaN gives 0x7e00 with its sign).
func emitGELUF16(m *wg.Module) {
	k := kernel{Func: m.Func(GELUF16, []wg.ValType{wg.I32, wg.I32, wg.I32}, nil)}
	x, n, table := k.Param(0), k.Param(1), k.Param(2)
	i := k.Local(wg.I32)
	v, h, t := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	k.forRange(i, i32(0), wg.I32Shl(get(n), i32(2)), 16, func() {
		k.Set(v, wg.V128Load(wg.I32Add(get(x), get(i)), 0))
		k.f16Bits(h, v)
		k.Set(t, f32x4Zero())
		for l := range uint8(4) {
			entry := wg.I32Add(get(table), wg.I32Shl(wg.I32x4ExtractLane(get(h), l), i32(2)))
			k.Set(t, wg.V128Load32Lane(entry, 0, get(t), l))
		}
		k.Set(t, wg.V128Bitselect(get(v), get(t), wg.F32x4Ge(get(v), wg.F32x4Splat(wg.F32Const(10)))))
		k.V128Store(wg.I32Add(get(x), get(i)), 0,
			wg.V128AndNot(get(t), wg.F32x4Le(get(v), wg.F32x4Splat(wg.F32Const(-10)))))
	})
}

// f16Bits sets dst's i32 lanes to the F16 bits of v's float32 lanes, as
// the pure-Go f32ToF16 rounds: on the magnitude's bits a, a NaN gives
// 0x7e00 and an infinity or anything from 65536 on 0x7c00; below 2^-14
// (subnormal F16, or zero) the float addition of 0.5 rounds the bits into
// place; otherwise the exponent is rebiased and the 13 bits dropped are
// rounded to nearest, ties to even (a carry may make it the next binade,
// or infinity). The sign goes back on last.
func (k kernel) f16Bits(dst, v wg.Local) {
	a, r := k.Local(wg.V128), k.Local(wg.V128)
	k.Set(a, wg.V128And(get(v), i32x4Splat(0x7fffffff)))
	// normal: (a − (127−15)·2^23 + 0xfff + bit 13 of a) >> 13
	k.Set(r, wg.I32x4ShrU(wg.I32x4Add(wg.I32x4Add(get(a), i32x4Splat(0xc8000fff)),
		wg.V128And(wg.I32x4ShrU(get(a), i32(13)), i32x4Splat(1))), i32(13)))
	// subnormal: bits(a + 0.5) − bits(0.5)
	sub := wg.I32x4Sub(wg.F32x4Add(get(a), wg.F32x4Splat(wg.F32Const(0.5))), i32x4Splat(0x3f000000))
	k.Set(r, wg.V128Bitselect(sub, get(r), wg.I32x4LtS(get(a), i32x4Splat(113<<23))))
	big := wg.V128Bitselect(i32x4Splat(0x7e00), i32x4Splat(0x7c00), wg.I32x4GtS(get(a), i32x4Splat(0x7f800000)))
	k.Set(r, wg.V128Bitselect(big, get(r), wg.I32x4GeS(get(a), i32x4Splat(143<<23))))
	k.Set(dst, wg.V128Or(get(r), wg.I32x4ShrU(wg.V128AndNot(get(v), i32x4Splat(0x7fffffff)), i32(16))))
}
