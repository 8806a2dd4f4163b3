package main

import (
	"fmt"
	"os"
	"strings"
)

// The arm64 kernels: Go's arm64 assembler has few of the NEON instructions
// they need (no SDOT, no vector float arithmetic or conversions), and avo
// writes amd64 only, so they are written here as text, those instructions
// as their encodings (WORD) with the instruction in a comment. They read
// the interleaved layout the amd64 kernels read (tensor.Pack): four bytes
// of eight rows are two 128-bit registers of four rows each, and SDOT's
// by-element form multiplies each row's four bytes by four bytes of the
// activation (one 32-bit element of a register) and adds the four
// products into the row's 32-bit lane. The float32 steps are the pure-Go
// kernel's, per lane, without fused multiply-add, so the bits are the same.

// arm64Asm builds the text of an arm64 assembly file. With noDot, its
// SDOTs are written without the dot-product extension (see sdotElem).
type arm64Asm struct {
	b     strings.Builder
	noDot bool
	dup   string // what V8 holds, when the last instruction was an emulated SDOT's
}

func (a *arm64Asm) line(format string, args ...any) { fmt.Fprintf(&a.b, "\t"+format+"\n", args...) }

// word emits an encoded instruction with its assembly in a comment.
func (a *arm64Asm) word(enc uint32, asm string) {
	a.dup = ""
	a.line("WORD $0x%08x // %s", enc, asm)
}

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

// arm64Interleaved writes one kernel over the interleaved layout of a type
// whose blocks are 32 quants with one fp16 scale (blockBytes each row):
// per block, quants(a) leaves the rows' Σ w_q·x_q in V4 (rows 0–3) and V5
// (rows 4–7), the activation's 32 quants being in V2 and V3.
func arm64Interleaved(a *arm64Asm, name, doc string, blockBytes int, setup, quants func(a *arm64Asm)) {
	a.prologue(name, doc, func() {
		if setup != nil {
			setup(a)
		}
	})
	a.ldrQ(2, 2, 0) // the block's 32 activation quants
	a.ldrQ(3, 2, 16)
	a.eor(4, 4, 4)
	a.eor(5, 5, 5)
	quants(a)
	a.scvtf(4, 4) // exact: every block sum is below 2²⁴ in magnitude
	a.scvtf(5, 5)
	a.ldrQ(6, 1, 0) // the eight rows' fp16 scales
	a.fcvtl(7, 6, false)
	a.fcvtl(8, 6, true)
	a.ld1r(9, 3)      // d_x
	a.fmul(7, 7, 9)   // scale = float32(d_w·d_x)
	a.fmul(8, 8, 9)   //
	a.fmul(7, 7, 4)   // float32(scale·float32(isum))
	a.fmul(8, 8, 5)   //
	a.fadd(16, 16, 7) // sum += …
	a.fadd(17, 17, 8)
	a.epilogue(name, 8*blockBytes, 32, 4)
}

// prologue starts a kernel: its arguments in R0 (out), R1 (w), R2 (x), R3
// (xd), R4 (xs) and R5 (nb), the rows' sums in V16 (rows 0–3) and V17
// (rows 4–7) zeroed, 0x0f in every byte of V12, what setup (if any) adds,
// and the loop's label.
func (a *arm64Asm) prologue(name, doc string, setup func()) {
	fmt.Fprintf(&a.b, "\n// func %s(out *float32, w *byte, x *int8, xd *float32, xs *int32, nb int)\n", name)
	fmt.Fprintf(&a.b, "// %s\n", doc)
	fmt.Fprintf(&a.b, "TEXT ·%s(SB), NOSPLIT|NOFRAME, $0-48\n", name)
	for i, arg := range []string{"out", "w", "x", "xd", "xs", "nb"} {
		a.line("MOVD %s+%d(FP), R%d", arg, 8*i, i)
	}
	a.eor(16, 16, 16) // the sums of rows 0–3
	a.eor(17, 17, 17) // and of rows 4–7
	a.movi16b(12, 0x0f)
	if setup != nil {
		setup()
	}
	a.line("CBZ R5, %s_done", name)
	fmt.Fprintf(&a.b, "%s_block:\n", name)
}

