package wasmgen

// Opcodes, from the binary format chapter of the WebAssembly Core
// Specification 2.0 (5.4 Instructions); the SIMD ones follow the 0xFD prefix
// as an unsigned LEB128 number.
const (
	blockEmpty = 0x40 // block type: no parameters, no results

	opBlock     = 0x02
	opLoop      = 0x03
	opIf        = 0x04
	opElse      = 0x05
	opEnd       = 0x0b
	opBr        = 0x0c
	opBrIf      = 0x0d
	opReturn    = 0x0f
	opDrop      = 0x1a
	opSelect    = 0x1b
	opLocalGet  = 0x20
	opLocalSet  = 0x21
	opLocalTee  = 0x22
	opGlobalGet = 0x23

	opI32Load    = 0x28
	opF32Load    = 0x2a
	opI32Load8S  = 0x2c
	opI32Load8U  = 0x2d
	opI32Load16U = 0x2f
	opI32Store   = 0x36
	opF32Store   = 0x38
	opI32Store16 = 0x3b

	opI32Const = 0x41
	opF32Const = 0x43

	opI32Eq  = 0x46
	opI32LtS = 0x48
	opI32LtU = 0x49
	opI32GeS = 0x4e
	opF32Eq  = 0x5b
	opF32Ne  = 0x5c
	opF32Lt  = 0x5d
	opF32Gt  = 0x5e

	opI32Add  = 0x6a
	opI32Sub  = 0x6b
	opI32Mul  = 0x6c
	opI32DivU = 0x6e
	opI32And  = 0x71
	opI32Or   = 0x72
	opI32Shl  = 0x74
	opI32ShrU = 0x76

	opF64Sqrt = 0x9f
	opF64Add  = 0xa0
	opF64Div  = 0xa3

	opF32Add = 0x92
	opF32Sub = 0x93
	opF32Mul = 0x94
	opF32Div = 0x95

	opF32DemoteF64      = 0xb6
	opF64ConvertI32S    = 0xb7
	opF64PromoteF32     = 0xbb
	opI32ReinterpretF32 = 0xbc
	opF32ReinterpretI32 = 0xbe

	prefixSIMD = 0xfd
)

