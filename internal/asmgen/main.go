// Command asmgen writes engine/tensor's amd64 assembly kernels with avo
// (github.com/mmcloughlin/avo): Go code that emits Go assembly, so the
// kernels are written, reviewed and register-allocated as Go, and the
// stubs that declare them are generated with them; and, with -arm64, its
// arm64 kernels (arm64.go: avo writes amd64 only). Run it through
// `go generate ./engine/tensor` (see engine/tensor/native_amd64.go).
//
// Each kernel computes the dot products of eight rows at once with one
// row per lane: the lanes take the blocks of their rows in order and do,
// for each block, the float32 operations of the pure-Go kernel in the
// pure-Go kernel's order (no fused multiply-add), so every lane's result
// is the pure-Go kernel's, bit for bit. The integer part of a block (the
// Σ w_q·x_q of 32 quants) is exact whatever the order, so it runs with
// the widest instructions there are.
package main

import (
	"flag"
	"fmt"
	"os"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// arm64Out is where the arm64 kernels go (-arm64; none if empty).
var arm64Out = flag.String("arm64", "", "write the arm64 kernels' assembly to this file")

func main() {
	flag.Parse()
	if *arm64Out != "" {
		if err := writeArm64(*arm64Out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	ConstraintExpr("!purego")
	dotQ8_0x8()
	dotQ4_0x8()
	dotQ4Kx8()
	dotQ6Kx8()
	interleavedQ8_0()
	interleavedQ4_0()
	interleavedQ4K()
	interleavedQ6K()
	interleavedQ5_0()
	interleavedMXFP4()
	addScaledRowsF32()
	floatRows8()
	decodeF16x8()
	encodeF16x8()
	swiGLUx8()
	expShiftedx8()
	Generate()
}

// prefetchAhead is how far ahead of the current block the kernels ask for
// their rows' bytes.
const prefetchAhead = 256

// fillLanes sets every 32-bit lane of the YMM m to v (a byte mask: v
// repeats one byte).
func fillLanes(m Register, v uint32) {
	x := m.(Vec).AsX()
	t := GP32()
	MOVL(U32(v), t)
	VMOVD(t, x)
	VPBROADCASTD(x, m)
}

// loopTop starts a kernel's loop over blocks: done when nb is 0, else the
// next blocks of the eight rows are asked for. Packed, each group of rows
// is one stream: its bytes are asked for a few blocks ahead (in the file's
// layout the rows' own streams are further apart than this reaches, and
// the hardware prefetchers take them).
func loopTop(name string, r rowAddrs, nb Register) {
	Label(name + "_block")
	TESTQ(nb, nb)
	JZ(LabelRef(name + "_done"))
	if prefetchAhead > 0 {
		PREFETCHT0(Mem{Base: r.base, Disp: prefetchAhead})
		PREFETCHT0(Mem{Base: r.base4, Disp: prefetchAhead})
	}
}

// arg is the memory operand of a scalar argument.
func arg(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// rowAddrs holds what addresses the eight rows' current blocks: rows 0–3
// at base + {0, s, 2s, 3s}, rows 4–7 the same from base4; both move on by
// the kernel's step a block. In a GGUF file's layout s is the row's bytes,
// base4 = base + 4s and the step a block's bytes; packed (tensor.Pack: each
// group of four rows block by block), s is a block's bytes, base4 the next
// group's start and the step four blocks.
type rowAddrs struct {
	base, base4, s, s3 Register
}

func (r rowAddrs) mem(row, disp int) Mem {
	b := r.base
	if row >= 4 {
		b, row = r.base4, row-4
	}
	switch row {
	case 0:
		return Mem{Base: b, Disp: disp}
	case 1:
		return Mem{Base: b, Index: r.s, Scale: 1, Disp: disp}
	case 2:
		return Mem{Base: b, Index: r.s, Scale: 2, Disp: disp}
	}
	return Mem{Base: b, Index: r.s3, Scale: 1, Disp: disp}
}

// eightRows writes a kernel named name over eight rows of blocks of
// blockBytes bytes, each starting with its fp16 scale: for every block,
// rowSums(row i) gives row i's eight int32 partial sums of Σ w_q·x_q (xq
// holding the block's 32 activation quants), fix adjusts the eight rows'
// block sums (one per lane) if the type needs it, then the block adds
// float32(float32(d_w·d_x)·float32(isum)) to each row's sum, as the
// pure-Go kernels do.
type eightRows struct {
	name       string
	doc        []string
	blockBytes int
	// rowSums returns row i's partial sums (a YMM of eight int32).
	rowSums func(k *kernel, i int) Register
	// fix, if set, adjusts isum, the eight rows' block sums.
	fix func(k *kernel, isum Register)
	// setup, if set, makes the constants rowSums needs, before the loop.
	setup func(k *kernel)
}

// kernel is what rowSums and fix work with.
type kernel struct {
	rows      rowAddrs
	xq, ones  Register // the block's activation quants; sixteen int16 ones
	xs        Register // the activation's per-block Σ x_q (Q4_0), a pointer
	constants map[string]Register
}

func (e eightRows) build() {
	TEXT(e.name, NOSPLIT, "func(out *float32, w *byte, stride, second, step int, x *int8, xd *float32, xs *int32, nb int)")
	Pragma("noescape") // the kernels keep no pointer
	Doc(e.doc...)
	var k kernel
	out := Load(Param("out"), GP64())
	k.rows = rowAddrs{base: GP64(), s: GP64()}
	Load(Param("w"), k.rows.base)
	Load(Param("stride"), k.rows.s)
	x := Load(Param("x"), GP64())
	xd := Load(Param("xd"), GP64())
	k.xs = Load(Param("xs"), GP64())
	nb := Load(Param("nb"), GP64())
	r := &k.rows
	r.s3 = GP64()
	LEAQ(Mem{Base: r.s, Index: r.s, Scale: 2}, r.s3)
	r.base4 = GP64()
	MOVQ(arg("second"), r.base4) // rows 4–7: second bytes on
	ADDQ(r.base, r.base4)

	k.ones = YMM() // sixteen int16 ones, for VPMADDWD's pairwise sums
	VPCMPEQW(k.ones, k.ones, k.ones)
	VPSRLW(Imm(15), k.ones, k.ones)
	k.constants = map[string]Register{}
	if e.setup != nil {
		e.setup(&k)
	}
	sum := YMM()
	VXORPS(sum, sum, sum)

	loopTop(e.name, *r, nb)

	k.xq = YMM()
	VMOVDQU(Mem{Base: x}, k.xq)
	var acc [8]Register
	for i := range acc {
		acc[i] = e.rowSums(&k, i)
	}
	lo := reduce8(acc)
	if e.fix != nil {
		e.fix(&k, lo)
	}
	isum := YMM()
	VCVTDQ2PS(lo, isum) // exact: every block sum is below 2²⁴ in magnitude

	// The rows' block scales, F16 → F32 (exact), times the activation's.
	dw, dx := halves8(*r, 0), YMM()
	VBROADCASTSS(Mem{Base: xd}, dx)
	VMULPS(dx, dw, dw)   // scale = float32(d_w·d_x)
	VMULPS(isum, dw, dw) // float32(scale·float32(isum))
	VADDPS(dw, sum, sum) // sum += …

	ADDQ(arg("step"), r.base)
	ADDQ(arg("step"), r.base4)
	ADDQ(Imm(32), x)
	ADDQ(Imm(4), xd)
	ADDQ(Imm(4), k.xs)
	DECQ(nb)
	JMP(LabelRef(e.name + "_block"))

	Label(e.name + "_done")
	VMOVUPS(sum, Mem{Base: out})
	VZEROUPPER()
	RET()
}

// reduce8 sums each row's eight int32 partial sums (acc[i]: row i's) into
// one YMM holding row i's sum in lane i, in acc's registers, and returns it.
func reduce8(acc [8]Register) Register {
	h01, h23, h45, h67 := acc[0], acc[2], acc[4], acc[6] // in place: no more registers live
	VPHADDD(acc[1], acc[0], h01)
	VPHADDD(acc[3], acc[2], h23)
	VPHADDD(acc[5], acc[4], h45)
	VPHADDD(acc[7], acc[6], h67)
	VPHADDD(h23, h01, h01) // rows 0–3: the low halves' sums, then the high halves'
	VPHADDD(h67, h45, h45) // rows 4–7
	lo, hi := acc[1], acc[3]
	VPERM2I128(Imm(0x20), h45, h01, lo)
	VPERM2I128(Imm(0x31), h45, h01, hi)
	VPADDD(hi, lo, lo)
	return lo
}

// halves8 converts the fp16 at offset disp of the current block of each of
// the eight rows into a YMM of float32 (lane i: row i), exactly.
func halves8(r rowAddrs, disp int) Register {
	halves := XMM()
	h := GP32()
	for i := range 8 {
		MOVWLZX(r.mem(i, disp), h)
		if i == 0 {
			VMOVD(h, halves)
		} else {
			VPINSRW(Imm(uint64(i)), h, halves, halves)
		}
	}
	f := YMM()
	VCVTPH2PS(halves, f)
	return f
}

// dotQ8_0x8 is dotQ8_0 (engine/tensor/q8_0.go) for eight rows: per block,
// isum = Σ w_q·x_q over 32 signed quants.
func dotQ8_0x8() {
	eightRows{
		name: "dotQ8_0x8",
		doc: []string{"dotQ8_0x8 sets out[0:8] to dotQ8_0 of the eight Q8_0 rows at w, w+stride, …, w+7·stride",
			"with the activation's nb blocks of quants x and scales xd (xs unused; AVX2, F16C)."},
		blockBytes: 34,
		rowSums: func(k *kernel, i int) Register {
			wq, sx := YMM(), YMM()
			VMOVDQU(k.rows.mem(i, 2), wq)
			VPSIGNB(wq, k.xq, sx) // x_q with w_q's sign (x_q is never −128)
			VPABSB(wq, wq)        // |w_q|, unsigned: |−128| = 128 still fits
			VPMADDUBSW(sx, wq, wq)
			VPMADDWD(k.ones, wq, wq)
			return wq
		},
	}.build()
}

// dotQ4_0x8 is dotQ4_0 (engine/tensor/q4_0.go) for eight rows: per block,
// isum = Σ q·x_q over 32 unsigned nibbles (the low ones are elements 0–15,
// the high ones 16–31), less 8·Σ x_q.
func dotQ4_0x8() {
	eightRows{
		name: "dotQ4_0x8",
		doc: []string{"dotQ4_0x8 sets out[0:8] to dotQ4_0 of the eight Q4_0 rows at w, w+stride, …, w+7·stride",
			"with the activation's nb blocks of quants x, scales xd and sums xs (AVX2, F16C)."},
		blockBytes: 18,
		setup: func(k *kernel) {
			mask := YMM()
			fillLanes(mask, 0x0f0f0f0f)
			k.constants["0f"] = mask
		},
		rowSums: func(k *kernel, i int) Register {
			mask := k.constants["0f"]
			lo, hi := YMM(), YMM()
			VMOVDQU(k.rows.mem(i, 2), lo.AsX())
			VPSRLW(Imm(4), lo.AsX(), hi.AsX())
			VINSERTI128(Imm(1), hi.AsX(), lo, lo)
			VPAND(mask, lo, lo)
			VPMADDUBSW(k.xq, lo, lo) // unsigned nibbles times signed x_q
			VPMADDWD(k.ones, lo, lo)
			return lo
		},
		fix: func(k *kernel, isum Register) {
			s := YMM()
			VPBROADCASTD(Mem{Base: k.xs}, s)
			VPSLLD(Imm(3), s, s)
			VPSUBD(s, isum, isum) // − 8·Σ x_q
		},
	}.build()
}

// dotQ4Kx8 is dotQ4K (engine/tensor/q4_k.go) for eight rows: per
// super-block of 256, isum = Σ_j sc_j·Σ q·x_q over its eight sub-blocks and
// msum = Σ_j m_j·Σ x_q (the activation's block sums), then
// sum += float32(d·float32(isum)) − float32(dmin·float32(msum)), d and dmin
// the row's scales times the activation's.
func dotQ4Kx8() {
	TEXT("dotQ4Kx8", NOSPLIT, "func(out *float32, w *byte, stride, second, step int, x *int8, xd *float32, bsums *int16, nb int)")
	Pragma("noescape") // the kernels keep no pointer
	Doc("dotQ4Kx8 sets out[0:8] to dotQ4K of the eight Q4_K rows at w, w+stride, …, w+7·stride",
		"with the activation's nb super-blocks of quants x, scales xd and block sums bsums (AVX2, F16C).")
	r, x, xd, bs, nb := kParams()

	mask := YMM()
	fillLanes(mask, 0x0f0f0f0f)
	sum := YMM()
	VXORPS(sum, sum, sum)

	loopTop("q4k", r, nb)

	// The activation's Σ x_q of each sub-block: its two block sums of 16.
	pairs := XMM()
	VMOVDQU(Mem{Base: bs}, pairs)
	VPHADDW(Mem{Base: bs, Disp: 16}, pairs, pairs)

	var acc [8]Register
	msum := YMM()
	for i := range 8 {
		// The sub-block scales and mins (6 bits each, packed in 12 bytes) as
		// sixteen int16: sc_0..sc_7, m_0..m_7 (ggml's utmp unpacking).
		u0, u1, u2, v := GP32(), GP32(), GP32(), GP32()
		MOVL(r.mem(i, 4), u0)
		MOVL(r.mem(i, 8), u1)
		MOVL(r.mem(i, 12), u2)
		sm := XMM()
		// utmp0 = u0 & 0x3f3f3f3f
		MOVL(u0, v)
		ANDL(U32(0x3f3f3f3f), v)
		VMOVD(v, sm)
		// utmp1 = (u2 & 0x0f0f0f0f) | ((u0 >> 6) & 0x03030303) << 4
		SHRL(Imm(6), u0)
		ANDL(U32(0x03030303), u0)
		SHLL(Imm(4), u0)
		MOVL(u2, v)
		ANDL(U32(0x0f0f0f0f), v)
		ORL(u0, v)
		VPINSRD(Imm(1), v, sm, sm)
		// utmp2 = u1 & 0x3f3f3f3f
		MOVL(u1, v)
		ANDL(U32(0x3f3f3f3f), v)
		VPINSRD(Imm(2), v, sm, sm)
		// utmp3 = ((u2 >> 4) & 0x0f0f0f0f) | ((u1 >> 6) & 0x03030303) << 4
		SHRL(Imm(4), u2)
		ANDL(U32(0x0f0f0f0f), u2)
		SHRL(Imm(6), u1)
		ANDL(U32(0x03030303), u1)
		SHLL(Imm(4), u1)
		ORL(u1, u2)
		VPINSRD(Imm(3), u2, sm, sm)
		scales := YMM()
		VPMOVZXBW(sm, scales) // sc_0..sc_7 | m_0..m_7

		// msum of row i into lane i of msum.
		mins, m := XMM(), YMM()
		VEXTRACTI128(Imm(1), scales, mins)
		VPMADDWD(pairs, mins, mins)
		VPHADDD(mins, mins, mins)
		VPHADDD(mins, mins, mins) // every lane: Σ_j m_j·Σ x_q
		if i == 0 {
			VPBROADCASTD(mins, msum)
		} else {
			VPBROADCASTD(mins, m)
			VPBLENDD(Imm(uint64(1)<<i), m, msum, msum)
		}

		// The scales in both halves, for the shuffles that broadcast sc_j.
		VPERMQ(Imm(0x44), scales, scales)
		acc[i] = YMM()
		for c := range 4 {
			lo, hi, sc := YMM(), YMM(), YMM()
			VMOVDQU(r.mem(i, 16+32*c), lo)
			VPSRLW(Imm(4), lo, hi)
			VPAND(mask, lo, lo)
			VPAND(mask, hi, hi)
			VPMADDUBSW(Mem{Base: x, Disp: 64 * c}, lo, lo)    // sub-block 2c
			VPMADDUBSW(Mem{Base: x, Disp: 64*c + 32}, hi, hi) // sub-block 2c+1
			VPSHUFB(shuffleK4(2*c), scales, sc)
			VPMADDWD(sc, lo, lo)
			VPSHUFB(shuffleK4(2*c+1), scales, sc)
			VPMADDWD(sc, hi, hi)
			if c == 0 {
				VPADDD(hi, lo, acc[i])
			} else {
				VPADDD(lo, acc[i], acc[i])
				VPADDD(hi, acc[i], acc[i])
			}
		}
	}
	isum := reduce8(acc)
	fi, fm := YMM(), YMM()
	VCVTDQ2PS(isum, fi) // rounded to nearest even, as Go's float32(isum)
	VCVTDQ2PS(msum, fm)

	d, dmin, dx := halves8(r, 0), halves8(r, 2), YMM()
	VBROADCASTSS(Mem{Base: xd}, dx)
	VMULPS(dx, d, d)       // float32(d_w·d_x)
	VMULPS(dx, dmin, dmin) // float32(dmin_w·d_x)
	VMULPS(fi, d, d)       // float32(d·float32(isum))
	VMULPS(fm, dmin, dmin) // float32(dmin·float32(msum))
	VSUBPS(dmin, d, d)     // … − …
	VADDPS(d, sum, sum)    // sum += …

	kNext(r, x, xd, bs, nb, "q4k", sum)
}

// shuffleK4 is the VPSHUFB control that broadcasts the int16 sc_j to
// every lane of a YMM holding sc_0..sc_7 in both halves.
func shuffleK4(j int) Mem {
	return shuffle(fmt.Sprintf("shuffleK4_%d", j), func(int) int { return j })
}

// dotQ6Kx8 is dotQ6K (engine/tensor/q6_k.go) for eight rows: per
// super-block of 256, isum = Σ_k sc_k·(Σ q·x_q − 32·Σ x_q) over its sixteen
// sub-blocks of 16 (q the 6-bit quant, 0..63; sc_k signed), then
// sum += float32(d·float32(isum)). Its vector registers are named, not
// allocated: avo's allocator would reach for Y16–Y31, which AVX2 lacks.
func dotQ6Kx8() {
	TEXT("dotQ6Kx8", NOSPLIT, "func(out *float32, w *byte, stride, second, step int, x *int8, xd *float32, bsums *int16, nb int)")
	Pragma("noescape") // the kernels keep no pointer
	Doc("dotQ6Kx8 sets out[0:8] to dotQ6K of the eight Q6_K rows at w, w+stride, …, w+7·stride",
		"with the activation's nb super-blocks of quants x, scales xd and block sums bsums (AVX2, F16C).")
	r, x, xd, bs, nb := kParams()

	m0f, m03, sum := Y0, Y1, Y2
	fillLanes(m0f, 0x0f0f0f0f)
	fillLanes(m03, 0x03030303)
	VXORPS(sum, sum, sum)

	loopTop("q6k", r, nb)

	// Row i's sums accumulate in accRegs[i], reduced as the rows come
	// (reduce8's tree): rows 0, 1 → Y9; 2, 3 → Y10, then with Y9 → Y9;
	// 4, 5 → Y10; 6, 7 → Y11, then with Y10 → Y10.
	accRegs := [8]VecPhysical{Y9, Y10, Y10, Y11, Y10, Y11, Y11, Y12}
	sc, sch, qh, ql, q, t := Y4, Y5, Y4, Y6, Y7, Y8
	for i := range 8 {
		acc := accRegs[i]
		// −32·Σ_k sc_k·Σ x_q, the quants' offset, to start row i's sums.
		VPMOVSXBW(r.mem(i, 192), sc) // the sixteen scales as int16
		VPMADDWD(Mem{Base: bs}, sc, sc)
		VPSLLD(Imm(5), sc, sc)
		VPXOR(acc, acc, acc)
		VPSUBD(sc, acc, acc)
		for h := range 2 {
			// The half's eight scales, as int16 in both halves of a YMM.
			VPMOVSXBW(r.mem(i, 192+8*h), sch.AsX())
			VPERMQ(Imm(0x44), sch, sch)
			VMOVDQU(r.mem(i, 128+32*h), qh)
			for half := range 2 { // ql[0:32] for q1, q3; ql[32:64] for q2, q4
				VMOVDQU(r.mem(i, 64*h+32*half), ql)
				for hi := range 2 { // the low nibbles, then the high ones
					n := half + 2*hi // q1..q4 as 0..3: x[32n, 32n+32) of the half
					if hi == 0 {
						VPAND(m0f, ql, q)
					} else {
						VPSRLW(Imm(4), ql, q)
						VPAND(m0f, q, q)
					}
					if n > 0 {
						VPSRLW(Imm(uint64(2*n)), qh, t)
						VPAND(m03, t, t)
					} else {
						VPAND(m03, qh, t)
					}
					VPSLLW(Imm(4), t, t)
					VPOR(t, q, q) // the 6-bit quants, 0..63
					VPMADDUBSW(Mem{Base: x, Disp: 128*h + 32*n}, q, q)
					VPSHUFB(shuffleK6(n), sch, t) // sc of sub-blocks 2n and 2n+1 of the half
					VPMADDWD(t, q, q)
					VPADDD(q, acc, acc)
				}
			}
		}
		switch i {
		case 1, 3, 5, 7:
			VPHADDD(acc, accRegs[i-1], accRegs[i-1])
		}
		switch i {
		case 3:
			VPHADDD(Y10, Y9, Y9) // rows 0–3
		case 7:
			VPHADDD(Y11, Y10, Y10) // rows 4–7
		}
	}
	VPERM2I128(Imm(0x20), Y10, Y9, Y11)
	VPERM2I128(Imm(0x31), Y10, Y9, Y12)
	VPADDD(Y12, Y11, Y11)
	VCVTDQ2PS(Y11, Y3)

	h := GP32()
	for i := range 8 {
		MOVWLZX(r.mem(i, 208), h)
		if i == 0 {
			VMOVD(h, X13)
		} else {
			VPINSRW(Imm(uint64(i)), h, X13, X13)
		}
	}
	VCVTPH2PS(X13, Y13)
	VBROADCASTSS(Mem{Base: xd}, Y14)
	VMULPS(Y14, Y13, Y13) // float32(d_w·d_x)
	VMULPS(Y3, Y13, Y13)  // float32(d·float32(isum))
	VADDPS(Y13, sum, sum) // sum += …

	kNext(r, x, xd, bs, nb, "q6k", sum)
}

// shuffleK6 is the VPSHUFB control that puts the int16 sc_{2n} in every
// lane of a YMM's low half and sc_{2n+1} in its high half, from a YMM
// holding a half's eight scales in both halves.
func shuffleK6(n int) Mem {
	return shuffle(fmt.Sprintf("shuffleK6_%d", n), func(b int) int { return 2*n + b/16 })
}

// shuffles are the VPSHUFB controls written so far, by name.
var shuffles = map[string]Mem{}

// shuffle is (once) the read-only 32-byte control that fills each byte b
// of a YMM with byte 2·elem(b) + b%2 of its half: int16 elem(b) in every
// int16 lane.
func shuffle(name string, elem func(b int) int) Mem {
	return byteTable(name, func(b int) uint8 { return uint8(2*elem(b) + b%2) })
}

// kParams loads the K-quant kernels' arguments: the rows' addresses, the
// activation's quants, scales and block sums, and the super-block count.
func kParams() (r rowAddrs, x, xd, bs, nb Register) {
	r = rowAddrs{base: GP64(), s: GP64()}
	Load(Param("w"), r.base)
	Load(Param("stride"), r.s)
	x = Load(Param("x"), GP64())
	xd = Load(Param("xd"), GP64())
	bs = Load(Param("bsums"), GP64())
	nb = Load(Param("nb"), GP64())
	r.s3 = GP64()
	LEAQ(Mem{Base: r.s, Index: r.s, Scale: 2}, r.s3)
	r.base4 = GP64()
	MOVQ(arg("second"), r.base4) // rows 4–7: second bytes on
	ADDQ(r.base, r.base4)
	return r, x, xd, bs, nb
}

// kNext ends a K-quant kernel's loop: on to the next super-block (the
// activation's 256 quants, its scale and 16 block sums), back to name's
// block label; then, when none is left, out[0:8] = sum.
func kNext(r rowAddrs, x, xd, bs, nb Register, name string, sum Register) {
	ADDQ(arg("step"), r.base)
	ADDQ(arg("step"), r.base4)
	ADDQ(U32(256), x)
	ADDQ(Imm(4), xd)
	ADDQ(Imm(32), bs)
	DECQ(nb)
	JMP(LabelRef(name + "_block"))

	Label(name + "_done")
	out := Load(Param("out"), GP64())
	VMOVUPS(sum, Mem{Base: out})
	VZEROUPPER()
	RET()
}
