package wasmgen

import (
	"fmt"
	"math"
)

// Local is the index of a parameter or local variable of a function.
type Local uint32

// Expr emits instructions that leave exactly one value on the operand stack.
type Expr func(f *Func)

// Func is a function body under construction. Its statement methods append
// instructions; its parameters are locals 0..n-1 and Local declares more.
type Func struct {
	name   string
	typ    funcType
	locals []ValType // declared locals, after the parameters
	body   []byte    // instructions, without the final end
	depth  int       // open blocks, loops and ifs
	err    error     // the first structural error
}

// Param returns the local of parameter i.
func (f *Func) Param(i int) Local {
	return Local(i)
}

// Local declares a new local of type t, zero on entry.
func (f *Func) Local(t ValType) Local {
	f.locals = append(f.locals, t)
	return Local(len(f.typ.params) + len(f.locals) - 1)
}

// appendLocals appends the local declarations, runs of one type grouped.
func (f *Func) appendLocals(b []byte) []byte {
	var groups [][2]uint64 // count, type
	for _, t := range f.locals {
		if n := len(groups); n > 0 && groups[n-1][1] == uint64(t) {
			groups[n-1][0]++
		} else {
			groups = append(groups, [2]uint64{1, uint64(t)})
		}
	}
	b = AppendUleb128(b, uint64(len(groups)))
	for _, g := range groups {
		b = AppendUleb128(b, g[0])
		b = append(b, byte(g[1]))
	}
	return b
}

// Raw emission, for the expression constructors.

func (f *Func) op(code byte) {
	f.body = append(f.body, code)
}

func (f *Func) simd(code uint32) {
	f.body = append(f.body, prefixSIMD)
	f.body = AppendUleb128(f.body, uint64(code))
}

func (f *Func) u32(v uint32) {
	f.body = AppendUleb128(f.body, uint64(v))
}

// memarg appends a memory immediate: log2 of the alignment, then the offset.
func (f *Func) memarg(alignLog2, offset uint32) {
	f.u32(alignLog2)
	f.u32(offset)
}

// Statements.

// Set stores the value of e in local l.
func (f *Func) Set(l Local, e Expr) {
	e(f)
	f.op(opLocalSet)
	f.u32(uint32(l))
}

// Drop evaluates e and discards its value.
func (f *Func) Drop(e Expr) {
	e(f)
	f.op(opDrop)
}

// Block emits a block around body; inside it, Br(0) jumps past its end.
func (f *Func) Block(body func()) {
	f.structured(opBlock, body)
}

// Loop emits a loop around body; inside it, Br(0) jumps back to its start.
// Falling off the end leaves the loop.
func (f *Func) Loop(body func()) {
	f.structured(opLoop, body)
}

// If runs then when cond (an i32) is not zero; inside it, Br(0) leaves it.
func (f *Func) If(cond Expr, then func()) {
	cond(f)
	f.structured(opIf, then)
}

// IfElse runs then when cond (an i32) is not zero and otherwise els.
func (f *Func) IfElse(cond Expr, then, els func()) {
	cond(f)
	f.op(opIf)
	f.op(blockEmpty)
	f.depth++
	then()
	f.op(opElse)
	els()
	f.op(opEnd)
	f.depth--
}

func (f *Func) structured(code byte, body func()) {
	f.op(code)
	f.op(blockEmpty)
	f.depth++
	body()
	f.op(opEnd)
	f.depth--
}

// Br branches to the label depth levels out (0: the innermost block, loop
// or if).
func (f *Func) Br(depth int) {
	f.branch(opBr, depth)
}

// BrIf branches to the label depth levels out when cond (an i32) is not zero.
func (f *Func) BrIf(depth int, cond Expr) {
	cond(f)
	f.branch(opBrIf, depth)
}

func (f *Func) branch(code byte, depth int) {
	if (depth < 0 || depth >= f.depth) && f.err == nil {
		f.err = fmt.Errorf("%w: branch to depth %d inside %d labels", ErrStructure, depth, f.depth)
	}
	f.op(code)
	f.u32(uint32(max(depth, 0)))
}

// Return leaves the function (which must have no results).
func (f *Func) Return() {
	f.op(opReturn)
}

// Expression primitives.