// SIMD opcodes (after the 0xFD prefix).
const (
	simdV128Load             = 0x00
	simdV128Load8x8S         = 0x01
	simdV128Load16x4U        = 0x04
	simdV128Load16Splat      = 0x08
	simdV128Load32Splat      = 0x09
	simdV128Store            = 0x0b
	simdV128Const            = 0x0c
	simdI8x16Shuffle         = 0x0d
	simdI8x16Swizzle         = 0x0e
	simdI16x8Splat           = 0x10
	simdF32x4Splat           = 0x13
	simdF64x2Splat           = 0x14
	simdI32x4ExtractLane     = 0x1b
	simdF32x4ExtractLane     = 0x1f
	simdF32x4ReplaceLane     = 0x20
	simdI8x16Eq              = 0x23
	simdI8x16LtS             = 0x25
	simdI8x16Abs             = 0x60
	simdI16x8Eq              = 0x2d
	simdI32x4Eq              = 0x37
	simdF32x4Lt              = 0x43
	simdF32x4Gt              = 0x44
	simdI32x4LtS             = 0x39
	simdI32x4GtS             = 0x3b
	simdI32x4GeS             = 0x3f
	simdF32x4Le              = 0x45
	simdF32x4Ge              = 0x46
	simdV128And              = 0x4e
	simdV128AndNot           = 0x4f
	simdV128Or               = 0x50
	simdV128Xor              = 0x51
	simdV128Bitselect        = 0x52
	simdV128Load16Lane       = 0x55
	simdV128Load32Lane       = 0x56
	simdV128Load64Lane       = 0x57
	simdV128Store32Lane      = 0x5a
	simdF32x4DemoteF64x2Zero = 0x5e
	simdF64x2PromoteLowF32x4 = 0x5f
	simdI8x16NarrowI16x8S    = 0x65
	simdF32x4Nearest         = 0x6a
	simdI8x16Shl             = 0x6b
	simdI8x16ShrU            = 0x6d
	simdI8x16Sub             = 0x71

	simdF64x2Floor                = 0x75
	simdI32x4ExtaddPairwiseI16x8S = 0x7e
	simdI16x8NarrowI32x4S         = 0x85
	simdI16x8ExtendLowI8x16S      = 0x87
	simdI16x8ExtendHighI8x16S     = 0x88
	simdI16x8ExtendLowI8x16U      = 0x89
	simdI16x8ExtendHighI8x16U     = 0x8a
	simdI16x8Shl                  = 0x8b
	simdI16x8ShrS                 = 0x8c
	simdI16x8ShrU                 = 0x8d
	simdI16x8Add                  = 0x8e
	simdI16x8Sub                  = 0x91
	simdI16x8Mul                  = 0x95
	simdI32x4ExtendLowI16x8S      = 0xa7
	simdI32x4ExtendLowI16x8U      = 0xa9
	simdI32x4ExtendHighI16x8U     = 0xaa
	simdI32x4Shl                  = 0xab
	simdI32x4ShrS                 = 0xac
	simdI32x4ShrU                 = 0xad
	simdI32x4Add                  = 0xae
	simdI32x4Sub                  = 0xb1
	simdI32x4Mul                  = 0xb5
	simdI32x4MinS                 = 0xb6
	simdI32x4MaxS                 = 0xb8
	simdI32x4DotI16x8S            = 0xba
	simdI64x2ExtendLowI32x4S      = 0xc7
	simdI64x2Shl                  = 0xcb
	simdF32x4Abs                  = 0xe0
	simdF32x4Neg                  = 0xe1
	simdF32x4Add                  = 0xe4
	simdF32x4Sub                  = 0xe5
	simdF32x4Mul                  = 0xe6
	simdF32x4Div                  = 0xe7
	simdF32x4Pmax                 = 0xeb
	simdF64x2Add                  = 0xf0
	simdF64x2Sub                  = 0xf1
	simdF64x2Mul                  = 0xf2
	simdF64x2Pmin                 = 0xf6
	simdF64x2Pmax                 = 0xf7
	simdI32x4TruncSatF32x4S       = 0xf8
	simdF32x4ConvertI32x4S        = 0xfa
	simdI32x4TruncSatF64x2SZero   = 0xfc

	// Relaxed SIMD (a later proposal: engines without it reject a module
	// that uses one of these).
	// i32x4.relaxed_dot_i8x16_i7x16_add_s (0x113) is left out on purpose:
	// Node 20's V8 returns twice the dot product and drops the addend.
	simdI16x8RelaxedDotI8x16I7x16S = 0x112
)

// Scalar instructions. Loads and stores take an address expression and a
// constant offset; their alignment hint is the natural one.

// I32Load is i32.load.
func I32Load(addr Expr, offset uint32) Expr { return load(opI32Load, 2, addr, offset) }

// F32Load is f32.load.
func F32Load(addr Expr, offset uint32) Expr { return load(opF32Load, 2, addr, offset) }

// I32Load8S is i32.load8_s.
func I32Load8S(addr Expr, offset uint32) Expr { return load(opI32Load8S, 0, addr, offset) }

// I32Load8U is i32.load8_u.
func I32Load8U(addr Expr, offset uint32) Expr { return load(opI32Load8U, 0, addr, offset) }

// I32Load16U is i32.load16_u.
func I32Load16U(addr Expr, offset uint32) Expr { return load(opI32Load16U, 1, addr, offset) }

// I32Store emits i32.store of v at addr+offset.
func (f *Func) I32Store(addr Expr, offset uint32, v Expr) { f.store(opI32Store, 2, addr, offset, v) }

// I32Store16 emits i32.store16 of the low 16 bits of v at addr+offset.
func (f *Func) I32Store16(addr Expr, offset uint32, v Expr) {
	f.store(opI32Store16, 1, addr, offset, v)
}

// F32Store emits f32.store of v at addr+offset.
func (f *Func) F32Store(addr Expr, offset uint32, v Expr) { f.store(opF32Store, 2, addr, offset, v) }

// I32Eq is i32.eq.
func I32Eq(a, b Expr) Expr { return plain(opI32Eq, a, b) }