// epilogue ends a kernel's loop, moving w, x and xs on by their steps a
// block, and stores the sums.
func (a *arm64Asm) epilogue(name string, wStep, xStep, xsStep int) {
	a.line("ADD $%d, R1", wStep)
	a.line("ADD $%d, R2", xStep)
	a.line("ADD $4, R3")
	a.line("ADD $%d, R4", xsStep)
	a.line("SUBS $1, R5")
	a.line("BNE %s_block", name)
	fmt.Fprintf(&a.b, "%s_done:\n", name)
	a.strQ(16, 0, 0)
	a.strQ(17, 0, 16)
	a.line("RET")
}

// writeArm64 writes the arm64 kernels' assembly to path.
func writeArm64(path string) error {
	var a arm64Asm
	a.b.WriteString("// Code generated by command: go run ../../internal/asmgen (arm64.go). DO NOT EDIT.\n\n")
	a.b.WriteString("//go:build !purego\n\n#include \"textflag.h\"\n")
	for _, form := range []string{"SDOT", "NEON"} {
		a.noDot = form == "NEON"
		arm64Quantized(&a, form)
	}
	a.noDot = false
	for _, t := range []string{"F32", "F16", "BF16"} {
		arm64FloatRows8(&a, t)
	}
	return os.WriteFile(path, []byte(a.b.String()), 0o644)
}

// arm64Quantized writes the quantized kernels in one form: "SDOT" (with the
// dot-product extension) or "NEON" (without).
func arm64Quantized(a *arm64Asm, form string) {
	arm64Interleaved(a, "dotQ8_0r8"+form, "dotQ8_0 of eight Q8_0 rows interleaved at w (tensor.Pack): SDOT, signed by signed.", 34, nil, func(a *arm64Asm) {
		for c := range 8 {
			a.ldrQ(0, 1, 16+32*c) // rows 0–3's four quants
			a.ldrQ(1, 1, 32+32*c) // rows 4–7's
			a.sdotElem(4, 0, 2+c/4, c%4)
			a.sdotElem(5, 1, 2+c/4, c%4)
		}
	})
	arm64Interleaved(a, "dotQ4_0r8"+form, "dotQ4_0 of eight Q4_0 rows interleaved at w (tensor.Pack): SDOT of the nibbles, less 8·Σ x_q.", 18, nil, func(a *arm64Asm) {
		for c := range 4 {
			a.ldrQ(0, 1, 16+32*c)
			a.ldrQ(1, 1, 32+32*c)
			a.ushr16b(10, 0, 4) // the high nibbles: elements 16 on
			a.ushr16b(11, 1, 4)
			a.and(0, 0, 12) // the low ones
			a.and(1, 1, 12)
			a.sdotElem(4, 0, 2, c) // x_q[4c…]
			a.sdotElem(5, 1, 2, c)
			a.sdotElem(4, 10, 3, c) // x_q[16+4c…]
			a.sdotElem(5, 11, 3, c)
		}
		a.ld1r(13, 4) // Σ x_q
		a.shl4s(13, 13, 3)
		a.sub(4, 4, 13) // − 8·Σ x_q
		a.sub(5, 5, 13)
	})
	arm64Interleaved(a, "dotQ5_0r8"+form, "dotQ5_0 of eight Q5_0 rows interleaved at w (tensor.Pack): SDOT of the 5-bit quants, less 16·Σ x_q.", 22,
		func(a *arm64Asm) {
			a.movi4s(18, 0x0f)
			a.line("MOVW $0x00204081, R7") // bit i of a nibble to bit 8i, times this
			a.dupW(19, 7)
			a.movi16b(21, 0x01)
		},
		func(a *arm64Asm) {
			a.ldrQ(14, 1, 16) // the fifth bits, a word a row: rows 0–3
			a.ldrQ(15, 1, 32) // rows 4–7
			// fifth sets Vd's byte i of each lane to 16 where bit shift+i of
			// the lane's word in Vqh is set: four bits spread to bytes by a
			// multiplication, whose shifted copies cannot meet.
			fifth := func(d, qh, shift int) {
				if shift == 0 {
					a.and(d, qh, 18)
				} else {
					a.ushr4s(d, qh, shift)
					a.and(d, d, 18)
				}
				a.mul4s(d, d, 19)
				a.and(d, d, 21)
				a.shl4s(d, d, 4)
			}
			for c := range 4 {
				w := 48 + 32*c
				a.ldrQ(0, 1, w)
				a.ldrQ(1, 1, w+16)
				a.ushr16b(10, 0, 4)
				a.ushr16b(11, 1, 4)
				a.and(0, 0, 12)
				a.and(1, 1, 12)
				for _, q := range [][3]int{{0, 14, 4 * c}, {1, 15, 4 * c}, {10, 14, 16 + 4*c}, {11, 15, 16 + 4*c}} {
					fifth(22, q[1], q[2])
					a.orr(q[0], q[0], 22)
				}
				a.sdotElem(4, 0, 2, c) // x_q[4c…]
				a.sdotElem(5, 1, 2, c)
				a.sdotElem(4, 10, 3, c) // x_q[16+4c…]
				a.sdotElem(5, 11, 3, c)
			}
			a.ld1r(13, 4) // Σ x_q
			a.shl4s(13, 13, 4)
			a.sub(4, 4, 13) // − 16·Σ x_q
			a.sub(5, 5, 13)
		})
	arm64Q4K(a, "dotQ4Kr8"+form)
	arm64Q6K(a, "dotQ6Kr8"+form)
}

