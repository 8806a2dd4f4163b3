package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// The activation encoders: x quantized to Q8_0 or Q8_K exactly as the
// pure-Go encodeQ8_0 and encodeQ8K do. Maxima are order-free, so lanes may
// find them; every quant is the same float32 product rounded the same way.

// emitEncodeQ8_0 emits EncodeQ8_0 (x, q, d, sum, blocks): per block of
// 32, with amax = max|x| (NaN ignored), d[b] = amax/127 rounded to F16 (as
// float32: the pure-Go roundHalf), q = roundEven(x·id) clamped to int8
// with id = 127/amax (0 when amax is 0), and sum[b] = Σq.
func emitEncodeQ8_0(m *wg.Module) {
	k := kernel{Func: m.Func(EncodeQ8_0, []wg.ValType{wg.I32, wg.I32, wg.I32, wg.I32, wg.I32}, nil)}
	x, q, d, sum, blocks := k.Param(0), k.Param(1), k.Param(2), k.Param(3), k.Param(4)
	b := k.Local(wg.I32)
	mx, id, acc, h := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	var qi [8]wg.Local
	for i := range qi {
		qi[i] = k.Local(wg.V128)
	}
	am := k.Local(wg.F32)
	k.forRange(b, i32(0), get(blocks), 1, func() {
		// if av := abs32(v); av > amax { amax = av }: pmax keeps mx
		// where av is NaN or not larger.
		k.Set(mx, f32x4Zero())
		for v := range 8 {
			k.Set(mx, wg.F32x4Pmax(get(mx), wg.F32x4Abs(wg.V128Load(get(x), uint32(16*v)))))
		}
		k.horizontal(mx, wg.F32x4Pmax)
		k.Set(am, wg.F32x4ExtractLane(get(mx), 0))
		k.Set(mx, wg.F32x4Splat(wg.F32Div(get(am), wg.F32Const(127))))
		k.f16Bits(h, mx)
		k.Set(h, wg.I32x4Shl(get(h), i32(16))) // f16ToF32 takes the bits in the high halves
		k.F32Store(get(d), 0, wg.F32x4ExtractLane(f16ToF32(h), 0))
		k.Set(id, wg.F32x4Splat(wg.Select(wg.F32Div(wg.F32Const(127), get(am)), wg.F32Const(0),
			wg.F32Ne(get(am), wg.F32Const(0)))))
		k.Set(acc, f32x4Zero())
		for v := range 8 {
			k.Set(qi[v], roundEvenClamp(wg.F32x4Mul(wg.V128Load(get(x), uint32(16*v)), get(id))))
			k.Set(acc, wg.I32x4Add(get(acc), get(qi[v])))
		}
		for half := range 2 {
			k.V128Store(get(q), uint32(16*half), narrowToI8(qi[4*half:4*half+4]))
		}
		k.horizontal(acc, wg.I32x4Add)
		k.I32Store(get(sum), 0, wg.I32x4ExtractLane(get(acc), 0))
		k.Set(x, wg.I32Add(get(x), i32(4*32)))
		k.Set(q, wg.I32Add(get(q), i32(32)))
		k.Set(d, wg.I32Add(get(d), i32(4)))
		k.Set(sum, wg.I32Add(get(sum), i32(4)))
	})
}

// roundEvenClamp is the pure-Go clampInt(roundEven(p), -128, 127) lane by
// lane: ties to even (f32x4.nearest), and -128 where roundEven gives its
// "integer indefinite" (a NaN, or beyond int32).
func roundEvenClamp(p wg.Expr) wg.Expr {
	return func(f *wg.Func) {
		k := kernel{Func: f}
		r := k.Local(wg.V128)
		k.Set(r, wg.F32x4Nearest(p))
		inRange := wg.V128And(
			wg.F32x4Ge(get(r), wg.I32x4Const([4]uint32{0xcf000000, 0xcf000000, 0xcf000000, 0xcf000000})), // -2^31
			wg.F32x4Lt(get(r), wg.I32x4Const([4]uint32{0x4f000000, 0x4f000000, 0x4f000000, 0x4f000000}))) // 2^31
		wg.V128Bitselect(clampI8(wg.I32x4TruncSatF32x4S(get(r))), i32x4Splat(0xffffff80), inRange)(f)
	}
}

// clampI8 clamps int32 lanes to [-128, 127].
func clampI8(v wg.Expr) wg.Expr {
	return wg.I32x4MaxS(wg.I32x4MinS(v, i32x4Splat(127)), i32x4Splat(0xffffff80))
}

// narrowToI8 packs four i32x4 of values in int8 range into one i8x16.
func narrowToI8(v []wg.Local) wg.Expr {
	return wg.I8x16NarrowI16x8S(
		wg.I16x8NarrowI32x4S(get(v[0]), get(v[1])),
		wg.I16x8NarrowI32x4S(get(v[2]), get(v[3])))
}

// horizontal combines the four 32-bit lanes of v with op (an associative,
// commutative lane-wise operation), leaving the result in every lane.
func (k kernel) horizontal(v wg.Local, op func(a, b wg.Expr) wg.Expr) {
	k.Set(v, op(get(v), pairs32(get(v), get(v), [4]int{2, 3, 0, 1})))
	k.Set(v, op(get(v), pairs32(get(v), get(v), [4]int{1, 0, 3, 2})))
}

