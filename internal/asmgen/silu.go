package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/wasmlm/wasmlm/internal/fmath"
)

// The exponential kernels compute fmath.Exp (float32 of Exp64 of the
// float64 argument) eight values at a time: Exp64 runs in four float64
// lanes with every operation of the pure-Go function in its order (the
// table entry gathered), so the bits are the pure-Go ones. They take
// arguments of magnitude below 700 only, where Exp64 needs none of its
// special cases, and stop at the first eight values with one outside (or
// a NaN), returning how many they did; Go does those eight.

// float64s is a read-only table of float64 constants, one per 8 bytes.
func float64s(name string, vs ...float64) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i, v := range vs {
		DATA(8*i, U64(math.Float64bits(v)))
	}
	return m
}

// float64x4 is a read-only table of float64 constants, each four times
// over: a YMM operand of it in every lane (constant i at 32·i).
func float64x4(name string, vs ...float64) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i, v := range vs {
		for l := range 4 {
			DATA(32*i+8*l, U64(math.Float64bits(v)))
		}
	}
	return m
}

// expData is Exp64's table and constants, emitted once.
var expData struct {
	table, consts Mem
	made          bool
}

// expKernel is what exp8 needs: the table's address in a register and
// the constants.
type expKernel struct {
	tab    Register
	consts Mem
}

func newExpKernel() expKernel {
	if !expData.made {
		table := fmath.Exp2Table()
		expData.table = float64s("exp2Table", table[:]...)
		expData.consts = float64x4("expConsts", fmath.ExpScale, 0.5, fmath.ExpLn2Hi, fmath.ExpLn2Lo, 1.0/720, 1.0/120, 1.0/24, 1.0/6, 1)
		expData.made = true
	}
	e := expKernel{tab: GP64(), consts: expData.consts}
	LEAQ(expData.table, e.tab)
	return e
}

func (e expKernel) k(i int) Mem { return e.consts.Offset(32 * i) }

// inRange jumps to label unless every lane of the eight float32 in v is
// of magnitude below 700 (and not a NaN).
func inRange(v Register, label string) {
	a, lim := YMM(), YMM()
	fillLanes(a, 0x7fffffff)
	VANDPS(v, a, a) // |v|
	fillLanes(lim, math.Float32bits(700))
	VCMPPS(Imm(0x11), lim, a, a) // |v| < 700, ordered (false for NaN)
	ok := GP32()
	VMOVMSKPS(a, ok)
	CMPL(ok, U8(0xff))
	JNE(LabelRef(label))
}

// exp8 returns a YMM of fmath.Exp of the eight float32 in v (in range).
func (e expKernel) exp8(v Register) Register {
	out := YMM()
	for half := range 2 {
		x := YMM()
		if half == 0 {
			VCVTPS2PD(v.(VecVirtual).AsX(), x) // exact
		} else {
			hx := XMM()
			VEXTRACTF128(Imm(1), v, hx)
			VCVTPS2PD(hx, x)
		}
		// n = floor(x·ExpScale + 0.5)
		nf := YMM()
		VMULPD(e.k(0), x, nf)
		VADDPD(e.k(1), nf, nf)
		VROUNDPD(Imm(0x9), nf, nf) // floor, no precision exception
		// r = (x − n·ln2Hi/32) − n·ln2Lo/32
		p, r := YMM(), YMM()
		VMULPD(e.k(2), nf, p)
		VSUBPD(p, x, r)
		VMULPD(e.k(3), nf, p)
		VSUBPD(p, r, r)
		// q = ((((r/720 + 1/120)·r + 1/24)·r + 1/6)·r + 1/2)·r + 1)·r
		q := YMM()
		VMULPD(e.k(4), r, q)
		VADDPD(e.k(5), q, q)
		VMULPD(r, q, q)
		VADDPD(e.k(6), q, q)
		VMULPD(r, q, q)
		VADDPD(e.k(7), q, q)
		VMULPD(r, q, q)
		VADDPD(e.k(1), q, q)
		VMULPD(r, q, q)
		VADDPD(e.k(8), q, q)
		VMULPD(r, q, q)
		// j = n & 31, m = n >> 5; y = t + t·q, t = 2^(j/32); y·2^m
		ni, j, mask, t := XMM(), XMM(), YMM(), YMM()
		VCVTTPD2DQY(nf, ni) // exact: n is a whole number
		thirtyOne := XMM()
		fillLanes(thirtyOne, 31)
		VPAND(thirtyOne, ni, j)
		VPSRAD(Imm(5), ni, ni)
		VPCMPEQD(mask, mask, mask)
		VGATHERDPD(mask, Mem{Base: e.tab, Index: j, Scale: 8}, t)
		y := YMM()
		VMULPD(q, t, y)
		VADDPD(y, t, y)
		m, bias := YMM(), YMM()
		VPMOVSXDQ(ni, m)
		fillLanes(bias, 1023) // 1023 in every 32-bit lane: the low half of each 64-bit one
		VPSLLQ(Imm(32), bias, bias)
		VPSRLQ(Imm(32), bias, bias) // 1023 in every 64-bit lane
		VPADDQ(bias, m, m)
		VPSLLQ(Imm(52), m, m) // 2^m
		VMULPD(m, y, y)
		if half == 0 {
			VCVTPD2PSY(y, out.AsX())
		} else {
			eh := XMM()
			VCVTPD2PSY(y, eh)
			VINSERTF128(Imm(1), eh, out, out)
		}
	}
	return out
}