// arm64Q6K writes a Q6_K kernel (see interleavedQ6K): per super-block of
// eight rows, their d (16 bytes), then four words of int8 scales, then the
// low nibbles and high bits in the order they are read. isum = Σ_j sc_j·
// (Σ q·x_q − 32·Σ x_q) over the sixteen sub-blocks of 16, sum +=
// float32(d·float32(isum)).
func arm64Q6K(a *arm64Asm, name string) {
	a.prologue(name, "dotQ6K of eight Q6_K rows interleaved at w (tensor.Pack), xs the activation's sums of 16 quants (int16).", func() {
		a.movi16b(13, 0x03)
	})
	word := func(k, half int) int { return 16 + 32*k + 16*half } // word k of rows 4·half…
	a.eor(29, 29, 29)                                            // isum, rows 0–3
	a.eor(30, 30, 30)                                            // rows 4–7
	for h := range 2 {
		for g := range 2 {
			for i := range 4 {
				a.ldrQ(2+i, 2, 128*h+32*i+16*g) // x_q of the elements of q_{i+1} (below)
			}
			for r := 21; r <= 28; r++ {
				a.eor(r, r, r)
			}
			for c := range 4 {
				k := 4 + 3*(8*h+4*g+c) // the words in the order they are read (tensor's q6KWords)
				a.ldrQ(0, 1, word(k, 0))
				a.ldrQ(1, 1, word(k, 1))
				a.ldrQ(6, 1, word(k+1, 0))
				a.ldrQ(7, 1, word(k+1, 1))
				a.ldrQ(10, 1, word(k+2, 0))
				a.ldrQ(11, 1, word(k+2, 1))
				for half := range 2 {
					la, lb, hv, s := 0+half, 6+half, 10+half, 21+4*half
					// q1..q4: a nibble of la or lb, two bits of hv above it.
					a.and(14, la, 12)
					a.and(15, hv, 13)
					a.shl16b(15, 15, 4)
					a.orr(14, 14, 15)
					a.sdotElem(s, 14, 2, c)
					a.and(14, lb, 12)
					a.ushr16b(15, hv, 2)
					a.and(15, 15, 13)
					a.shl16b(15, 15, 4)
					a.orr(14, 14, 15)
					a.sdotElem(s+1, 14, 3, c)
					a.ushr16b(14, la, 4)
					a.ushr16b(15, hv, 4)
					a.and(15, 15, 13)
					a.shl16b(15, 15, 4)
					a.orr(14, 14, 15)
					a.sdotElem(s+2, 14, 4, c)
					a.ushr16b(14, lb, 4)
					a.ushr16b(15, hv, 6)
					a.shl16b(15, 15, 4)
					a.orr(14, 14, 15)
					a.sdotElem(s+3, 14, 5, c)
				}
			}
			// isum += sc_j·(s_i − 32·Σ x_q), sub-block j = 8h + g + 2i.
			for i := range 4 {
				j := 8*h + g + 2*i
				a.line("ADD $%d, R4, R7", 2*j)
				a.ld1r8h(18, 7)
				a.sxtl4s(18, 18)
				a.shl4s(18, 18, 5)
				for half := range 2 {
					s := 21 + 4*half + i
					a.sub(s, s, 18)
					a.ldrQ(19, 1, word(j/4, half)) // sc_{4·(j/4)}…: four int8 a row
					if sh := 24 - 8*(j%4); sh > 0 {
						a.shl4s(19, 19, sh)
					}
					a.sshr4s(19, 19, 24)
					a.mla(29+half, s, 19)
				}
			}
		}
	}
	a.scvtf(29, 29) // rounded to nearest even, as Go's float32(isum)
	a.scvtf(30, 30)
	a.ldrQ(6, 1, 0) // d
	a.ld1r(18, 3)   // d_x
	for half := range 2 {
		d := 14 + half
		a.fcvtl(d, 6, half == 1)
		a.fmul(d, d, 18)            // float32(d_w·d_x)
		a.fmul(d, d, 29+half)       // float32(d·float32(isum))
		a.fadd(16+half, 16+half, d) // sum += …
	}
	a.epilogue(name, 8*210, 256, 32)
}

