//go:build !js

package wasmgen

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInstructionsInNode runs every instruction constructor in V8 (Node)
// on random operands and compares the results with Go implementations of
// the specification's semantics, so that a wrong opcode, immediate or
// operand order is caught. Each case is a function that reads operands a,
// b, c (16 bytes each at 0, 16, 32) and stores its result at 64, whose bytes
// are 0xaa before the call.

type v128 = [16]byte

type execCase struct {
	name   string
	floats bool // operands are float32 lanes (finite, no NaN)
	emit   func(f *Func)
	ref    func(a, b, c v128) v128
}

var (
	opA = V128Load(I32Const(0), 0)
	opB = V128Load(I32Const(0), 16)
	opC = V128Load(I32Const(0), 32)
)

func storeV(e Expr) func(f *Func) { return func(f *Func) { f.V128Store(I32Const(64), 0, e) } }

// storeI32 stores an i32 result in bytes 64..67 (through f32: the
// instructions used have no i32.store).
func storeI32(e Expr) func(f *Func) {
	return func(f *Func) { f.F32Store(I32Const(64), 0, F32ReinterpretI32(e)) }
}

func scalarA() Expr { return I32ReinterpretF32(F32Load(I32Const(0), 0)) }
func scalarB() Expr { return I32ReinterpretF32(F32Load(I32Const(0), 16)) }

func u16(v v128, i int) uint16  { return binary.LittleEndian.Uint16(v[2*i:]) }
func u32(v v128, i int) uint32  { return binary.LittleEndian.Uint32(v[4*i:]) }
func f32(v v128, i int) float32 { return math.Float32frombits(u32(v, i)) }

func put16(v *v128, i int, x uint16) { binary.LittleEndian.PutUint16(v[2*i:], x) }
func put32(v *v128, i int, x uint32) { binary.LittleEndian.PutUint32(v[4*i:], x) }
func putF(v *v128, i int, x float32) { put32(v, i, math.Float32bits(x)) }
func untouched() (v v128) {
	return [16]byte{0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa}
}
func scalarOut(x uint32) (v v128) { v = untouched(); put32(&v, 0, x); return v }
func bytewise(fn func(x, y byte) byte) func(a, b, c v128) v128 {
	return func(a, b, _ v128) (r v128) {
		for i := range r {
			r[i] = fn(a[i], b[i])
		}
		return r
	}
}
func lanes16(fn func(a, b v128, i int) uint16) func(a, b, c v128) v128 {
	return func(a, b, _ v128) (r v128) {
		for i := range 8 {
			put16(&r, i, fn(a, b, i))
		}
		return r
	}
}
func lanes32(fn func(a, b, c v128, i int) uint32) func(a, b, c v128) v128 {
	return func(a, b, c v128) (r v128) {
		for i := range 4 {
			put32(&r, i, fn(a, b, c, i))
		}
		return r
	}
}

// truncSat is i32.trunc_sat_f32_s: toward zero, saturated, NaN to 0.
func truncSat(f float32) int32 {
	switch {
	case f != f:
		return 0
	case f >= 0x1p31:
		return math.MaxInt32
	case f < -0x1p31:
		return math.MinInt32
	}
	return int32(f)
}

func boolI32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// i7Mask keeps the relaxed dot products' second operand in 0..127, where
// their results are defined.
var i7Mask = [16]uint8{0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f}

var shufflePattern = [16]uint8{31, 0, 17, 5, 5, 16, 2, 29, 8, 9, 10, 11, 24, 3, 14, 20}

