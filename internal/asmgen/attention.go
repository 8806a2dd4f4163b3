package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The float32 kernels of attention (engine/tensor/attention.go, f16.go),
// with the pure-Go loops' bits: every product is rounded before it is
// added (no fused multiply-add), and every sum is taken in the pure-Go
// order.

// addScaledRowsF32 is AddScaledRows for n, a multiple of 8, elements of
// out: each element's products are added in the rows' order, so a chunk
// of out stays in registers while the rows go by.
func addScaledRowsF32() {
	TEXT("addScaledRowsF32", NOSPLIT, "func(out, a, rows *float32, n, count, stride int)")
	Pragma("noescape") // the kernels keep no pointer
	Doc("addScaledRowsF32 adds a[t]·rows[t·stride : t·stride+n] to out[0:n] for t < count, in that order,",
		"each product rounded to float32; n is a multiple of 8 (AVX).")
	out := Load(Param("out"), GP64())
	a := Load(Param("a"), GP64())
	rows := Load(Param("rows"), GP64())
	n := Load(Param("n"), GP64())
	count := Load(Param("count"), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(Imm(2), stride) // in bytes

	for _, width := range []int{4, 1} { // chunks of 32 elements, then of 8
		name := "asr" + string(rune('0'+width))
		Label(name + "_chunk")
		CMPQ(n, U32(8*width))
		JL(LabelRef(name + "_next"))
		acc := make([]Register, width)
		for i := range acc {
			acc[i] = YMM()
			VMOVUPS(Mem{Base: out, Disp: 32 * i}, acc[i])
		}
		t, row, av := GP64(), GP64(), YMM()
		XORQ(t, t)
		MOVQ(rows, row)
		Label(name + "_row")
		CMPQ(t, count)
		JGE(LabelRef(name + "_store"))
		VBROADCASTSS(Mem{Base: a, Index: t, Scale: 4}, av)
		for i := range acc {
			p := YMM()
			VMULPS(Mem{Base: row, Disp: 32 * i}, av, p) // float32(a[t]·v[i])
			VADDPS(p, acc[i], acc[i])
		}
		ADDQ(stride, row)
		INCQ(t)
		JMP(LabelRef(name + "_row"))
		Label(name + "_store")
		for i := range acc {
			VMOVUPS(acc[i], Mem{Base: out, Disp: 32 * i})
		}
		ADDQ(U32(32*width), out)
		ADDQ(U32(32*width), rows)
		SUBQ(U32(8*width), n)
		JMP(LabelRef(name + "_chunk"))
		Label(name + "_next")
	}
	VZEROUPPER()
	RET()
}

// floatRows8 writes dotF32Rows8, dotF16Rows8 and dotBF16Rows8: DotF32Rows
// (and the F32, F16 and BF16 matrix–vector kernels) for eight rows at a
// time and n, a multiple of 4, elements. Two rows share a YMM, one to a
// half, and each half sums its row in DotF32's four lanes (element i in
// lane i mod 4), which then add up as (s0+s1)+(s2+s3): dotF32's bits.
// F16 and BF16 rows are widened to float32 exactly first (F16C; a shift).
// Only a NaN's payload may differ, where NaN weights meet NaN sums: which
// one an addition keeps depends on its operands' order, which Go's
// compiler chooses for the pure-Go kernels.
func floatRows8() {
	for _, typ := range []struct {
		name, elem string
		size       int
	}{{"dotF32Rows8", "float32", 4}, {"dotF16Rows8", "uint16", 2}, {"dotBF16Rows8", "uint16", 2}} {
		name := typ.name
		TEXT(name, NOSPLIT, "func(out, x *float32, rows *"+typ.elem+", n, count, stride int)")
		Pragma("noescape") // the kernels keep no pointer
		Doc(name+" sets out[t] to the four-lane dot product (DotF32's order) of x with the n values",
			"at rows[t·stride:] for t < count, count a multiple of 8 and n of 4 (AVX2, F16C).")
		out := Load(Param("out"), GP64())
		x := Load(Param("x"), GP64())
		rows := Load(Param("rows"), GP64())
		n := Load(Param("n"), GP64())
		count := Load(Param("count"), GP64())
		r := rowAddrs{s: Load(Param("stride"), GP64()), base: GP64(), base4: GP64(), s3: GP64()}
		if typ.size == 4 {
			SHLQ(Imm(2), r.s) // in bytes
		} else {
			SHLQ(Imm(1), r.s)
		}
		LEAQ(Mem{Base: r.s, Index: r.s, Scale: 2}, r.s3)

		Label(name + "_group")
		CMPQ(count, Imm(8))
		JL(LabelRef(name + "_done"))
		MOVQ(rows, r.base)
		LEAQ(Mem{Base: rows, Index: r.s, Scale: 4}, r.base4)
		var acc [4]Register
		for i := range acc {
			acc[i] = YMM()
			VXORPS(acc[i], acc[i], acc[i])
		}
		xp, left := GP64(), GP64()
		MOVQ(x, xp)
		MOVQ(n, left)
		Label(name + "_elem")
		TESTQ(left, left)
		JZ(LabelRef(name + "_sum"))
		xb := YMM()
		VBROADCASTF128(Mem{Base: xp}, xb) // x[i:i+4] in both halves
		for p := range 4 {                // rows 2p and 2p+1
			v := YMM()
			switch typ.name {
			case "dotF32Rows8":
				VMOVUPS(r.mem(2*p, 0), v.AsX())
				VINSERTF128(Imm(1), r.mem(2*p+1, 0), v, v)
			case "dotF16Rows8":
				h := XMM()
				VMOVQ(r.mem(2*p, 0), h)
				VPINSRQ(Imm(1), r.mem(2*p+1, 0), h, h)
				VCVTPH2PS(h, v) // exact
			default:
				h := XMM()
				VMOVQ(r.mem(2*p, 0), h)
				VPINSRQ(Imm(1), r.mem(2*p+1, 0), h, h)
				VPMOVZXWD(h, v)
				VPSLLD(Imm(16), v, v) // a bfloat16 is a float32's top half
			}
			VMULPS(xb, v, v) // float32(w[i]·x[i])
			VADDPS(v, acc[p], acc[p])
		}
		ADDQ(Imm(16), xp)
		ADDQ(U32(4*typ.size), r.base)
		ADDQ(U32(4*typ.size), r.base4)
		SUBQ(Imm(4), left)
		JMP(LabelRef(name + "_elem"))

		Label(name + "_sum")
		// (s0+s1)+(s2+s3) in every half: two horizontal additions.
		for p := range 4 {
			VHADDPS(acc[p], acc[p], acc[p])
			VHADDPS(acc[p], acc[p], acc[p])
		}
		// Row 2p's sum is lane 0 of acc[p], row 2p+1's lane 4.
		for p := range 4 {
			hi := XMM()
			VEXTRACTF128(Imm(1), acc[p], hi)
			VMOVSS(acc[p].(VecVirtual).AsX(), Mem{Base: out, Disp: 8 * p})
			VMOVSS(hi, Mem{Base: out, Disp: 8*p + 4})
		}
		ADDQ(Imm(32), out)
		LEAQ(Mem{Base: rows, Index: r.s, Scale: 8}, rows)
		SUBQ(Imm(8), count)
		JMP(LabelRef(name + "_group"))

		Label(name + "_done")
		VZEROUPPER()
		RET()
	}
}

// decodeF16x8 is DecodeF16 for n, a multiple of 8, values: F16C converts
// them exactly, but quiets signalling NaNs, which the pure-Go table keeps
// as they are; NaN lanes take the table's bits, made with integer
// instructions: the sign, an all-ones exponent and the payload.
func decodeF16x8() {
	TEXT("decodeF16x8", NOSPLIT, "func(dst *float32, src *uint16, n int)")
	Pragma("noescape") // the kernels keep no pointer
	Doc("decodeF16x8 sets dst[i] to the value of the F16 bits src[i] for i < n, a multiple of 8 (AVX2, F16C).")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	sign, payload, exp := YMM(), YMM(), YMM()
	fillLanes(sign, 0x80000000)
	fillLanes(payload, 0x3ff)
	fillLanes(exp, 0x7f800000)
	Label("df16_loop")
	CMPQ(n, Imm(8))
	JL(LabelRef("df16_done"))
	v, h, t, nan := YMM(), YMM(), YMM(), YMM()
	VCVTPH2PS(Mem{Base: src}, v)
	VPMOVZXWD(Mem{Base: src}, h)
	VPSLLD(Imm(16), h, t)
	VPAND(sign, t, t)
	VPAND(payload, h, h)
	VPSLLD(Imm(13), h, h)
	VPOR(h, t, t)
	VPOR(exp, t, t)           // NaN's bits, as the table has them
	VCMPPS(Imm(3), v, v, nan) // unordered: NaN
	VBLENDVPS(nan, t, v, v)
	VMOVUPS(v, Mem{Base: dst})
	ADDQ(Imm(16), src)
	ADDQ(Imm(32), dst)
	SUBQ(Imm(8), n)
	JMP(LabelRef("df16_loop"))
	Label("df16_done")
	VZEROUPPER()
	RET()
}

// encodeF16x8 and roundF16x8 are EncodeF16 and RoundF16 for n, a multiple
// of 8, values: F16C rounds to the nearest F16, ties to even, as f32ToF16
// does, but keeps some of a NaN's payload, where f32ToF16 writes the quiet
// NaN 0x7e00 with the sign; NaN lanes are set so.
func encodeF16x8() {
	for _, round := range []bool{false, true} {
		name, sig, doc := "encodeF16x8", "func(dst *uint16, src *float32, n int)",
			"encodeF16x8 sets dst[i] to src[i] rounded to the nearest F16 (f32ToF16) for i < n, a multiple of 8 (AVX2, F16C)."
		if round {
			name, sig, doc = "roundF16x8", "func(dst *float32, src *float32, n int)",
				"roundF16x8 sets dst[i] to src[i] rounded to the nearest F16 (RoundF16) for i < n, a multiple of 8 (AVX2, F16C)."
		}
		TEXT(name, NOSPLIT, sig)
		Pragma("noescape") // the kernels keep no pointer
		Doc(doc)
		dst := Load(Param("dst"), GP64())
		src := Load(Param("src"), GP64())
		n := Load(Param("n"), GP64())
		abs, inf, sign, quiet := XMM(), XMM(), XMM(), XMM()
		fillWords(abs, 0x7fff)
		fillWords(inf, 0x7c00)
		fillWords(sign, 0x8000)
		fillWords(quiet, 0x7e00)
		Label(name + "_loop")
		CMPQ(n, Imm(8))
		JL(LabelRef(name + "_done"))
		v, h, t, c := YMM(), XMM(), XMM(), XMM()
		VMOVUPS(Mem{Base: src}, v)
		VCVTPS2PH(Imm(0), v, h) // to nearest, ties to even
		VPAND(abs, h, t)
		VPCMPGTW(inf, t, t) // NaN: above Inf's bits
		VPAND(sign, h, c)
		VPOR(quiet, c, c)
		VPBLENDVB(t, c, h, h)
		if round {
			VCVTPH2PS(h, v)
			VMOVUPS(v, Mem{Base: dst})
			ADDQ(Imm(32), dst)
		} else {
			VMOVDQU(h, Mem{Base: dst})
			ADDQ(Imm(16), dst)
		}
		ADDQ(Imm(32), src)
		SUBQ(Imm(8), n)
		JMP(LabelRef(name + "_loop"))
		Label(name + "_done")
		VZEROUPPER()
		RET()
	}
}

// fillWords sets every 16-bit lane of the XMM m to v.
func fillWords(m Register, v uint16) {
	t := GP32()
	MOVL(U32(uint32(v)), t)
	VMOVD(t, m)
	VPBROADCASTW(m, m)
}