// arm64FloatRows8 writes dotF32Rows8, dotF16Rows8 or dotBF16Rows8 for
// arm64 (the amd64 ones' contract, see floatRows8): eight rows at a time,
// each summed in its own register's four lanes, DotF32's order, then
// (s0+s1)+(s2+s3) by two pairwise additions. F16 values widen exactly
// (FCVTL), BF16 ones are a float32's top half (SHLL #16).
func arm64FloatRows8(a *arm64Asm, typ string) {
	name, elem, size := "dot"+typ+"Rows8", "uint16", 2
	if typ == "F32" {
		elem, size = "float32", 4
	}
	fmt.Fprintf(&a.b, "\n// func %s(out, x *float32, rows *%s, n, count, stride int)\n", name, elem)
	fmt.Fprintf(&a.b, "TEXT ·%s(SB), NOSPLIT|NOFRAME, $0-48\n", name)
	for i, arg := range []string{"out", "x", "rows", "n", "count", "stride"} {
		a.line("MOVD %s+%d(FP), R%d", arg, 8*i, i)
	}
	a.line("LSL $%d, R5", size/2) // stride in bytes
	fmt.Fprintf(&a.b, "%s_group:\n", name)
	a.line("CMP $8, R4")
	a.line("BLT %s_done", name)
	for j := range 8 { // R6–R13: the group's rows
		if j == 0 {
			a.line("MOVD R2, R6")
		} else {
			a.line("ADD R5, R%d, R%d", 5+j, 6+j)
		}
	}
	for j := range 8 {
		a.eor(16+j, 16+j, 16+j)
	}
	a.line("MOVD $0, R14") // the byte offset in the rows
	a.line("MOVD R1, R15") // x
	fmt.Fprintf(&a.b, "%s_elem:\n", name)
	a.line("CBZ R3, %s_sum", name)
	a.ldrQ(0, 15, 0) // x[i:i+4]
	for j := range 8 {
		switch typ {
		case "F32":
			a.ldrQIndex(1, 6+j, 14)
		case "F16":
			a.ldrDIndex(1, 6+j, 14)
			a.fcvtl(1, 1, false)
		default:
			a.ldrDIndex(1, 6+j, 14)
			a.shll16(1, 1)
		}
		a.fmul(1, 1, 0)       // float32(w[i]·x[i])
		a.fadd(16+j, 16+j, 1) // s += …
	}
	a.line("ADD $%d, R14", 4*size)
	a.line("ADD $16, R15")
	a.line("SUB $4, R3")
	a.line("B %s_elem", name)
	fmt.Fprintf(&a.b, "%s_sum:\n", name)
	for p := range 4 {
		a.faddp(0, 16+2*p, 17+2*p) // rows 2p, 2p+1: s0+s1, s2+s3 of each
		a.faddp(0, 0, 0)           // (s0+s1)+(s2+s3) of each, in lanes 0 and 1
		a.strD(0, 0, 8*p)
	}
	a.line("ADD $32, R0")
	a.line("ADD R5<<3, R2, R2") // the next group: eight rows on
	a.line("MOVD n+24(FP), R3")
	a.line("SUB $8, R4")
	a.line("B %s_group", name)
	fmt.Fprintf(&a.b, "%s_done:\n", name)
	a.line("RET")
}

