package main

import "fmt"

// arm64MXFP4 writes an MXFP4 kernel (see interleavedMXFP4): per block of
// eight rows, their E8M0 exponents (8 bytes), then the codes four bytes of
// each row at a time. TBL turns the codes into their doubled values
// (−12…12, signed bytes), which SDOT multiplies by the activation's quants
// directly; the scales 2^(e-128) are made from e's bits as
// engine/tensor's e8m0Half does, then the pure-Go float32 steps.
func arm64MXFP4(a *arm64Asm, name string) {
	a.prologue(name, "dotMXFP4 of eight MXFP4 rows interleaved at w (tensor.Pack): TBL of the codes' doubled values, then SDOT.", func() {
		a.line("MOVD $0x%016x, R7", le64(mxfp4Doubled[:8]))
		a.line("MOVD $0x%016x, R8", le64(mxfp4Doubled[8:]))
		a.insD(13, 0, 7) // the values by code
		a.insD(13, 1, 8)
		a.movi4s(14, 1)
		a.movi4s(15, 2)
	})
	a.line("ADD $8, R1, R6") // the codes
	a.ldrQ(2, 2, 0)          // the block's 32 activation quants
	a.ldrQ(3, 2, 16)
	a.eor(4, 4, 4)
	a.eor(5, 5, 5)
	for c := range 4 {
		a.ldrQ(0, 6, 32*c)    // rows 0–3's four codes' bytes
		a.ldrQ(1, 6, 32*c+16) // rows 4–7's
		a.ushr16b(10, 0, 4)   // the high nibbles: elements 16 on
		a.ushr16b(11, 1, 4)
		a.and(0, 0, 12) // the low ones
		a.and(1, 1, 12)
		for _, v := range []int{0, 1, 10, 11} {
			a.tbl(v, 13, v)
		}
		a.sdotElem(4, 0, 2, c) // x_q[4c…]
		a.sdotElem(5, 1, 2, c)
		a.sdotElem(4, 10, 3, c) // x_q[16+4c…]
		a.sdotElem(5, 11, 3, c)
	}
	a.scvtf(4, 4) // exact: every block sum is below 2²⁴ in magnitude
	a.scvtf(5, 5)
	a.ldrD(6, 1, 0) // the eight rows' exponents
	a.uxtl8h(6, 6)
	a.uxtl4s(7, 6, false)
	a.uxtl4s(18, 6, true)
	a.ld1r(23, 3) // d_x
	for h, e := range []int{7, 18} {
		a.sub(19, e, 14) // (e-1)<<23
		a.shl4s(19, 19, 23)
		a.add4s(21, e, 14) // (e+1)<<21, for e < 2
		a.shl4s(21, 21, 21)
		a.cmhi(22, 15, e)      // 2 > e
		a.bit(19, 21, 22)      // the scales 2^(e-128)
		a.fmul(19, 19, 23)     // scale = float32(e8m0Half(e)·d_x)
		a.fmul(19, 19, 4+h)    // float32(scale·float32(isum))
		a.fadd(16+h, 16+h, 19) // sum += …
	}
	a.epilogue(name, 8*17, 32, 4)
}

// mxfp4Doubled is MXFP4's codes' doubled E2M1 values as bytes, by code.
var mxfp4Doubled = [16]uint8{0, 1, 2, 3, 4, 6, 8, 12, 0, 0xff, 0xfe, 0xfd, 0xfc, 0xfa, 0xf8, 0xf4}

// le64 is 8 bytes as a little-endian uint64.
func le64(b []uint8) uint64 {
	var v uint64
	for i, x := range b {
		v |= uint64(x) << (8 * i)
	}
	return v
}

func (a *arm64Asm) tbl(d, n, m int) { // TBL Vd.16B, {Vn.16B}, Vm.16B
	a.word(0x4E000000|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("TBL V%d.16B, {V%d.16B}, V%d.16B", d, n, m))
}
func (a *arm64Asm) ldrD(d, t, off int) { // LDR Dd, [Xt, #off] (off a multiple of 8)
	a.word(0xFD400000|uint32(off/8)<<10|uint32(t)<<5|uint32(d), fmt.Sprintf("LDR D%d, [R%d, #%d]", d, t, off))
}
func (a *arm64Asm) uxtl8h(d, n int) { // USHLL Vd.8H, Vn.8B, #0
	a.word(0x2F08A400|uint32(n)<<5|uint32(d), fmt.Sprintf("UXTL V%d.8H, V%d.8B", d, n))
}
func (a *arm64Asm) uxtl4s(d, n int, high bool) { // USHLL(2) Vd.4S, Vn.4H (8H), #0
	enc, name := uint32(0x2F10A400), "UXTL"
	if high {
		enc, name = 0x6F10A400, "UXTL2"
	}
	a.word(enc|uint32(n)<<5|uint32(d), fmt.Sprintf("%s V%d.4S, V%d", name, d, n))
}
func (a *arm64Asm) cmhi(d, n, m int) { // CMHI Vd.4S, Vn.4S, Vm.4S
	a.word(0x6EA03400|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("CMHI V%d.4S, V%d.4S, V%d.4S", d, n, m))
}
func (a *arm64Asm) bit(d, n, m int) { // BIT Vd.16B, Vn.16B, Vm.16B
	a.word(0x6EA01C00|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("BIT V%d.16B, V%d.16B, V%d.16B", d, n, m))
}
func (a *arm64Asm) insD(d, index, r int) { // INS Vd.D[index], Xr
	a.word(0x4E081C00|uint32(index)<<20|uint32(r)<<5|uint32(d), fmt.Sprintf("INS V%d.D[%d], R%d", d, index, r))
}