// Get is the value of local l.
// GlobalGet is global.get of the global at index i (Module.GlobalV128).
// A mutable global's value is read from memory, so an engine cannot fold
// it as it folds a constant: V8 rematerializes a v128.const at each use
// (three instructions on x64) even inside a loop, where a value read once
// before the loop stays in a register.
func GlobalGet(i uint32) Expr {
	return func(f *Func) {
		f.op(opGlobalGet)
		f.u32(i)
	}
}

func Get(l Local) Expr {
	return func(f *Func) {
		f.op(opLocalGet)
		f.u32(uint32(l))
	}
}

// Tee stores the value of e in local l and is that value.
func Tee(l Local, e Expr) Expr {
	return func(f *Func) {
		e(f)
		f.op(opLocalTee)
		f.u32(uint32(l))
	}
}

// I32Const is the i32 constant v.
func I32Const(v int32) Expr {
	return func(f *Func) {
		f.op(opI32Const)
		f.body = AppendSleb128(f.body, int64(v))
	}
}

// F32Const is the f32 constant v, bit for bit.
func F32Const(v float32) Expr {
	return func(f *Func) {
		f.op(opF32Const)
		bits := math.Float32bits(v)
		f.body = append(f.body, byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24))
	}
}

// V128Const is the v128 constant of the 16 bytes b (byte 0 is lane 0 of
// i8x16, the low byte of lane 0 of wider shapes).
func V128Const(b [16]byte) Expr {
	return func(f *Func) {
		f.simd(simdV128Const)
		f.body = append(f.body, b[:]...)
	}
}

// I8x16Const is the v128 constant with byte lanes b.
func I8x16Const(b [16]uint8) Expr {
	return V128Const(b)
}

// I16x8Const is the v128 constant with 16-bit lanes v.
func I16x8Const(v [8]uint16) Expr {
	var b [16]byte
	for i, x := range v {
		b[2*i], b[2*i+1] = byte(x), byte(x>>8)
	}
	return V128Const(b)
}

// I32x4Const is the v128 constant with 32-bit lanes v.
func I32x4Const(v [4]uint32) Expr {
	var b [16]byte
	for i, x := range v {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(x), byte(x>>8), byte(x>>16), byte(x>>24)
	}
	return V128Const(b)
}

// I8x16Shuffle is the i8x16.shuffle of a and b: byte i of the result is
// byte lanes[i] of the 32 bytes a then b (each index below 32).
func I8x16Shuffle(a, b Expr, lanes [16]uint8) Expr {
	return func(f *Func) {
		a(f)
		b(f)
		f.simd(simdI8x16Shuffle)
		f.body = append(f.body, lanes[:]...)
	}
}

// Select is a when cond (an i32) is not zero, else b (both evaluated).
func Select(a, b, cond Expr) Expr {
	return func(f *Func) {
		a(f)
		b(f)
		cond(f)
		f.op(opSelect)
	}
}

// plain, simdOp and the other helpers build expressions from operand
// expressions and one instruction.

func plain(code byte, args ...Expr) Expr {
	return func(f *Func) {
		for _, a := range args {
			a(f)
		}
		f.op(code)
	}
}

func simdOp(code uint32, args ...Expr) Expr {
	return func(f *Func) {
		for _, a := range args {
			a(f)
		}
		f.simd(code)
	}
}

func simdLane(code uint32, lane uint8, args ...Expr) Expr {
	return func(f *Func) {
		for _, a := range args {
			a(f)
		}
		f.simd(code)
		f.body = append(f.body, lane)
	}
}

func load(code byte, alignLog2 uint32, addr Expr, offset uint32) Expr {
	return func(f *Func) {
		addr(f)
		f.op(code)
		f.memarg(alignLog2, offset)
	}
}

func simdLoad(code, alignLog2 uint32, addr Expr, offset uint32) Expr {
	return func(f *Func) {
		addr(f)
		f.simd(code)
		f.memarg(alignLog2, offset)
	}
}

func simdLoadLane(code, alignLog2 uint32, addr Expr, offset uint32, v Expr, lane uint8) Expr {
	return func(f *Func) {
		addr(f)
		v(f)
		f.simd(code)
		f.memarg(alignLog2, offset)
		f.body = append(f.body, lane)
	}
}

func (f *Func) store(code byte, alignLog2 uint32, addr Expr, offset uint32, v Expr) {
	addr(f)
	v(f)
	f.op(code)
	f.memarg(alignLog2, offset)
}