// arm64Q4K writes dotQ4Kr8NEON: Q4_K interleaved (see interleavedQ4K):
// per super-block of eight rows, their d (16 bytes), dmin (16), the three
// words of 6-bit scales and mins, then the quants four bytes of each row
// at a time. Rows 0–3 are the low register of each pair, rows 4–7 the
// high; isum = Σ_j sc_j·Σ q·x_q, msum = Σ_j m_j·Σ x_q, and sum +=
// float32(d·float32(isum)) − float32(dmin·float32(msum)), as dotQ4K does.
func arm64Q4K(a *arm64Asm, name string) {
	a.prologue(name, "dotQ4K of eight Q4_K rows interleaved at w (tensor.Pack), xs the activation's sums of 32 quants.", func() {
		a.movi16b(13, 0x3f)
		a.movi16b(14, 0x03)
		a.movi4s(15, 0xff)
	})
	// The scales and mins, four 6-bit values a word (ggml's utmp
	// unpacking, a row per lane): sc_0..3, m_0..3, sc_4..7, m_4..7 in
	// V21–V24 (rows 0–3) and V25–V28 (rows 4–7).
	for h := range 2 {
		sc03, m03, sc47, m47 := 21+4*h, 22+4*h, 23+4*h, 24+4*h
		a.ldrQ(0, 1, 32+16*h) // u0
		a.ldrQ(1, 1, 64+16*h) // u1
		a.ldrQ(6, 1, 96+16*h) // u2
		a.and(sc03, 0, 13)
		a.and(m03, 1, 13)
		a.ushr4s(7, 0, 6)
		a.and(7, 7, 14)
		a.shl4s(7, 7, 4)
		a.and(sc47, 6, 12)
		a.orr(sc47, sc47, 7)
		a.ushr4s(7, 1, 6)
		a.and(7, 7, 14)
		a.shl4s(7, 7, 4)
		a.ushr4s(m47, 6, 4)
		a.and(m47, m47, 12)
		a.orr(m47, m47, 7)
	}
	// scale(j, h) leaves sc_j (or m_j, from the m registers) of rows
	// 4h..4h+3 in V20.
	scale := func(first, j int) {
		src := first
		if j >= 4 {
			src += 2
		}
		switch b := j % 4; b {
		case 0:
			a.and(20, src, 15)
		case 3:
			a.ushr4s(20, src, 24)
		default:
			a.ushr4s(20, src, 8*b)
			a.and(20, 20, 15)
		}
	}
	a.eor(29, 29, 29) // isum, rows 0–3
	a.eor(30, 30, 30) // rows 4–7
	for c := range 4 {
		for i := range 4 {
			a.ldrQ(2+i, 2, 64*c+16*i) // x_q[64c + 16i …]
		}
		for _, r := range []int{10, 11, 18, 19} {
			a.eor(r, r, r)
		}
		for k := range 8 {
			w := 128 + 32*(8*c+k)
			a.ldrQ(0, 1, w)
			a.ldrQ(1, 1, w+16)
			a.ushr16b(6, 0, 4)
			a.ushr16b(7, 1, 4)
			a.and(0, 0, 12)
			a.and(1, 1, 12)
			a.sdotElem(10, 0, 2+k/4, k%4) // sub-block 2c: x_q[64c + 4k …]
			a.sdotElem(18, 1, 2+k/4, k%4)
			a.sdotElem(11, 6, 4+k/4, k%4) // sub-block 2c+1: x_q[64c + 32 + 4k …]
			a.sdotElem(19, 7, 4+k/4, k%4)
		}
		for h, acc := range [][2]int{{10, 11}, {18, 19}} {
			scale(21+4*h, 2*c)
			a.mla(29+h, acc[0], 20)
			scale(21+4*h, 2*c+1)
			a.mla(29+h, acc[1], 20)
		}
	}
	// msum: m_j times the activation's Σ x_q of sub-block j.
	a.ldrQ(8, 4, 0)
	a.ldrQ(9, 4, 16)
	for h := range 2 {
		for j := range 8 {
			scale(22+4*h, j)
			if j == 0 {
				a.mulElem(h, 20, 8, 0)
			} else {
				a.mlaElem(h, 20, 8+j/4, j%4)
			}
		}
	}
	a.scvtf(29, 29) // rounded to nearest even, as Go's float32(isum)
	a.scvtf(30, 30)
	a.scvtf(0, 0)
	a.scvtf(1, 1)
	a.ldrQ(6, 1, 0)  // d
	a.ldrQ(7, 1, 16) // dmin
	a.ld1r(9, 3)     // d_x
	for h := range 2 {
		d, dmin := 2+h, 4+h
		a.fcvtl(d, 6, h == 1)
		a.fcvtl(dmin, 7, h == 1)
		a.fmul(d, d, 9)       // float32(d_w·d_x)
		a.fmul(dmin, dmin, 9) // float32(dmin_w·d_x)
		a.fmul(d, d, 29+h)    // float32(d·float32(isum))
		a.fmul(dmin, dmin, h) // float32(dmin·float32(msum))
		a.fsub(d, d, dmin)    // … − …
		a.fadd(16+h, 16+h, d) // sum += …
	}
	a.epilogue(name, 8*144, 256, 32)
}
