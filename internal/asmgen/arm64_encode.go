package main

import "fmt"

// The arm64 instructions the kernels use that Go's assembler lacks, as
// their encodings (arm64.go's word), and SDOT without the dot-product
// extension (sdotNEON).

// Encodings (Arm A64; d, n, m: vector register numbers, t: a general
// register for addresses).

func (a *arm64Asm) sdotElem(d, n, m, index int) { // SDOT Vd.4S, Vn.16B, Vm.4B[index]
	if a.noDot {
		a.sdotNEON(d, n, m, index)
		return
	}
	l, h := uint32(index&1), uint32(index>>1)
	a.word(0x4F80E000|l<<21|uint32(m)<<16|h<<11|uint32(n)<<5|uint32(d), fmt.Sprintf("SDOT V%d.4S, V%d.16B, V%d.4B[%d]", d, n, m, index))
}

// sdotNEON is SDOT by element without the dot-product extension, with V8,
// V9 and V20 for scratch (which every kernel leaves free while it sums):
// the four bytes broadcast to every lane (DUP, kept for the next SDOT of
// the same bytes), sixteen int16 products (SMULL, SMULL2; int8 by int8
// fits), each row's four added up in two pairwise steps (SADDLP, ADDP), and
// the sums added to Vd's lanes.
func (a *arm64Asm) sdotNEON(d, n, m, index int) {
	key := fmt.Sprintf("%d.%d", m, index)
	if a.dup != key {
		a.word(0x4E000400|uint32(index<<3|4)<<16|uint32(m)<<5|8, fmt.Sprintf("DUP V8.4S, V%d.S[%d]", m, index))
	}
	a.word(0x0E20C000|8<<16|uint32(n)<<5|9, fmt.Sprintf("SMULL V9.8H, V%d.8B, V8.8B", n))
	a.word(0x4E20C000|8<<16|uint32(n)<<5|20, fmt.Sprintf("SMULL2 V20.8H, V%d.16B, V8.16B", n))
	a.word(0x4E602800|9<<5|9, "SADDLP V9.4S, V9.8H")
	a.word(0x4E602800|20<<5|20, "SADDLP V20.4S, V20.8H")
	a.word(0x4EA0BC00|20<<16|9<<5|9, "ADDP V9.4S, V9.4S, V20.4S")
	a.add4s(d, d, 9)
	a.dup = key
}
func (a *arm64Asm) scvtf(d, n int) { // SCVTF Vd.4S, Vn.4S
	a.word(0x4E21D800|uint32(n)<<5|uint32(d), fmt.Sprintf("SCVTF V%d.4S, V%d.4S", d, n))
}
func (a *arm64Asm) fcvtl(d, n int, high bool) { // FCVTL(2) Vd.4S, Vn.4H (8H)
	enc, name := uint32(0x0E217800), "FCVTL"
	if high {
		enc, name = 0x4E217800, "FCVTL2"
	}
	a.word(enc|uint32(n)<<5|uint32(d), fmt.Sprintf("%s V%d.4S, V%d", name, d, n))
}
func (a *arm64Asm) fmul(d, n, m int) { // FMUL Vd.4S, Vn.4S, Vm.4S
	a.word(0x6E20DC00|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("FMUL V%d.4S, V%d.4S, V%d.4S", d, n, m))
}
func (a *arm64Asm) fadd(d, n, m int) { // FADD Vd.4S, Vn.4S, Vm.4S
	a.word(0x4E20D400|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("FADD V%d.4S, V%d.4S, V%d.4S", d, n, m))
}
func (a *arm64Asm) sub(d, n, m int) { // SUB Vd.4S, Vn.4S, Vm.4S
	a.word(0x6EA08400|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("SUB V%d.4S, V%d.4S, V%d.4S", d, n, m))
}
func (a *arm64Asm) shl4s(d, n, shift int) { // SHL Vd.4S, Vn.4S, #shift
	a.word(0x4F005400|uint32(32+shift)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("SHL V%d.4S, V%d.4S, #%d", d, n, shift))
}
func (a *arm64Asm) and(d, n, m int) { // AND Vd.16B, Vn.16B, Vm.16B
	a.word(0x4E201C00|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("AND V%d.16B, V%d.16B, V%d.16B", d, n, m))
}
func (a *arm64Asm) eor(d, n, m int) { // EOR Vd.16B, Vn.16B, Vm.16B
	a.word(0x6E201C00|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("EOR V%d.16B, V%d.16B, V%d.16B", d, n, m))
}
func (a *arm64Asm) ushr16b(d, n, shift int) { // USHR Vd.16B, Vn.16B, #shift
	a.word(0x6F000400|uint32(16-shift)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("USHR V%d.16B, V%d.16B, #%d", d, n, shift))
}
func (a *arm64Asm) movi16b(d int, v uint8) { // MOVI Vd.16B, #v
	abc, defgh := uint32(v>>5), uint32(v&31)
	a.word(0x4F00E400|abc<<16|defgh<<5|uint32(d), fmt.Sprintf("MOVI V%d.16B, #0x%02x", d, v))
}
func (a *arm64Asm) ldrQ(d, t, off int) { // LDR Qd, [Xt, #off] (off a multiple of 16)
	a.word(0x3DC00000|uint32(off/16)<<10|uint32(t)<<5|uint32(d), fmt.Sprintf("LDR Q%d, [R%d, #%d]", d, t, off))
}
func (a *arm64Asm) strQ(d, t, off int) { // STR Qd, [Xt, #off]
	a.word(0x3D800000|uint32(off/16)<<10|uint32(t)<<5|uint32(d), fmt.Sprintf("STR Q%d, [R%d, #%d]", d, t, off))
}
func (a *arm64Asm) ld1r(d, t int) { // LD1R {Vd.4S}, [Xt]
	a.word(0x4D40C800|uint32(t)<<5|uint32(d), fmt.Sprintf("LD1R {V%d.4S}, [R%d]", d, t))
}
func (a *arm64Asm) faddp(d, n, m int) { // FADDP Vd.4S, Vn.4S, Vm.4S
	a.word(0x6E20D400|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("FADDP V%d.4S, V%d.4S, V%d.4S", d, n, m))
}
func (a *arm64Asm) ldrQIndex(d, t, i int) { // LDR Qd, [Xt, Xi]
	a.word(0x3CE06800|uint32(i)<<16|uint32(t)<<5|uint32(d), fmt.Sprintf("LDR Q%d, [R%d, R%d]", d, t, i))
}
func (a *arm64Asm) ldrDIndex(d, t, i int) { // LDR Dd, [Xt, Xi]
	a.word(0xFC606800|uint32(i)<<16|uint32(t)<<5|uint32(d), fmt.Sprintf("LDR D%d, [R%d, R%d]", d, t, i))
}
func (a *arm64Asm) strD(d, t, off int) { // STR Dd, [Xt, #off] (off a multiple of 8)
	a.word(0xFD000000|uint32(off/8)<<10|uint32(t)<<5|uint32(d), fmt.Sprintf("STR D%d, [R%d, #%d]", d, t, off))
}
func (a *arm64Asm) shll16(d, n int) { // SHLL Vd.4S, Vn.4H, #16
	a.word(0x2E613800|uint32(n)<<5|uint32(d), fmt.Sprintf("SHLL V%d.4S, V%d.4H, #16", d, n))
}
func (a *arm64Asm) mul4s(d, n, m int) { // MUL Vd.4S, Vn.4S, Vm.4S
	a.word(0x4EA09C00|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("MUL V%d.4S, V%d.4S, V%d.4S", d, n, m))
}
func (a *arm64Asm) dupW(d, r int) { // DUP Vd.4S, Wr
	a.word(0x4E040C00|uint32(r)<<5|uint32(d), fmt.Sprintf("DUP V%d.4S, R%d", d, r))
}
func (a *arm64Asm) sshr4s(d, n, shift int) { // SSHR Vd.4S, Vn.4S, #shift
	a.word(0x4F000400|uint32(64-shift)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("SSHR V%d.4S, V%d.4S, #%d", d, n, shift))
}
func (a *arm64Asm) sxtl4s(d, n int) { // SSHLL Vd.4S, Vn.4H, #0
	a.word(0x0F10A400|uint32(n)<<5|uint32(d), fmt.Sprintf("SXTL V%d.4S, V%d.4H", d, n))
}
func (a *arm64Asm) ld1r8h(d, t int) { // LD1R {Vd.8H}, [Xt]
	a.word(0x4D40C400|uint32(t)<<5|uint32(d), fmt.Sprintf("LD1R {V%d.8H}, [R%d]", d, t))
}
func (a *arm64Asm) shl16b(d, n, shift int) { // SHL Vd.16B, Vn.16B, #shift
	a.word(0x4F085400|uint32(shift)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("SHL V%d.16B, V%d.16B, #%d", d, n, shift))
}
func (a *arm64Asm) fsub(d, n, m int) { // FSUB Vd.4S, Vn.4S, Vm.4S
	a.word(0x4EA0D400|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("FSUB V%d.4S, V%d.4S, V%d.4S", d, n, m))
}
func (a *arm64Asm) add4s(d, n, m int) { // ADD Vd.4S, Vn.4S, Vm.4S
	a.word(0x4EA08400|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("ADD V%d.4S, V%d.4S, V%d.4S", d, n, m))
}
func (a *arm64Asm) mla(d, n, m int) { // MLA Vd.4S, Vn.4S, Vm.4S
	a.word(0x4EA09400|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("MLA V%d.4S, V%d.4S, V%d.4S", d, n, m))
}
func (a *arm64Asm) mulElem(d, n, m, index int) { // MUL Vd.4S, Vn.4S, Vm.S[index]
	l, h := uint32(index&1), uint32(index>>1)
	a.word(0x4F808000|l<<21|uint32(m)<<16|h<<11|uint32(n)<<5|uint32(d), fmt.Sprintf("MUL V%d.4S, V%d.4S, V%d.S[%d]", d, n, m, index))
}
func (a *arm64Asm) mlaElem(d, n, m, index int) { // MLA Vd.4S, Vn.4S, Vm.S[index]
	l, h := uint32(index&1), uint32(index>>1)
	a.word(0x6F800000|l<<21|uint32(m)<<16|h<<11|uint32(n)<<5|uint32(d), fmt.Sprintf("MLA V%d.4S, V%d.4S, V%d.S[%d]", d, n, m, index))
}
func (a *arm64Asm) ushr4s(d, n, shift int) { // USHR Vd.4S, Vn.4S, #shift
	a.word(0x6F000400|uint32(64-shift)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("USHR V%d.4S, V%d.4S, #%d", d, n, shift))
}
func (a *arm64Asm) orr(d, n, m int) { // ORR Vd.16B, Vn.16B, Vm.16B
	a.word(0x4EA01C00|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("ORR V%d.16B, V%d.16B, V%d.16B", d, n, m))
}
func (a *arm64Asm) movi4s(d int, v uint8) { // MOVI Vd.4S, #v
	abc, defgh := uint32(v>>5), uint32(v&31)
	a.word(0x4F000400|abc<<16|defgh<<5|uint32(d), fmt.Sprintf("MOVI V%d.4S, #0x%02x", d, v))
}