var execCases = []execCase{
	{"v128.and", false, storeV(V128And(opA, opB)), bytewise(func(x, y byte) byte { return x & y })},
	{"v128.or", false, storeV(V128Or(opA, opB)), bytewise(func(x, y byte) byte { return x | y })},
	{"i8x16.shl", false, storeV(I8x16Shl(opA, I32Const(11))), bytewise(func(x, _ byte) byte { return x << 3 })},
	{"i8x16.swizzle", false, storeV(I8x16Swizzle(opA, opB)), func(a, b, _ v128) (r v128) {
		for i, j := range b {
			if j < 16 {
				r[i] = a[j]
			}
		}
		return r
	}},
	{"i8x16.shr_u", false, storeV(I8x16ShrU(opA, I32Const(5))), bytewise(func(x, _ byte) byte { return x >> 5 })},
	{"i8x16.sub", false, storeV(I8x16Sub(opA, opB)), bytewise(func(x, y byte) byte { return x - y })},
	{"i16x8.extend_low_i8x16_s", false, storeV(I16x8ExtendLowI8x16S(opA)), lanes16(func(a, _ v128, i int) uint16 { return uint16(int16(int8(a[i]))) })},
	{"i16x8.extend_high_i8x16_s", false, storeV(I16x8ExtendHighI8x16S(opA)), lanes16(func(a, _ v128, i int) uint16 { return uint16(int16(int8(a[8+i]))) })},
	{"i16x8.extend_low_i8x16_u", false, storeV(I16x8ExtendLowI8x16U(opA)), lanes16(func(a, _ v128, i int) uint16 { return uint16(a[i]) })},
	{"i16x8.extend_high_i8x16_u", false, storeV(I16x8ExtendHighI8x16U(opA)), lanes16(func(a, _ v128, i int) uint16 { return uint16(a[8+i]) })},
	{"i16x8.shl", false, storeV(I16x8Shl(opA, I32Const(3))), lanes16(func(a, _ v128, i int) uint16 { return u16(a, i) << 3 })},
	{"i16x8.shr_s", false, storeV(I16x8ShrS(opA, I32Const(21))), lanes16(func(a, _ v128, i int) uint16 { return uint16(int16(u16(a, i)) >> 5) })},
	{"i16x8.shr_u", false, storeV(I16x8ShrU(opA, I32Const(12))), lanes16(func(a, _ v128, i int) uint16 { return u16(a, i) >> 12 })},
	{"i16x8.add", false, storeV(I16x8Add(opA, opB)), lanes16(func(a, b v128, i int) uint16 { return u16(a, i) + u16(b, i) })},
	{"i16x8.sub", false, storeV(I16x8Sub(opA, opB)), lanes16(func(a, b v128, i int) uint16 { return u16(a, i) - u16(b, i) })},
	{"i16x8.mul", false, storeV(I16x8Mul(opA, opB)), lanes16(func(a, b v128, i int) uint16 { return u16(a, i) * u16(b, i) })},
	{"i16x8.splat", false, storeV(I16x8Splat(scalarA())), lanes16(func(a, _ v128, _ int) uint16 { return u16(a, 0) })},
	{"i8x16.eq", false, storeV(I8x16Eq(opA, opC)), func(a, _, c v128) (r v128) {
		for i := range r {
			if a[i] == c[i] {
				r[i] = 0xff
			}
		}
		return r
	}},
	{"i8x16.lt_s", false, storeV(I8x16LtS(opA, opB)), func(a, b, _ v128) (r v128) {
		for i := range r {
			if int8(a[i]) < int8(b[i]) {
				r[i] = 0xff
			}
		}
		return r
	}},
	{"i8x16.abs", false, storeV(I8x16Abs(opA)), func(a, _, _ v128) (r v128) {
		for i := range r {
			r[i] = a[i]
			if int8(a[i]) < 0 {
				r[i] = -a[i] // 0x80 stays 0x80
			}
		}
		return r
	}},
	{"i16x8.eq", false, storeV(I16x8Eq(opA, opC)), func(a, _, c v128) (r v128) {
		for i := range 8 {
			put16(&r, i, uint16(-int16(boolI32(u16(a, i) == u16(c, i)))))
		}
		return r
	}},
	{"i32x4.extadd_pairwise_i16x8_s", false, storeV(I32x4ExtaddPairwiseI16x8S(opA)), lanes32(func(a, _, _ v128, i int) uint32 {
		return uint32(int32(int16(u16(a, 2*i))) + int32(int16(u16(a, 2*i+1))))
	})},
	{"i32x4.extend_low_i16x8_s", false, storeV(I32x4ExtendLowI16x8S(opA)), lanes32(func(a, _, _ v128, i int) uint32 { return uint32(int32(int16(u16(a, i)))) })},
	{"i32x4.extend_low_i16x8_u", false, storeV(I32x4ExtendLowI16x8U(opA)), lanes32(func(a, _, _ v128, i int) uint32 { return uint32(u16(a, i)) })},
	{"i32x4.extend_high_i16x8_u", false, storeV(I32x4ExtendHighI16x8U(opA)), lanes32(func(a, _, _ v128, i int) uint32 { return uint32(u16(a, 4+i)) })},
	{"i32x4.shl", false, storeV(I32x4Shl(opA, I32Const(7))), lanes32(func(a, _, _ v128, i int) uint32 { return u32(a, i) << 7 })},
	{"i32x4.shr_s", false, storeV(I32x4ShrS(opA, I32Const(24))), lanes32(func(a, _, _ v128, i int) uint32 { return uint32(int32(u32(a, i)) >> 24) })},
	{"i32x4.eq", false, storeV(I32x4Eq(opA, opC)), lanes32(func(a, _, c v128, i int) uint32 { return -boolI32(u32(a, i) == u32(c, i)) })},
	{"i32x4.add", false, storeV(I32x4Add(opA, opB)), lanes32(func(a, b, _ v128, i int) uint32 { return u32(a, i) + u32(b, i) })},
	{"i32x4.sub", false, storeV(I32x4Sub(opA, opB)), lanes32(func(a, b, _ v128, i int) uint32 { return u32(a, i) - u32(b, i) })},
	{"i32x4.mul", false, storeV(I32x4Mul(opA, opB)), lanes32(func(a, b, _ v128, i int) uint32 { return u32(a, i) * u32(b, i) })},
	{"i32x4.dot_i16x8_s", false, storeV(I32x4DotI16x8S(opA, opB)), lanes32(func(a, b, _ v128, i int) uint32 {
		return uint32(int32(int16(u16(a, 2*i)))*int32(int16(u16(b, 2*i))) + int32(int16(u16(a, 2*i+1)))*int32(int16(u16(b, 2*i+1))))
	})},
	{"i16x8.relaxed_dot_i8x16_i7x16_s", false, storeV(I16x8RelaxedDotI8x16I7x16S(opA, V128And(opB, I8x16Const(i7Mask)))), lanes16(func(a, b v128, i int) uint16 {
		return uint16(int16(int8(a[2*i]))*int16(b[2*i]&0x7f) + int16(int8(a[2*i+1]))*int16(b[2*i+1]&0x7f))
	})},
	{"i32x4.min_s", false, storeV(I32x4MinS(opA, opB)), lanes32(func(a, b, _ v128, i int) uint32 { return uint32(min(int32(u32(a, i)), int32(u32(b, i)))) })},
	{"i32x4.max_s", false, storeV(I32x4MaxS(opA, opB)), lanes32(func(a, b, _ v128, i int) uint32 { return uint32(max(int32(u32(a, i)), int32(u32(b, i)))) })},
	{"i32x4.extract_lane", false, storeI32(I32x4ExtractLane(opA, 3)), func(a, _, _ v128) v128 { return scalarOut(u32(a, 3)) }},
	{"v128.bitselect", false, storeV(V128Bitselect(opA, opB, opC)), func(a, b, c v128) (r v128) {
		for i := range r {
			r[i] = a[i]&c[i] | b[i]&^c[i]
		}
		return r
	}},
	{"i16x8.narrow_i32x4_s", false, storeV(I16x8NarrowI32x4S(I32x4ShrS(opA, I32Const(12)), opB)), lanes16(func(a, b v128, i int) uint16 {
		v := int32(u32(a, i%4)) >> 12
		if i >= 4 {
			v = int32(u32(b, i-4))
		}
		return uint16(int16(min(max(v, math.MinInt16), math.MaxInt16)))
	})},
	{"i8x16.narrow_i16x8_s", false, storeV(I8x16NarrowI16x8S(I16x8ShrS(opA, I32Const(4)), opB)), func(a, b, _ v128) (r v128) {
		for i := range r {
			v := int16(u16(a, i%8)) >> 4
			if i >= 8 {
				v = int16(u16(b, i-8))
			}
			r[i] = byte(int8(min(max(v, math.MinInt8), math.MaxInt8)))
		}
		return r
	}},
	{"i32x4.trunc_sat_f32x4_s", true, storeV(I32x4TruncSatF32x4S(F32x4Mul(opA, opC))), lanes32(func(a, _, c v128, i int) uint32 {
		return uint32(truncSat(f32(a, i) * f32(c, i)))
	})},
	{"f32x4.nearest", true, storeV(F32x4Nearest(opA)), lanes32(func(a, _, _ v128, i int) uint32 {
		return math.Float32bits(float32(math.RoundToEven(float64(f32(a, i)))))
	})},
	{"f32x4.abs", true, storeV(F32x4Abs(opA)), lanes32(func(a, _, _ v128, i int) uint32 { return u32(a, i) &^ (1 << 31) })},
	{"f32x4.lt", true, storeV(F32x4Lt(opA, opC)), lanes32(func(a, _, c v128, i int) uint32 { return -boolI32(f32(a, i) < f32(c, i)) })},
	{"f32x4.gt", true, storeV(F32x4Gt(opA, opC)), lanes32(func(a, _, c v128, i int) uint32 { return -boolI32(f32(a, i) > f32(c, i)) })},
	{"f32x4.ge", true, storeV(F32x4Ge(opA, opC)), lanes32(func(a, _, c v128, i int) uint32 { return -boolI32(f32(a, i) >= f32(c, i)) })},
	{"f32x4.pmax", true, storeV(F32x4Pmax(opA, opB)), lanes32(func(a, b, _ v128, i int) uint32 {
		if f32(a, i) < f32(b, i) {
			return u32(b, i)
		}
		return u32(a, i)
	})},
	{"f32x4.add", true, storeV(F32x4Add(opA, opB)), lanes32(func(a, b, _ v128, i int) uint32 { return math.Float32bits(f32(a, i) + f32(b, i)) })},
	{"f32x4.sub", true, storeV(F32x4Sub(opA, opB)), lanes32(func(a, b, _ v128, i int) uint32 { return math.Float32bits(f32(a, i) - f32(b, i)) })},
	{"f32x4.mul", true, storeV(F32x4Mul(opA, opB)), lanes32(func(a, b, _ v128, i int) uint32 { return math.Float32bits(f32(a, i) * f32(b, i)) })},
	{"f32x4.convert_i32x4_s", false, storeV(F32x4ConvertI32x4S(opA)), lanes32(func(a, _, _ v128, i int) uint32 { return math.Float32bits(float32(int32(u32(a, i)))) })},
	{"f32x4.splat", true, storeV(F32x4Splat(F32Load(I32Const(0), 20))), lanes32(func(_, b, _ v128, _ int) uint32 { return u32(b, 1) })},
	{"f32x4.extract_lane replace_lane", true, storeV(F32x4ReplaceLane(opA, 2, F32Add(F32x4ExtractLane(opA, 1), F32Load(I32Const(0), 16)))),
		lanes32(func(a, b, _ v128, i int) uint32 {
			if i == 2 {
				return math.Float32bits(f32(a, 1) + f32(b, 0))
			}
			return u32(a, i)
		})},
	{"i8x16.shuffle", false, storeV(I8x16Shuffle(opA, opB, shufflePattern)), func(a, b, _ v128) (r v128) {
		ab := append(a[:], b[:]...)
		for i, j := range shufflePattern {
			r[i] = ab[j]
		}
		return r
	}},
	{"v128.const", false, storeV(V128Const([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})), func(_, _, _ v128) v128 {
		return [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	}},
	{"i8x16 const", false, storeV(I8x16Const([16]uint8{0: 0xff, 3: 7, 15: 0x80})), func(_, _, _ v128) v128 {
		return [16]byte{0: 0xff, 3: 7, 15: 0x80}
	}},
	{"i16x8 const", false, storeV(I16x8Const([8]uint16{1, 0xfffe, 3, 4, 5, 6, 7, 0x8000})), lanes16(func(_, _ v128, i int) uint16 {
		return [8]uint16{1, 0xfffe, 3, 4, 5, 6, 7, 0x8000}[i]
	})},
	{"i32x4 const", false, storeV(I32x4Const([4]uint32{1, 0xfffffffe, 0x12345678, 0x80000000})), lanes32(func(_, _, _ v128, i int) uint32 {
		return [4]uint32{1, 0xfffffffe, 0x12345678, 0x80000000}[i]
	})},
	{"v128.load8x8_s", false, storeV(V128Load8x8S(I32Const(0), 3)), lanes16(func(a, _ v128, i int) uint16 { return uint16(int16(int8(a[3+i]))) })},
	{"v128.load16x4_u", false, storeV(V128Load16x4U(I32Const(0), 2)), lanes32(func(a, _, _ v128, i int) uint32 { return uint32(u16(a, 1+i)) })},
	{"v128.load32_splat", false, storeV(V128Load32Splat(I32Const(4), 16)), lanes32(func(_, b, _ v128, _ int) uint32 { return u32(b, 1) })},
	{"v128.load16_splat", false, storeV(V128Load16Splat(I32Const(2), 16)), lanes16(func(_, b v128, _ int) uint16 { return u16(b, 1) })},
	{"v128.load16_lane", false, storeV(V128Load16Lane(I32Const(2), 4, opB, 3)), func(a, b, _ v128) v128 {
		put16(&b, 3, u16(a, 3))
		return b
	}},
	{"v128.load32_lane", false, storeV(V128Load32Lane(I32Const(16), 8, opA, 2)), func(a, b, _ v128) v128 {
		put32(&a, 2, u32(b, 2))
		return a
	}},
	{"v128.store32_lane", false, func(f *Func) { f.V128Store32Lane(I32Const(60), 8, opA, 2) }, func(a, _, _ v128) v128 {
		r := untouched()
		put32(&r, 1, u32(a, 2))
		return r
	}},
	{"i32.eq", false, storeI32(I32Eq(scalarA(), I32And(scalarB(), I32Const(0)))), func(a, _, _ v128) v128 { return scalarOut(boolI32(u32(a, 0) == 0)) }},
	{"i32.lt_s", false, storeI32(I32LtS(scalarA(), scalarB())), func(a, b, _ v128) v128 { return scalarOut(boolI32(int32(u32(a, 0)) < int32(u32(b, 0)))) }},
	{"i32.ge_s", false, storeI32(I32GeS(scalarA(), scalarB())), func(a, b, _ v128) v128 { return scalarOut(boolI32(int32(u32(a, 0)) >= int32(u32(b, 0)))) }},
	{"i32.add", false, storeI32(I32Add(scalarA(), scalarB())), func(a, b, _ v128) v128 { return scalarOut(u32(a, 0) + u32(b, 0)) }},
	{"i32.sub", false, storeI32(I32Sub(scalarA(), scalarB())), func(a, b, _ v128) v128 { return scalarOut(u32(a, 0) - u32(b, 0)) }},
	{"i32.mul", false, storeI32(I32Mul(scalarA(), scalarB())), func(a, b, _ v128) v128 { return scalarOut(u32(a, 0) * u32(b, 0)) }},
	{"i32.and", false, storeI32(I32And(scalarA(), scalarB())), func(a, b, _ v128) v128 { return scalarOut(u32(a, 0) & u32(b, 0)) }},
	{"i32.or", false, storeI32(I32Or(scalarA(), scalarB())), func(a, b, _ v128) v128 { return scalarOut(u32(a, 0) | u32(b, 0)) }},
	{"i32.shl", false, storeI32(I32Shl(scalarA(), scalarB())), func(a, b, _ v128) v128 { return scalarOut(u32(a, 0) << (u32(b, 0) & 31)) }},
	{"i32.load", false, storeI32(I32Load(I32Const(4), 12)), func(_, b, _ v128) v128 { return scalarOut(u32(b, 0)) }},
	{"i32.shr_u", false, storeI32(I32ShrU(scalarA(), scalarB())), func(a, b, _ v128) v128 { return scalarOut(u32(a, 0) >> (u32(b, 0) & 31)) }},
	{"i32.load8_s", false, storeI32(I32Load8S(I32Const(4), 1)), func(a, _, _ v128) v128 { return scalarOut(uint32(int32(int8(a[5])))) }},
	{"i32.load8_u", false, storeI32(I32Load8U(I32Const(4), 2)), func(a, _, _ v128) v128 { return scalarOut(uint32(a[6])) }},
	{"i32.lt_u", false, storeI32(I32LtU(scalarA(), scalarB())), func(a, b, _ v128) v128 { return scalarOut(boolI32(u32(a, 0) < u32(b, 0))) }},
	{"i32.div_u", false, storeI32(I32DivU(scalarA(), I32Or(scalarB(), I32Const(1)))), func(a, b, _ v128) v128 { return scalarOut(u32(a, 0) / (u32(b, 0) | 1)) }},
	{"i32.load16_u", false, storeI32(I32Load16U(I32Const(4), 2)), func(a, _, _ v128) v128 { return scalarOut(uint32(u16(a, 3))) }},
	{"select", false, storeI32(Select(scalarA(), scalarB(), I32LtS(scalarA(), scalarB()))), func(a, b, _ v128) v128 {
		return scalarOut(uint32(min(int32(u32(a, 0)), int32(u32(b, 0)))))
	}},
	{"f32.add", true, func(f *Func) { f.F32Store(I32Const(64), 0, F32Add(F32Load(I32Const(0), 0), F32Load(I32Const(0), 16))) },
		func(a, b, _ v128) v128 { return scalarOut(math.Float32bits(f32(a, 0) + f32(b, 0))) }},
	{"f32.mul", true, func(f *Func) { f.F32Store(I32Const(64), 0, F32Mul(F32Load(I32Const(0), 0), F32Load(I32Const(0), 16))) },
		func(a, b, _ v128) v128 { return scalarOut(math.Float32bits(f32(a, 0) * f32(b, 0))) }},
	{"f32.div", true, func(f *Func) { f.F32Store(I32Const(64), 0, F32Div(F32Load(I32Const(0), 0), F32Load(I32Const(0), 16))) },
		func(a, b, _ v128) v128 { return scalarOut(math.Float32bits(f32(a, 0) / f32(b, 0))) }},
	{"f32.eq f32.ne f32.gt", true, func(f *Func) {
		fa, fc := F32Load(I32Const(0), 0), F32Load(I32Const(0), 32)
		f.I32Store(I32Const(64), 0, I32Or(I32Or(F32Eq(fa, fc), I32Shl(F32Ne(fa, fc), I32Const(1))), I32Shl(F32Gt(fa, fc), I32Const(2))))
	}, func(a, _, c v128) v128 {
		return scalarOut(boolI32(f32(a, 0) == f32(c, 0)) | boolI32(f32(a, 0) != f32(c, 0))<<1 | boolI32(f32(a, 0) > f32(c, 0))<<2)
	}},
	{"i32.store16", false, func(f *Func) { f.I32Store16(I32Const(64), 2, scalarA()) }, func(a, _, _ v128) v128 {
		r := untouched()
		put16(&r, 1, u16(a, 0))
		return r
	}},
	{"f32.const", false, func(f *Func) { f.F32Store(I32Const(64), 0, F32Const(-1.25)) },
		func(_, _, _ v128) v128 { return scalarOut(math.Float32bits(-1.25)) }},
	{"f32.lt f32.sub", true, func(f *Func) {
		fa, fc := F32Load(I32Const(0), 0), F32Load(I32Const(0), 32)
		f.F32Store(I32Const(64), 0, F32Sub(fa, fc))
		f.I32Store(I32Const(64), 4, F32Lt(fa, fc))
	}, func(a, _, c v128) v128 {
		r := scalarOut(math.Float32bits(f32(a, 0) - f32(c, 0)))
		put32(&r, 1, boolI32(f32(a, 0) < f32(c, 0)))
		return r
	}},
	{"v128.load64_lane", false, storeV(V128Load64Lane(I32Const(16), 8, opA, 1)), func(a, b, _ v128) v128 {
		copy(a[8:], b[8:])
		return a
	}},
	{"v128.andnot", false, storeV(V128AndNot(opA, opB)), bytewise(func(x, y byte) byte { return x &^ y })},
	{"v128.xor", false, storeV(V128Xor(opA, opB)), bytewise(func(x, y byte) byte { return x ^ y })},
	{"i32x4.lt_s", false, storeV(I32x4LtS(opA, opC)), lanes32(func(a, _, c v128, i int) uint32 { return allOnes(int32(u32(a, i)) < int32(u32(c, i))) })},
	{"i32x4.gt_s", false, storeV(I32x4GtS(opA, opC)), lanes32(func(a, _, c v128, i int) uint32 { return allOnes(int32(u32(a, i)) > int32(u32(c, i))) })},
	{"i32x4.ge_s", false, storeV(I32x4GeS(opA, opC)), lanes32(func(a, _, c v128, i int) uint32 { return allOnes(int32(u32(a, i)) >= int32(u32(c, i))) })},
	{"i32x4.shr_u", false, storeV(I32x4ShrU(opA, scalarB())), lanes32(func(a, b, _ v128, i int) uint32 { return u32(a, i) >> (u32(b, 0) & 31) })},
	{"i64x2.extend_low_i32x4_s i64x2.shl", false, storeV(I64x2Shl(I64x2ExtendLowI32x4S(opA), scalarB())), func(a, b, _ v128) (r v128) {
		for i := range 2 {
			binary.LittleEndian.PutUint64(r[8*i:], uint64(int64(int32(u32(a, i))))<<(u32(b, 0)&63))
		}
		return r
	}},
	{"f32x4.le", true, storeV(F32x4Le(opA, opC)), lanes32(func(a, _, c v128, i int) uint32 { return allOnes(f32(a, i) <= f32(c, i)) })},
	{"f64x2.promote_low_f32x4 f64x2.add f32x4.demote_f64x2_zero", true, storeV(F32x4DemoteF64x2Zero(F64x2Add(F64x2PromoteLowF32x4(opA), F64x2PromoteLowF32x4(opB)))),
		f64Lanes(func(x, y float64) float64 { return x + y })},
	{"f64x2.sub", true, storeV(F32x4DemoteF64x2Zero(F64x2Sub(F64x2PromoteLowF32x4(opA), F64x2PromoteLowF32x4(opB)))),
		f64Lanes(func(x, y float64) float64 { return x - y })},
	{"f64x2.mul", true, storeV(F32x4DemoteF64x2Zero(F64x2Mul(F64x2PromoteLowF32x4(opA), F64x2PromoteLowF32x4(opB)))),
		f64Lanes(func(x, y float64) float64 { return x * y })},
	{"f64x2.pmin", true, storeV(F32x4DemoteF64x2Zero(F64x2Pmin(F64x2PromoteLowF32x4(opA), F64x2PromoteLowF32x4(opB)))),
		f64Lanes(func(x, y float64) float64 { return min(x, y) })},
	{"f64x2.pmax", true, storeV(F32x4DemoteF64x2Zero(F64x2Pmax(F64x2PromoteLowF32x4(opA), F64x2PromoteLowF32x4(opB)))),
		f64Lanes(func(x, y float64) float64 { return max(x, y) })},
	{"f64x2.floor", true, storeV(F32x4DemoteF64x2Zero(F64x2Floor(F64x2Mul(F64x2PromoteLowF32x4(opA), F64x2PromoteLowF32x4(opB))))),
		f64Lanes(func(x, y float64) float64 { return math.Floor(x * y) })},
	{"i32x4.trunc_sat_f64x2_s_zero", true, storeV(I32x4TruncSatF64x2SZero(F64x2Mul(F64x2PromoteLowF32x4(opA), F64x2PromoteLowF32x4(opB)))),
		func(a, b, _ v128) (r v128) {
			for i := range 2 {
				p := float64(f32(a, i)) * float64(f32(b, i))
				put32(&r, i, uint32(int32(max(min(math.Trunc(p), math.MaxInt32), math.MinInt32))))
			}
			return r
		}},
	{"f64.promote_f32 f64.add f64.div f64.sqrt f64.convert_i32_s f32.demote_f64", true, func(f *Func) {
		fa, fb := F64PromoteF32(F32Load(I32Const(0), 0)), F64PromoteF32(F32Load(I32Const(0), 16))
		n := F64ConvertI32S(I32And(I32ReinterpretF32(F32Load(I32Const(0), 32)), I32Const(0x7fff)))
		f.F32Store(I32Const(64), 0, F32DemoteF64(F64Div(F64Add(fa, fb), n)))
		abs := F32ReinterpretI32(I32And(I32ReinterpretF32(F32Load(I32Const(0), 4)), I32Const(0x7fffffff)))
		f.F32Store(I32Const(64), 4, F32DemoteF64(F64Sqrt(F64PromoteF32(abs))))
	}, func(a, b, c v128) v128 {
		r := scalarOut(math.Float32bits(float32((float64(f32(a, 0)) + float64(f32(b, 0))) / float64(int32(u32(c, 0)&0x7fff)))))
		putF(&r, 1, float32(math.Sqrt(math.Abs(float64(f32(a, 1))))))
		return r
	}},
	{"block loop br br_if if else tee drop return", false, emitControl, refControl},
}

// allOnes is a SIMD comparison's lane: all ones where c holds.
func allOnes(c bool) uint32 {
	if c {
		return 0xffffffff
	}
	return 0
}

// f64Lanes is the reference of an f64x2 operation on lanes 0 and 1 of a
// and b promoted to float64, its results demoted to float32 (lanes 2, 3
// zero). The operands are finite, so pmin and pmax are min and max (their
// only difference, ±0, cannot show: a lane's operands are never both zero).
func f64Lanes(op func(x, y float64) float64) func(a, b, c v128) v128 {
	return func(a, b, _ v128) (r v128) {
		for i := range 2 {
			putF(&r, i, float32(op(float64(f32(a, i)), float64(f32(b, i)))))
		}
		return r
	}
}

// emitControl: n = a&15; if n == 0 store 77 and return; s = Σ_{i<n} i;
// store s if it is odd, else 2s (with a tee and a drop on the way).
func emitControl(f *Func) {
	n, i, s := f.Local(I32), f.Local(I32), f.Local(I32)
	f.Set(n, I32And(scalarA(), I32Const(15)))
	f.If(I32Eq(Get(n), I32Const(0)), func() {
		storeI32(I32Const(77))(f)
		f.Return()
	})
	f.Block(func() {
		f.Loop(func() {
			f.BrIf(1, I32GeS(Get(i), Get(n)))
			f.Set(s, I32Add(Get(s), Get(i)))
			f.Drop(Tee(i, I32Add(Get(i), I32Const(1))))
			f.Br(0)
		})
	})
	f.IfElse(I32And(Get(s), I32Const(1)), func() { storeI32(Get(s))(f) }, func() { storeI32(I32Add(Get(s), Get(s)))(f) })
}

func refControl(a, _, _ v128) v128 {
	n := u32(a, 0) & 15
	if n == 0 {
		return scalarOut(77)
	}
	s := n * (n - 1) / 2
	if s&1 == 1 {
		return scalarOut(s)
	}
	return scalarOut(2 * s)
}

const execRunner = `
const fs = require("fs");
const [wasm, inputs] = process.argv.slice(1);
const bytes = fs.readFileSync(wasm);
// Node 20 has relaxed SIMD behind a flag (later versions by default).
if (!WebAssembly.validate(bytes)) require("v8").setFlagsFromString("--experimental-wasm-relaxed-simd");
const mem = new WebAssembly.Memory({initial: 1});
const inst = new WebAssembly.Instance(new WebAssembly.Module(bytes), {t: {mem}});
const u8 = new Uint8Array(mem.buffer);
const out = JSON.parse(fs.readFileSync(inputs, "utf8")).map(({fn, input}) => {
  u8.set(Buffer.from(input, "hex"), 0);
  u8.fill(0xaa, 64, 80);
  inst.exports[fn]();
  return Buffer.from(u8.subarray(64, 80)).toString("hex");
});
console.log(JSON.stringify(out));
`

// nodeHasRelaxedSIMD reports whether node validates i16x8.relaxed_dot
// (Node 20 behind its flag, later versions by default; older ones had
// other opcodes, or none).
func nodeHasRelaxedSIMD(node string) bool {
	const probe = `const b = new Uint8Array([0,97,115,109,1,0,0,0,1,5,1,96,0,1,123,3,2,1,0,10,15,1,13,0,65,0,253,15,65,0,253,15,253,146,2,11]);
if (!WebAssembly.validate(b)) { try { require("v8").setFlagsFromString("--experimental-wasm-relaxed-simd"); } catch {} }
process.exit(WebAssembly.validate(b) ? 0 : 1);`
	return exec.Command(node, "-e", probe).Run() == nil
}

func TestInstructionsInNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is missing (Debian package nodejs)")
		}
		t.Skip("node is missing (Debian package nodejs)")
	}
	cases := execCases
	if !nodeHasRelaxedSIMD(node) {
		t.Log("this Node has no relaxed SIMD: its instructions are left out")
		cases = slices.DeleteFunc(slices.Clone(cases), func(c execCase) bool { return strings.Contains(c.name, "relaxed") })
	}
	m := NewModule()
	m.ImportMemory("t", "mem", 1)
	for i, c := range cases {
		c.emit(m.Func(fmt.Sprintf("c%d", i), nil, nil))
	}
	b, err := m.Bytes()
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(7, 7))
	type input struct {
		Fn    string `json:"fn"`
		Input string `json:"input"`
	}
	var inputs []input
	var operands [][3]v128
	for i, c := range cases {
		for range 16 {
			var ops [3]v128
			for k := range ops {
				for j := range ops[k] {
					ops[k][j] = byte(rng.Uint32())
				}
				if c.floats {
					for j := range 4 {
						putF(&ops[k], j, float32(rng.NormFloat64()*math.Pow(2, float64(rng.IntN(40)-20))))
					}
				}
			}
			for j := range 4 { // c shares lanes 1 and 3 with a (for i32x4.eq)
				if j%2 == 1 {
					put32(&ops[2], j, u32(ops[0], j))
				}
			}
			in := append(append(ops[0][:], ops[1][:]...), ops[2][:]...)
			inputs = append(inputs, input{fmt.Sprintf("c%d", i), hex.EncodeToString(in)})
			operands = append(operands, ops)
		}
	}
	dir := t.TempDir()
	wasmPath, inPath := filepath.Join(dir, "m.wasm"), filepath.Join(dir, "in.json")
	require.NoError(t, os.WriteFile(wasmPath, b, 0o644))
	js, err := json.Marshal(inputs)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(inPath, js, 0o644))
	out, err := exec.Command(node, "-e", execRunner, wasmPath, inPath).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var results []string
	require.NoError(t, json.Unmarshal(out, &results), "%s", out)
	require.Len(t, results, len(inputs))
	for k, res := range results {
		c := cases[k/16]
		ops := operands[k]
		want := c.ref(ops[0], ops[1], ops[2])
		require.Equal(t, hex.EncodeToString(want[:]), res, "%s on a=%x b=%x c=%x", c.name, ops[0], ops[1], ops[2])
	}
}