// I32LtS is i32.lt_s.
func I32LtS(a, b Expr) Expr { return plain(opI32LtS, a, b) }

// I32LtU is i32.lt_u.
func I32LtU(a, b Expr) Expr { return plain(opI32LtU, a, b) }

// I32GeS is i32.ge_s.
func I32GeS(a, b Expr) Expr { return plain(opI32GeS, a, b) }

// F32Eq is f32.eq.
func F32Eq(a, b Expr) Expr { return plain(opF32Eq, a, b) }

// F32Ne is f32.ne (true for a NaN operand).
func F32Ne(a, b Expr) Expr { return plain(opF32Ne, a, b) }

// F32Gt is f32.gt.
func F32Gt(a, b Expr) Expr { return plain(opF32Gt, a, b) }

// I32Add is i32.add.
func I32Add(a, b Expr) Expr { return plain(opI32Add, a, b) }

// I32Sub is i32.sub.
func I32Sub(a, b Expr) Expr { return plain(opI32Sub, a, b) }

// I32Mul is i32.mul.
func I32Mul(a, b Expr) Expr { return plain(opI32Mul, a, b) }

// I32DivU is i32.div_u (traps on a zero divisor).
func I32DivU(a, b Expr) Expr { return plain(opI32DivU, a, b) }

// I32And is i32.and.
func I32And(a, b Expr) Expr { return plain(opI32And, a, b) }

// I32Or is i32.or.
func I32Or(a, b Expr) Expr { return plain(opI32Or, a, b) }

// I32Shl is i32.shl.
func I32Shl(a, b Expr) Expr { return plain(opI32Shl, a, b) }

// I32ShrU is i32.shr_u.
func I32ShrU(a, b Expr) Expr { return plain(opI32ShrU, a, b) }

// F32Add is f32.add.
func F32Add(a, b Expr) Expr { return plain(opF32Add, a, b) }

// F32Mul is f32.mul.
func F32Mul(a, b Expr) Expr { return plain(opF32Mul, a, b) }

// F32Div is f32.div.
func F32Div(a, b Expr) Expr { return plain(opF32Div, a, b) }

// I32ReinterpretF32 is i32.reinterpret_f32.
func I32ReinterpretF32(a Expr) Expr { return plain(opI32ReinterpretF32, a) }

// F32ReinterpretI32 is f32.reinterpret_i32.
func F32ReinterpretI32(a Expr) Expr { return plain(opF32ReinterpretI32, a) }

// SIMD loads and stores.

// V128Load is v128.load.
func V128Load(addr Expr, offset uint32) Expr { return simdLoad(simdV128Load, 4, addr, offset) }

// V128Load8x8S is v128.load8x8_s: 8 int8 sign-extended to i16x8.
func V128Load8x8S(addr Expr, offset uint32) Expr {
	return simdLoad(simdV128Load8x8S, 3, addr, offset)
}

// V128Load16x4U is v128.load16x4_u: 4 uint16 zero-extended to i32x4.
func V128Load16x4U(addr Expr, offset uint32) Expr {
	return simdLoad(simdV128Load16x4U, 3, addr, offset)
}

// V128Load16Splat is v128.load16_splat.
func V128Load16Splat(addr Expr, offset uint32) Expr {
	return simdLoad(simdV128Load16Splat, 1, addr, offset)
}

// V128Load32Splat is v128.load32_splat.
func V128Load32Splat(addr Expr, offset uint32) Expr {
	return simdLoad(simdV128Load32Splat, 2, addr, offset)
}

// V128Load16Lane is v128.load16_lane: v with 16-bit lane replaced from memory.
func V128Load16Lane(addr Expr, offset uint32, v Expr, lane uint8) Expr {
	return simdLoadLane(simdV128Load16Lane, 1, addr, offset, v, lane)
}

// V128Load32Lane is v128.load32_lane: v with 32-bit lane replaced from memory.
func V128Load32Lane(addr Expr, offset uint32, v Expr, lane uint8) Expr {
	return simdLoadLane(simdV128Load32Lane, 2, addr, offset, v, lane)
}