// swiGLUx8 is engine/tensor's SwiGLU, gate[i] = float32(g/(1+Exp(-g)))·up[i].
func swiGLUx8() {
	TEXT("swiGLUx8", NOSPLIT, "func(gate, up *float32, n int) int")
	Pragma("noescape") // the kernels keep no pointer
	Doc("swiGLUx8 sets gate[i] = SiLU(gate[i])·up[i] (tensor.SwiGLU) for i < n, a multiple of 8, eight at a time,",
		"until eight values include one of magnitude 700 or more, or a NaN; it returns how many it set (AVX2).")
	gate := Load(Param("gate"), GP64())
	up := Load(Param("up"), GP64())
	n := Load(Param("n"), GP64())
	done := GP64()
	XORQ(done, done)
	ek := newExpKernel()

	Label("swiglu_loop")
	CMPQ(n, Imm(8))
	JL(LabelRef("swiglu_done"))
	g := YMM()
	VMOVUPS(Mem{Base: gate}, g)
	inRange(g, "swiglu_done")
	ng, sign := YMM(), YMM()
	fillLanes(sign, 0x80000000)
	VXORPS(sign, g, ng) // −g
	e := ek.exp8(ng)
	one := YMM()
	VBROADCASTSS(float32One(), one)
	VADDPS(one, e, e)           // 1 + Exp(−g)
	VDIVPS(e, g, g)             // g / …
	VMULPS(Mem{Base: up}, g, g) // … · up
	VMOVUPS(g, Mem{Base: gate})
	ADDQ(Imm(32), gate)
	ADDQ(Imm(32), up)
	ADDQ(Imm(8), done)
	SUBQ(Imm(8), n)
	JMP(LabelRef("swiglu_loop"))

	Label("swiglu_done")
	VZEROUPPER()
	Store(done, ReturnIndex(0))
	RET()
}

// expShiftedx8 is engine/tensor's ExpShifted, x[i] = Exp(x[i] − shift).
func expShiftedx8() {
	TEXT("expShiftedx8", NOSPLIT, "func(x *float32, shift float32, n int) int")
	Pragma("noescape") // the kernels keep no pointer
	Doc("expShiftedx8 sets x[i] = Exp(x[i] − shift) (tensor.ExpShifted) for i < n, a multiple of 8, eight at a time,",
		"until eight differences include one of magnitude 700 or more, or a NaN; it returns how many it set (AVX2).")
	x := Load(Param("x"), GP64())
	shift := YMM()
	VBROADCASTSS(arg("shift"), shift)
	n := Load(Param("n"), GP64())
	done := GP64()
	XORQ(done, done)
	ek := newExpKernel()

	Label("expshift_loop")
	CMPQ(n, Imm(8))
	JL(LabelRef("expshift_done"))
	v := YMM()
	VMOVUPS(Mem{Base: x}, v)
	VSUBPS(shift, v, v) // x − shift, in float32
	inRange(v, "expshift_done")
	e := ek.exp8(v)
	VMOVUPS(e, Mem{Base: x})
	ADDQ(Imm(32), x)
	ADDQ(Imm(8), done)
	SUBQ(Imm(8), n)
	JMP(LabelRef("expshift_loop"))

	Label("expshift_done")
	VZEROUPPER()
	Store(done, ReturnIndex(0))
	RET()
}

// float32One is the float32 1.
func float32One() Mem {
	m := GLOBL("float32One", RODATA|NOPTR)
	DATA(0, U32(math.Float32bits(1)))
	return m
}