// emitEncodeQ8K emits EncodeQ8K (x, q, d, bsums, blocks): per super-block
// of 256, vmax is the first element of largest magnitude (NaN ignored);
// if it is 0 everything is zero, else q = nearestInt(-127/vmax·x) clamped
// to int8, bsums the int16 sums of each 16 quants, d = 1/(-127/vmax).
func emitEncodeQ8K(m *wg.Module) {
	k := kernel{Func: m.Func(EncodeQ8K, []wg.ValType{wg.I32, wg.I32, wg.I32, wg.I32, wg.I32}, nil)}
	x, q, d, bsums, blocks := k.Param(0), k.Param(1), k.Param(2), k.Param(3), k.Param(4)
	b, v, px := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	best, val, idx, cur, xv, gt, s := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128),
		k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
	var qi [4]wg.Local
	for i := range qi {
		qi[i] = k.Local(wg.V128)
	}
	bestS, valS, bl, iscale := k.Local(wg.F32), k.Local(wg.F32), k.Local(wg.F32), k.Local(wg.F32)
	idxS, il := k.Local(wg.I32), k.Local(wg.I32)
	k.forRange(b, i32(0), get(blocks), 1, func() {
		// Per lane l, the first element ≡ l (mod 4) of largest magnitude
		// (strictly larger replaces, as the pure-Go loop), with its index.
		k.Set(best, f32x4Zero())
		k.Set(val, f32x4Zero())
		k.Set(idx, f32x4Zero())
		k.Set(cur, wg.I32x4Const([4]uint32{0, 1, 2, 3}))
		k.Set(px, get(x))
		k.forRange(v, i32(0), i32(qkK/4), 1, func() {
			k.Set(xv, wg.V128Load(get(px), 0))
			k.Set(gt, wg.F32x4Gt(wg.F32x4Abs(get(xv)), get(best)))
			k.Set(best, wg.V128Bitselect(wg.F32x4Abs(get(xv)), get(best), get(gt)))
			k.Set(val, wg.V128Bitselect(get(xv), get(val), get(gt)))
			k.Set(idx, wg.V128Bitselect(get(cur), get(idx), get(gt)))
			k.Set(cur, wg.I32x4Add(get(cur), i32x4Splat(4)))
			k.Set(px, wg.I32Add(get(px), i32(16)))
		})
		// The lane with the largest magnitude, the smallest index on a tie.
		k.Set(bestS, wg.F32x4ExtractLane(get(best), 0))
		k.Set(valS, wg.F32x4ExtractLane(get(val), 0))
		k.Set(idxS, wg.I32x4ExtractLane(get(idx), 0))
		for l := uint8(1); l < 4; l++ {
			k.Set(bl, wg.F32x4ExtractLane(get(best), l))
			k.Set(il, wg.I32x4ExtractLane(get(idx), l))
			k.If(wg.I32Or(wg.F32Gt(get(bl), get(bestS)),
				wg.I32And(wg.F32Eq(get(bl), get(bestS)), wg.I32LtS(get(il), get(idxS)))), func() {
				k.Set(bestS, get(bl))
				k.Set(valS, wg.F32x4ExtractLane(get(val), l))
				k.Set(idxS, get(il))
			})
		}
		k.IfElse(wg.F32Eq(get(bestS), wg.F32Const(0)), func() {
			k.F32Store(get(d), 0, wg.F32Const(0))
			for i := range uint32(qkK / 16) {
				k.V128Store(get(q), 16*i, f32x4Zero())
			}
			k.V128Store(get(bsums), 0, f32x4Zero())
			k.V128Store(get(bsums), 16, f32x4Zero())
		}, func() {
			k.Set(iscale, wg.F32Div(wg.F32Const(-127), get(valS)))
			k.Set(s, wg.F32x4Splat(get(iscale)))
			k.Set(px, get(x))
			// v counts the groups of 16; each is four vectors of x, one of q.
			k.forRange(v, i32(0), i32(qkK/16), 1, func() {
				for i := range qi {
					// nearestInt: ties to even, NaN to 0 (trunc_sat),
					// saturated; then the int8 clamp.
					k.Set(qi[i], clampI8(wg.I32x4TruncSatF32x4S(wg.F32x4Nearest(
						wg.F32x4Mul(get(s), wg.V128Load(get(px), uint32(16*i)))))))
				}
				k.V128Store(wg.I32Add(get(q), wg.I32Shl(get(v), i32(4))), 0, narrowToI8(qi[:]))
				k.Set(xv, wg.I32x4Add(wg.I32x4Add(get(qi[0]), get(qi[1])), wg.I32x4Add(get(qi[2]), get(qi[3]))))
				k.horizontal(xv, wg.I32x4Add)
				k.I32Store16(wg.I32Add(get(bsums), wg.I32Shl(get(v), i32(1))), 0, wg.I32x4ExtractLane(get(xv), 0))
				k.Set(px, wg.I32Add(get(px), i32(64)))
			})
			k.F32Store(get(d), 0, wg.F32Div(wg.F32Const(1), get(iscale)))
		})
		k.Set(x, wg.I32Add(get(x), i32(4*qkK)))
		k.Set(q, wg.I32Add(get(q), i32(qkK)))
		k.Set(d, wg.I32Add(get(d), i32(4)))
		k.Set(bsums, wg.I32Add(get(bsums), i32(2*qkK/16)))
	})
}