// V128Store emits v128.store of v at addr+offset.
func (f *Func) V128Store(addr Expr, offset uint32, v Expr) {
	addr(f)
	v(f)
	f.simd(simdV128Store)
	f.memarg(4, offset)
}

// V128Store32Lane emits v128.store32_lane: 32-bit lane of v at addr+offset.
func (f *Func) V128Store32Lane(addr Expr, offset uint32, v Expr, lane uint8) {
	addr(f)
	v(f)
	f.simd(simdV128Store32Lane)
	f.memarg(2, offset)
	f.body = append(f.body, lane)
}

// Splats and lanes.

// I16x8Splat is i16x8.splat (of the low 16 bits of an i32).
func I16x8Splat(a Expr) Expr { return simdOp(simdI16x8Splat, a) }

// F32x4Splat is f32x4.splat.
func F32x4Splat(a Expr) Expr { return simdOp(simdF32x4Splat, a) }

// I32x4ExtractLane is i32x4.extract_lane.
func I32x4ExtractLane(v Expr, lane uint8) Expr { return simdLane(simdI32x4ExtractLane, lane, v) }

// F32x4ExtractLane is f32x4.extract_lane.
func F32x4ExtractLane(v Expr, lane uint8) Expr { return simdLane(simdF32x4ExtractLane, lane, v) }

// F32x4ReplaceLane is f32x4.replace_lane.
func F32x4ReplaceLane(v Expr, lane uint8, x Expr) Expr {
	return simdLane(simdF32x4ReplaceLane, lane, v, x)
}

// Bitwise.

// V128And is v128.and.
func V128And(a, b Expr) Expr { return simdOp(simdV128And, a, b) }

// V128Or is v128.or.
func V128Or(a, b Expr) Expr { return simdOp(simdV128Or, a, b) }

// V128Bitselect is v128.bitselect: the bits of a where mask is 1, of b
// where it is 0.
func V128Bitselect(a, b, mask Expr) Expr { return simdOp(simdV128Bitselect, a, b, mask) }

// Integer lanes.

// I8x16Shl is i8x16.shl (shift count modulo 8).
func I8x16Shl(a, n Expr) Expr { return simdOp(simdI8x16Shl, a, n) }

// I8x16Swizzle is i8x16.swizzle: byte i is a[b[i]], or 0 where b[i] ≥ 16
// (a table lookup of 16 bytes).
func I8x16Swizzle(a, b Expr) Expr { return simdOp(simdI8x16Swizzle, a, b) }

// I8x16ShrU is i8x16.shr_u (shift count modulo 8).
func I8x16ShrU(a, n Expr) Expr { return simdOp(simdI8x16ShrU, a, n) }

// I8x16Sub is i8x16.sub (wrapping).
func I8x16Sub(a, b Expr) Expr { return simdOp(simdI8x16Sub, a, b) }

// I8x16NarrowI16x8S is i8x16.narrow_i16x8_s: a's lanes then b's,
// saturated to int8.
func I8x16NarrowI16x8S(a, b Expr) Expr { return simdOp(simdI8x16NarrowI16x8S, a, b) }

// I16x8NarrowI32x4S is i16x8.narrow_i32x4_s: a's lanes then b's, saturated
// to int16.
func I16x8NarrowI32x4S(a, b Expr) Expr { return simdOp(simdI16x8NarrowI32x4S, a, b) }

// I16x8ExtendLowI8x16S is i16x8.extend_low_i8x16_s.
func I16x8ExtendLowI8x16S(a Expr) Expr { return simdOp(simdI16x8ExtendLowI8x16S, a) }

// I16x8ExtendHighI8x16S is i16x8.extend_high_i8x16_s.
func I16x8ExtendHighI8x16S(a Expr) Expr { return simdOp(simdI16x8ExtendHighI8x16S, a) }

// I16x8ExtendLowI8x16U is i16x8.extend_low_i8x16_u.
func I16x8ExtendLowI8x16U(a Expr) Expr { return simdOp(simdI16x8ExtendLowI8x16U, a) }

// I16x8ExtendHighI8x16U is i16x8.extend_high_i8x16_u.
func I16x8ExtendHighI8x16U(a Expr) Expr { return simdOp(simdI16x8ExtendHighI8x16U, a) }

// I16x8Shl is i16x8.shl (shift count modulo 16).
func I16x8Shl(a, n Expr) Expr { return simdOp(simdI16x8Shl, a, n) }

// I16x8ShrS is i16x8.shr_s (shift count modulo 16).
func I16x8ShrS(a, n Expr) Expr { return simdOp(simdI16x8ShrS, a, n) }

// I16x8ShrU is i16x8.shr_u (shift count modulo 16).
func I16x8ShrU(a, n Expr) Expr { return simdOp(simdI16x8ShrU, a, n) }

// I16x8Add is i16x8.add (wrapping).
func I16x8Add(a, b Expr) Expr { return simdOp(simdI16x8Add, a, b) }

// I16x8Sub is i16x8.sub (wrapping).
func I16x8Sub(a, b Expr) Expr { return simdOp(simdI16x8Sub, a, b) }

// I16x8Mul is i16x8.mul (wrapping).
func I16x8Mul(a, b Expr) Expr { return simdOp(simdI16x8Mul, a, b) }

// I32x4ExtaddPairwiseI16x8S is i32x4.extadd_pairwise_i16x8_s.
func I32x4ExtaddPairwiseI16x8S(a Expr) Expr { return simdOp(simdI32x4ExtaddPairwiseI16x8S, a) }

// I32x4ExtendLowI16x8S is i32x4.extend_low_i16x8_s.
func I32x4ExtendLowI16x8S(a Expr) Expr { return simdOp(simdI32x4ExtendLowI16x8S, a) }

// I32x4ExtendLowI16x8U is i32x4.extend_low_i16x8_u.
func I32x4ExtendLowI16x8U(a Expr) Expr { return simdOp(simdI32x4ExtendLowI16x8U, a) }

// I32x4ExtendHighI16x8U is i32x4.extend_high_i16x8_u.
func I32x4ExtendHighI16x8U(a Expr) Expr { return simdOp(simdI32x4ExtendHighI16x8U, a) }

// I32x4Shl is i32x4.shl (shift count modulo 32).
func I32x4Shl(a, n Expr) Expr { return simdOp(simdI32x4Shl, a, n) }

// I32x4ShrS is i32x4.shr_s (shift count modulo 32).
func I32x4ShrS(a, n Expr) Expr { return simdOp(simdI32x4ShrS, a, n) }

// I16x8Eq is i16x8.eq: all ones in the lanes where a equals b.
func I16x8Eq(a, b Expr) Expr { return simdOp(simdI16x8Eq, a, b) }

// I8x16Eq is i8x16.eq: byte i is 0xff where a[i] == b[i], else 0.
func I8x16Eq(a, b Expr) Expr { return simdOp(simdI8x16Eq, a, b) }

// I8x16LtS is i8x16.lt_s: all ones in each byte where a < b (signed).
func I8x16LtS(a, b Expr) Expr { return simdOp(simdI8x16LtS, a, b) }

// I8x16Abs is i8x16.abs (-128 stays -128).
func I8x16Abs(a Expr) Expr { return simdOp(simdI8x16Abs, a) }

// I32x4Eq is i32x4.eq: all ones in the lanes where a equals b.
func I32x4Eq(a, b Expr) Expr { return simdOp(simdI32x4Eq, a, b) }

// I32x4Add is i32x4.add (wrapping).
func I32x4Add(a, b Expr) Expr { return simdOp(simdI32x4Add, a, b) }

// I32x4Sub is i32x4.sub (wrapping).
func I32x4Sub(a, b Expr) Expr { return simdOp(simdI32x4Sub, a, b) }

// I32x4Mul is i32x4.mul (wrapping).
func I32x4Mul(a, b Expr) Expr { return simdOp(simdI32x4Mul, a, b) }

// I32x4MinS is i32x4.min_s.
func I32x4MinS(a, b Expr) Expr { return simdOp(simdI32x4MinS, a, b) }

// I32x4MaxS is i32x4.max_s.
func I32x4MaxS(a, b Expr) Expr { return simdOp(simdI32x4MaxS, a, b) }

// I32x4TruncSatF32x4S is i32x4.trunc_sat_f32x4_s: toward zero, saturated,
// NaN to 0.
func I32x4TruncSatF32x4S(a Expr) Expr { return simdOp(simdI32x4TruncSatF32x4S, a) }

// I16x8RelaxedDotI8x16I7x16S is i16x8.relaxed_dot_i8x16_i7x16_s (relaxed
// SIMD): lane i is a[2i]·b[2i] + a[2i+1]·b[2i+1], a's bytes signed. The
// result is the same on every engine only where every byte of b is in
// 0..127 (an engine may read b signed or unsigned; the sum of two such
// products always fits in int16, so no engine saturates).
func I16x8RelaxedDotI8x16I7x16S(a, b Expr) Expr { return simdOp(simdI16x8RelaxedDotI8x16I7x16S, a, b) }

// I32x4DotI16x8S is i32x4.dot_i16x8_s: lane i is a[2i]·b[2i] + a[2i+1]·b[2i+1].
func I32x4DotI16x8S(a, b Expr) Expr { return simdOp(simdI32x4DotI16x8S, a, b) }

// Float lanes.

// F32x4Abs is f32x4.abs (clears the sign bits).
func F32x4Abs(a Expr) Expr { return simdOp(simdF32x4Abs, a) }

// F32x4Lt is f32x4.lt: all ones in the lanes where a < b.
func F32x4Lt(a, b Expr) Expr { return simdOp(simdF32x4Lt, a, b) }

// F32x4Gt is f32x4.gt: all ones in the lanes where a > b.
func F32x4Gt(a, b Expr) Expr { return simdOp(simdF32x4Gt, a, b) }

// F32x4Ge is f32x4.ge: all ones in the lanes where a ≥ b.
func F32x4Ge(a, b Expr) Expr { return simdOp(simdF32x4Ge, a, b) }

// F32x4Pmax is f32x4.pmax: b where a < b, else a (so a NaN b is ignored).
func F32x4Pmax(a, b Expr) Expr { return simdOp(simdF32x4Pmax, a, b) }

// F32x4Nearest is f32x4.nearest: to the nearest integer, ties to even.
func F32x4Nearest(a Expr) Expr { return simdOp(simdF32x4Nearest, a) }

// F32x4Add is f32x4.add.
func F32x4Add(a, b Expr) Expr { return simdOp(simdF32x4Add, a, b) }

// F32x4Sub is f32x4.sub.
func F32x4Sub(a, b Expr) Expr { return simdOp(simdF32x4Sub, a, b) }

// F32x4Mul is f32x4.mul.
func F32x4Mul(a, b Expr) Expr { return simdOp(simdF32x4Mul, a, b) }

// F32x4Div is f32x4.div.
func F32x4Div(a, b Expr) Expr { return simdOp(simdF32x4Div, a, b) }

// F32x4Neg is f32x4.neg.
func F32x4Neg(a Expr) Expr { return simdOp(simdF32x4Neg, a) }

// F32x4ConvertI32x4S is f32x4.convert_i32x4_s.
func F32x4ConvertI32x4S(a Expr) Expr { return simdOp(simdF32x4ConvertI32x4S, a) }

// F32Lt is f32.lt.
func F32Lt(a, b Expr) Expr { return plain(opF32Lt, a, b) }

// F32Sub is f32.sub.
func F32Sub(a, b Expr) Expr { return plain(opF32Sub, a, b) }

// V128Load64Lane is v128.load64_lane: v with 64-bit lane `lane` replaced
// by the 8 bytes at addr+offset.
func V128Load64Lane(addr Expr, offset uint32, v Expr, lane uint8) Expr {
	return simdLoadLane(simdV128Load64Lane, 3, addr, offset, v, lane)
}

// V128AndNot is v128.andnot: a & ^b.
func V128AndNot(a, b Expr) Expr { return simdOp(simdV128AndNot, a, b) }

// V128Xor is v128.xor.
func V128Xor(a, b Expr) Expr { return simdOp(simdV128Xor, a, b) }

// I32x4LtS is i32x4.lt_s: all ones in the lanes where a < b (signed).
func I32x4LtS(a, b Expr) Expr { return simdOp(simdI32x4LtS, a, b) }

// I32x4GtS is i32x4.gt_s: all ones in the lanes where a > b (signed).
func I32x4GtS(a, b Expr) Expr { return simdOp(simdI32x4GtS, a, b) }

// I32x4GeS is i32x4.ge_s: all ones in the lanes where a ≥ b (signed).
func I32x4GeS(a, b Expr) Expr { return simdOp(simdI32x4GeS, a, b) }

// I32x4ShrU is i32x4.shr_u (shift count modulo 32).
func I32x4ShrU(a, n Expr) Expr { return simdOp(simdI32x4ShrU, a, n) }

// I64x2ExtendLowI32x4S is i64x2.extend_low_i32x4_s: lanes 0 and 1,
// sign-extended.
func I64x2ExtendLowI32x4S(a Expr) Expr { return simdOp(simdI64x2ExtendLowI32x4S, a) }

// I64x2Shl is i64x2.shl (shift count modulo 64).
func I64x2Shl(a, n Expr) Expr { return simdOp(simdI64x2Shl, a, n) }

// F32x4Le is f32x4.le: all ones in the lanes where a ≤ b.
func F32x4Le(a, b Expr) Expr { return simdOp(simdF32x4Le, a, b) }

// F32x4DemoteF64x2Zero is f32x4.demote_f64x2_zero: a's two float64 lanes
// rounded to float32 (to nearest, ties to even) in lanes 0 and 1, zeros in
// lanes 2 and 3.
func F32x4DemoteF64x2Zero(a Expr) Expr { return simdOp(simdF32x4DemoteF64x2Zero, a) }

// F64x2PromoteLowF32x4 is f64x2.promote_low_f32x4: a's float32 lanes 0
// and 1, exactly as float64.
func F64x2PromoteLowF32x4(a Expr) Expr { return simdOp(simdF64x2PromoteLowF32x4, a) }

// F64x2Floor is f64x2.floor.
func F64x2Floor(a Expr) Expr { return simdOp(simdF64x2Floor, a) }

// F64x2Add is f64x2.add.
func F64x2Add(a, b Expr) Expr { return simdOp(simdF64x2Add, a, b) }

// F64x2Sub is f64x2.sub.
func F64x2Sub(a, b Expr) Expr { return simdOp(simdF64x2Sub, a, b) }

// F64x2Mul is f64x2.mul.
func F64x2Mul(a, b Expr) Expr { return simdOp(simdF64x2Mul, a, b) }

// F64x2Pmin is f64x2.pmin: b where b < a, else a (so a NaN a is kept).
func F64x2Pmin(a, b Expr) Expr { return simdOp(simdF64x2Pmin, a, b) }

// F64x2Pmax is f64x2.pmax: b where a < b, else a (so a NaN a is kept).
func F64x2Pmax(a, b Expr) Expr { return simdOp(simdF64x2Pmax, a, b) }

// I32x4TruncSatF64x2SZero is i32x4.trunc_sat_f64x2_s_zero: a's float64
// lanes toward zero, saturated, NaN to 0, in lanes 0 and 1; zeros in lanes
// 2 and 3.
func I32x4TruncSatF64x2SZero(a Expr) Expr { return simdOp(simdI32x4TruncSatF64x2SZero, a) }

// F64Add is f64.add.
func F64Add(a, b Expr) Expr { return plain(opF64Add, a, b) }

// F64Div is f64.div.
func F64Div(a, b Expr) Expr { return plain(opF64Div, a, b) }

// F64Sqrt is f64.sqrt (correctly rounded).
func F64Sqrt(a Expr) Expr { return plain(opF64Sqrt, a) }

// F64PromoteF32 is f64.promote_f32 (exact).
func F64PromoteF32(a Expr) Expr { return plain(opF64PromoteF32, a) }

// F32DemoteF64 is f32.demote_f64: to nearest, ties to even.
func F32DemoteF64(a Expr) Expr { return plain(opF32DemoteF64, a) }

// F64ConvertI32S is f64.convert_i32_s (exact).
func F64ConvertI32S(a Expr) Expr { return plain(opF64ConvertI32S, a) }
