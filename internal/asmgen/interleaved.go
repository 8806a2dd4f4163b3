package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The interleaved kernels read eight rows of Q8_0 or Q4_0 that tensor.Pack
// has stored interleaved, block by block: for each block, the eight rows'
// fp16 scales (16 bytes), then the rows' quant bytes four at a time — the
// first four bytes of rows 0 to 7, then the next four of rows 0 to 7, and
// so on. Four bytes of eight rows fill a YMM with one row per 32-bit lane,
// so the products of the eight rows with four activation quants
// (broadcast to every lane) sum within their lanes: each lane ends the
// block holding its row's Σ w_q·x_q with no horizontal additions, and the
// eight scales convert with one instruction. The float32 steps are the
// pure-Go kernel's, per lane, as in the other kernels.
//
// Each type has two: one for AVX2 (VPMADDUBSW and VPMADDWD, the product of
// an unsigned and a signed byte) and one for AVX-512 VNNI on YMM registers
// (VPDPBUSD: four such products added into a 32-bit lane in one
// instruction, the activation's four bytes broadcast from memory).

// interleavedPrefetch is how far ahead of its block an interleaved kernel
// asks for the rows' bytes: they are one stream.
const interleavedPrefetch = 512

// interleaved describes one interleaved kernel: its frame (arguments,
// loop, the block's float32 steps) is the same for every type.
type interleaved struct {
	name       string
	doc        []string
	blockBytes int    // of one row's block: the group's block is eight times that
	super      bool   // super-blocks of 256 (K-quants): x moves on 256 bytes a block, the sums 32
	sums       string // the activation's sums argument: "xs" (int32 per block) or "bsums" (int16 per 16)
	prefetch   int    // how far ahead of its block the kernel asks for the rows' bytes
	vnni       bool   // AVX-512 VNNI (and VL) rather than AVX2
	// setup, if set, makes the constants isum needs, before the loop.
	setup func(k *ikernel)
	// scales, if set, returns the eight rows' block scales as float32, one
	// row per lane, from the block at w (else they are the fp16 at w).
	scales func(k *ikernel) Register
	// isum computes the eight rows' Σ w_q·x_q (scaled as the type says) of
	// the block at w with the activation's quants x, into a YMM of int32,
	// one row per lane; and, for Q4_K, msum (else nil), whose float32 is
	// multiplied by the rows' second scale (dmin, at w+16) and taken off.
	isum func(k *ikernel) (isum, msum Register)
}

// ikernel is what an interleaved kernel's setup and isum work with.
type ikernel struct {
	w, x, xs  Register
	ones      Register // sixteen int16 ones (AVX2)
	low       Register // 0x0f in every byte
	flip      Register // 0x80 in every byte (VNNI Q8_0)
	constants map[string]Register
}

// onesW sets k.ones, for VPMADDWD's pairwise sums (AVX2).
func (k *ikernel) onesW() {
	k.ones = YMM()
	VPCMPEQW(k.ones, k.ones, k.ones)
	VPSRLW(Imm(15), k.ones, k.ones)
}

// lowNibbles sets k.low.
func (k *ikernel) lowNibbles() {
	k.low = YMM()
	fillLanes(k.low, 0x0f0f0f0f)
}

func (e interleaved) build() {
	sums, sumsType := "xs", "*int32"
	if e.sums == "bsums" {
		sums, sumsType = "bsums", "*int16"
	}
	TEXT(e.name, NOSPLIT, "func(out *float32, w *byte, x *int8, xd *float32, "+sums+" "+sumsType+", nb int)")
	Pragma("noescape") // the kernels keep no pointer
	Doc(e.doc...)
	k := ikernel{constants: map[string]Register{}}
	out := Load(Param("out"), GP64())
	k.w = Load(Param("w"), GP64())
	k.x = Load(Param("x"), GP64())
	xd := Load(Param("xd"), GP64())
	k.xs = Load(Param(sums), GP64())
	nb := Load(Param("nb"), GP64())
	if e.setup != nil {
		e.setup(&k)
	}
	sum := YMM()
	VXORPS(sum, sum, sum)

	Label(e.name + "_block")
	TESTQ(nb, nb)
	JZ(LabelRef(e.name + "_done"))
	for off := 0; off < 8*e.blockBytes; off += 64 { // a line for every line the block spans
		PREFETCHT0(Mem{Base: k.w, Disp: e.prefetch + off})
	}

	isum, msum := e.isum(&k)
	f := YMM()
	VCVTDQ2PS(isum, f) // exact below 2²⁴; else rounded to nearest even, as Go's float32(isum)
	var dw Register = YMM()
	if e.scales != nil {
		dw = e.scales(&k)
	} else {
		VCVTPH2PS(Mem{Base: k.w}, dw) // the eight rows' scales, F16 → F32 (exact)
	}
	dx := YMM()
	VBROADCASTSS(Mem{Base: xd}, dx)
	VMULPS(dx, dw, dw) // scale = float32(d_w·d_x)
	VMULPS(f, dw, dw)  // float32(scale·float32(isum))
	if msum != nil {
		fm, dmin := YMM(), YMM()
		VCVTDQ2PS(msum, fm)
		VCVTPH2PS(Mem{Base: k.w, Disp: 16}, dmin)
		VMULPS(dx, dmin, dmin) // float32(dmin_w·d_x)
		VMULPS(fm, dmin, dmin) // float32(dmin·float32(msum))
		VSUBPS(dmin, dw, dw)   // … − …
	}
	VADDPS(dw, sum, sum) // sum += …

	ADDQ(U32(8*e.blockBytes), k.w)
	if e.super {
		ADDQ(U32(256), k.x)
		ADDQ(Imm(32), k.xs)
	} else {
		ADDQ(Imm(32), k.x)
		ADDQ(Imm(4), k.xs)
	}
	ADDQ(Imm(4), xd)
	DECQ(nb)
	JMP(LabelRef(e.name + "_block"))

	Label(e.name + "_done")
	VMOVUPS(sum, Mem{Base: out})
	VZEROUPPER()
	RET()
}

// forms builds a type's two kernels, AVX2 (name) and VNNI (name+"VNNI"),
// documented by what (the pure-Go kernel and its inputs).
func forms(e interleaved, what string, isum func(k *ikernel, vnni bool) (Register, Register)) {
	for _, vnni := range []bool{false, true} {
		f, cpu := e, "AVX2, F16C."
		if vnni {
			f.name, cpu = e.name+"VNNI", "AVX-512 VNNI and VL, F16C."
		}
		f.vnni = vnni
		f.doc = []string{f.name + " sets out[0:8] to " + what, cpu}
		setup := e.setup
		f.setup = func(k *ikernel) {
			if !vnni {
				k.onesW()
			}
			if setup != nil {
				setup(k)
			}
		}
		f.isum = func(k *ikernel) (Register, Register) { return isum(k, vnni) }
		f.build()
	}
}

// lanes4 is the YMM of the eight rows' four quant bytes at chunk c of the
// block at w.
func lanes4(w Register, c int) Mem { return Mem{Base: w, Disp: 16 + 32*c} }

// dotQ8_0r8 and dotQ8_0r8VNNI: Q8_0, per block Σ w_q·x_q over 32 signed
// quants. AVX2 multiplies |w_q| by x_q with w_q's sign (VPSIGNB); VNNI
// multiplies w_q + 128 (unsigned: the sign bit flipped) by x_q and takes
// 128·Σ x_q off.
func interleavedQ8_0() {
	forms(interleaved{name: "dotQ8_0r8", blockBytes: 34, prefetch: interleavedPrefetch,
		setup: func(k *ikernel) {
			k.flip = YMM()
			fillLanes(k.flip, 0x80808080)
		}},
		"dotQ8_0 of eight Q8_0 rows interleaved at w (tensor.Pack) with the activation's nb blocks of quants x, scales xd and sums xs.",
		func(k *ikernel, vnni bool) (Register, Register) {
			acc := YMM()
			if vnni {
				VPXOR(acc, acc, acc)
				for c := range 8 {
					wq := YMM()
					VPXOR(lanes4(k.w, c), k.flip, wq) // w_q + 128
					VPDPBUSD_BCST(Mem{Base: k.x, Disp: 4 * c}, wq, acc)
				}
				s := YMM()
				VPBROADCASTD(Mem{Base: k.xs}, s)
				VPSLLD(Imm(7), s, s)
				VPSUBD(s, acc, acc) // − 128·Σ x_q
				return acc, nil
			}
			for c := range 8 {
				wq, sx := YMM(), YMM()
				VMOVDQU(lanes4(k.w, c), wq)
				VPBROADCASTD(Mem{Base: k.x, Disp: 4 * c}, sx)
				VPSIGNB(wq, sx, sx) // x_q with w_q's sign (x_q is never −128)
				VPABSB(wq, wq)      // |w_q|, unsigned: |−128| = 128 still fits
				VPMADDUBSW(sx, wq, wq)
				if c == 0 {
					VPMADDWD(k.ones, wq, acc)
					continue
				}
				VPMADDWD(k.ones, wq, wq)
				VPADDD(wq, acc, acc)
			}
			return acc, nil
		})
}

// dotQ4_0r8 and dotQ4_0r8VNNI: Q4_0, per block Σ q·x_q over 32 unsigned
// nibbles (the low ones are elements 0–15, the high ones 16–31), less
// 8·Σ x_q. AVX2 adds the int16 pair sums of the whole block before
// widening them: each is at most 2·15·128, and eight of them fit.
func interleavedQ4_0() {
	forms(interleaved{name: "dotQ4_0r8", blockBytes: 18, prefetch: interleavedPrefetch, setup: (*ikernel).lowNibbles},
		"dotQ4_0 of eight Q4_0 rows interleaved at w (tensor.Pack) with the activation's nb blocks of quants x, scales xd and sums xs.",
		func(k *ikernel, vnni bool) (Register, Register) {
			acc := YMM()
			if vnni {
				VPXOR(acc, acc, acc)
			}
			for c := range 4 {
				lo, hi := YMM(), YMM()
				VMOVDQU(lanes4(k.w, c), lo)
				VPSRLW(Imm(4), lo, hi)
				VPAND(k.low, lo, lo)
				VPAND(k.low, hi, hi)
				xl, xh := Mem{Base: k.x, Disp: 4 * c}, Mem{Base: k.x, Disp: 16 + 4*c}
				if vnni {
					VPDPBUSD_BCST(xl, lo, acc)
					VPDPBUSD_BCST(xh, hi, acc)
					continue
				}
				bl, bh := YMM(), YMM()
				VPBROADCASTD(xl, bl)
				VPBROADCASTD(xh, bh)
				VPMADDUBSW(bl, lo, lo)
				VPMADDUBSW(bh, hi, hi)
				if c == 0 {
					VPADDW(hi, lo, acc)
					continue
				}
				VPADDW(lo, acc, acc)
				VPADDW(hi, acc, acc)
			}
			if !vnni {
				VPMADDWD(k.ones, acc, acc)
			}
			subSums(k, acc, 3) // − 8·Σ x_q
			return acc, nil
		})
}

// subSums takes 2^shift·Σ x_q (the block's sum at xs) off each lane of acc.
func subSums(k *ikernel, acc Register, shift uint64) {
	s := YMM()
	VPBROADCASTD(Mem{Base: k.xs}, s)
	VPSLLD(Imm(shift), s, s)
	VPSUBD(s, acc, acc)
}

// byteOfDwords is the VPSHUFB control that puts byte j of every 32-bit
// lane into that lane, zero-extended.
func byteOfDwords(j int) Mem {
	return byteTable(fmt.Sprintf("byteOfDwords_%d", j), func(b int) uint8 {
		if b%4 == 0 {
			return uint8(b + j)
		}
		return 0x80 // zero
	})
}

// dotQ4Kr8 and dotQ4Kr8VNNI: Q4_K interleaved (tensor.Pack) — per
// super-block of eight rows, their d (16 bytes), dmin (16), the three
// words of 6-bit scales and mins (three YMM, a row per lane), then the
// quants four bytes of each row at a time. Per super-block, isum =
// Σ_j sc_j·Σ q·x_q over the eight sub-blocks of 32 and msum = Σ_j m_j·Σ x_q
// (xs: the activation's Σ x_q per 32), then sum += float32(d·float32(isum))
// − float32(dmin·float32(msum)), d and dmin the row's scales times the
// activation's, as dotQ4K does.
func interleavedQ4K() {
	forms(interleaved{name: "dotQ4Kr8", blockBytes: 144, super: true, prefetch: 1024, setup: (*ikernel).lowNibbles},
		"dotQ4K of eight Q4_K rows interleaved at w (tensor.Pack) with the activation's nb super-blocks of quants x, scales xd and sums xs of 32 quants.",
		func(k *ikernel, vnni bool) (Register, Register) {
			// The scales and mins of the eight rows, four 6-bit values a word
			// (ggml's utmp unpacking, a row per lane): sc_0..3, sc_4..7,
			// m_0..3, m_4..7.
			u0, u1, u2, t := YMM(), YMM(), YMM(), YMM()
			VMOVDQU(Mem{Base: k.w, Disp: 32}, u0)
			VMOVDQU(Mem{Base: k.w, Disp: 64}, u1)
			VMOVDQU(Mem{Base: k.w, Disp: 96}, u2)
			six, three := YMM(), YMM()
			fillLanes(six, 0x3f3f3f3f)
			fillLanes(three, 0x03030303)
			sc03, sc47, m03, m47 := YMM(), YMM(), YMM(), YMM()
			VPAND(six, u0, sc03)
			VPAND(six, u1, m03)
			VPSRLD(Imm(6), u0, t)
			VPAND(three, t, t)
			VPSLLD(Imm(4), t, t)
			VPAND(k.low, u2, sc47)
			VPOR(t, sc47, sc47)
			VPSRLD(Imm(6), u1, t)
			VPAND(three, t, t)
			VPSLLD(Imm(4), t, t)
			VPSRLD(Imm(4), u2, m47)
			VPAND(k.low, m47, m47)
			VPOR(t, m47, m47)
			scale := func(j int, lo, hi Register) Register {
				s := YMM()
				src := lo
				if j >= 4 {
					src = hi
				}
				VPSHUFB(byteOfDwords(j%4), src, s)
				return s
			}

			// msum = Σ_j m_j·Σ x_q of sub-block j.
			msum := YMM()
			for j := range 8 {
				m, s := scale(j, m03, m47), YMM()
				VPBROADCASTD(Mem{Base: k.xs, Disp: 4 * j}, s)
				VPMULLD(s, m, m)
				if j == 0 {
					VMOVDQA(m, msum)
				} else {
					VPADDD(m, msum, msum)
				}
			}

			// isum = Σ_j sc_j·Σ q·x_q: sub-blocks 2c (low nibbles) and 2c+1
			// (high) from the same 32 bytes of each row.
			isum := YMM()
			for c := range 4 {
				accLo, accHi := YMM(), YMM()
				if vnni {
					VPXOR(accLo, accLo, accLo)
					VPXOR(accHi, accHi, accHi)
				}
				for ch := range 8 {
					lo, hi := YMM(), YMM()
					VMOVDQU(Mem{Base: k.w, Disp: 128 + 256*c + 32*ch}, lo)
					VPSRLW(Imm(4), lo, hi)
					VPAND(k.low, lo, lo)
					VPAND(k.low, hi, hi)
					xl, xh := Mem{Base: k.x, Disp: 64*c + 4*ch}, Mem{Base: k.x, Disp: 64*c + 32 + 4*ch}
					if vnni {
						VPDPBUSD_BCST(xl, lo, accLo)
						VPDPBUSD_BCST(xh, hi, accHi)
						continue
					}
					// Eight int16 pair sums of at most 2·15·128 each fit.
					bl, bh := YMM(), YMM()
					VPBROADCASTD(xl, bl)
					VPBROADCASTD(xh, bh)
					VPMADDUBSW(bl, lo, lo)
					VPMADDUBSW(bh, hi, hi)
					if ch == 0 {
						VMOVDQA(lo, accLo)
						VMOVDQA(hi, accHi)
					} else {
						VPADDW(lo, accLo, accLo)
						VPADDW(hi, accHi, accHi)
					}
				}
				if !vnni {
					VPMADDWD(k.ones, accLo, accLo)
					VPMADDWD(k.ones, accHi, accHi)
				}
				VPMULLD(scale(2*c, sc03, sc47), accLo, accLo)
				VPMULLD(scale(2*c+1, sc03, sc47), accHi, accHi)
				if c == 0 {
					VPADDD(accHi, accLo, isum)
				} else {
					VPADDD(accLo, isum, isum)
					VPADDD(accHi, isum, isum)
				}
			}

			return isum, msum
		})
}

// signedByteOfDwords is the VPSHUFB control that puts byte j of every
// 32-bit lane into the lane's top byte, zeros below (then VPSRAD 24: the
// byte, sign-extended).
func signedByteOfDwords(j int) Mem {
	return byteTable(fmt.Sprintf("signedByteOfDwords_%d", j), func(b int) uint8 {
		if b%4 == 3 {
			return uint8(b - 3 + j)
		}
		return 0x80 // zero
	})
}

// dotQ6Kr8 and dotQ6Kr8VNNI: Q6_K interleaved (tensor.Pack) — per
// super-block of eight rows, their d (16 bytes), then the rest four bytes
// of each row at a time: 4 words of int8 scales, then 32 words of low
// nibbles (ql) and 16 of high bits (qh) in the order they are read. Per super-block, isum = Σ_k sc_k·(Σ q·x_q −
// 32·Σ x_q) over the sixteen sub-blocks of 16 (q the 6-bit quant, 0..63),
// then sum += float32(d·float32(isum)), as dotQ6K does.
func interleavedQ6K() {
	forms(interleaved{name: "dotQ6Kr8", blockBytes: 210, super: true, sums: "bsums", prefetch: 2048,
		setup: func(k *ikernel) {
			k.lowNibbles()
			k.constants["03"] = YMM()
			fillLanes(k.constants["03"], 0x03030303)
		}},
		"dotQ6K of eight Q6_K rows interleaved at w (tensor.Pack) with the activation's nb super-blocks of quants x, scales xd and sums bsums of 16 quants.",
		func(k *ikernel, vnni bool) (Register, Register) {
			word := func(i int) Mem { return Mem{Base: k.w, Disp: 16 + 32*i} } // word i of the eight rows
			isum := YMM()
			first := true
			for h := range 2 {
				for g := range 2 {
					var s [4]Register
					for i := range s {
						s[i] = YMM()
					}
					for c := range 4 {
						la, lb, hv := YMM(), YMM(), YMM()
						at := 4 + 3*(8*h+4*g+c) // the words in the order they are read (tensor's q6KWords)
						VMOVDQU(word(at), la)
						VMOVDQU(word(at+1), lb)
						VMOVDQU(word(at+2), hv)
						for i := range 4 {
							// q_i: a nibble of la or lb, two bits of hv above it.
							q, t := YMM(), YMM()
							src := la
							if i%2 == 1 {
								src = lb
							}
							if i < 2 {
								VPAND(k.low, src, q)
							} else {
								VPSRLW(Imm(4), src, q)
								VPAND(k.low, q, q)
							}
							if i == 0 {
								VPAND(k.constants["03"], hv, t)
							} else {
								VPSRLW(Imm(uint64(2*i)), hv, t)
								VPAND(k.constants["03"], t, t)
							}
							VPSLLW(Imm(4), t, t)
							VPOR(t, q, q)
							xm := Mem{Base: k.x, Disp: 128*h + 32*i + 16*g + 4*c}
							if vnni {
								if c == 0 {
									VPXOR(s[i], s[i], s[i])
								}
								VPDPBUSD_BCST(xm, q, s[i])
								continue
							}
							VPBROADCASTD(xm, t)
							VPMADDUBSW(t, q, q) // at most 2·63·128
							VPMADDWD(k.ones, q, q)
							if c == 0 {
								VMOVDQA(q, s[i])
							} else {
								VPADDD(q, s[i], s[i])
							}
						}
					}
					// isum += sc_j·(s_i − 32·Σ x_q), sub-block j = 8h + g + 2i.
					for i := range 4 {
						j := 8*h + g + 2*i
						b, sc := YMM(), YMM()
						VPBROADCASTW(Mem{Base: k.xs, Disp: 2 * j}, b.AsX())
						VPMOVSXWD(b.AsX(), b)
						VPSLLD(Imm(5), b, b)
						VPSUBD(b, s[i], s[i])
						VMOVDQU(word(j/4), sc) // sc_{4·(j/4)}..: four int8 a row
						VPSHUFB(signedByteOfDwords(j%4), sc, sc)
						VPSRAD(Imm(24), sc, sc)
						VPMULLD(sc, s[i], s[i])
						if first {
							VMOVDQA(s[i], isum)
							first = false
						} else {
							VPADDD(s[i], isum, isum)
						}
					}
				}
			}

			return isum, nil
		})
}

// byteOfLanes is the VPSHUFB control that sets every byte of each 32-bit
// lane to the lane's byte j (VPSHUFB indexes within 128 bits, so lane k of
// a half is at 4k).
func byteOfLanes(j uint8) Mem {
	return byteTable(fmt.Sprintf("byteOfLanes_%d", j), func(b int) uint8 { return uint8(b%16/4*4) + j })
}

// bytesOf is a 32-byte constant of eight 32-bit lanes, each the four bytes
// of lane (little-endian).
func bytesOf(name string, lane [4]uint8) Mem {
	return byteTable(name, func(b int) uint8 { return lane[b%4] })
}

// byteTable is the read-only 32-byte constant name, byte b being byteAt(b),
// written once.
func byteTable(name string, byteAt func(b int) uint8) Mem {
	if m, ok := shuffles[name]; ok {
		return m
	}
	m := GLOBL(name, RODATA|NOPTR)
	for b := range 32 {
		DATA(b, U8(byteAt(b)))
	}
	shuffles[name] = m
	return m
}

// dotQ5_0r8 and dotQ5_0r8VNNI: Q5_0 interleaved (tensor.Pack) — per block
// of eight rows, their d (16 bytes), their 32 fifth bits (a word a row),
// then the nibbles four bytes of each row at a time. Per block, isum =
// Σ q·x_q over 32 quants of 5 bits (the nibble, the fifth bit as 16 on
// top) less 16·Σ x_q, as dotQ5_0 does.
func interleavedQ5_0() {
	forms(interleaved{name: "dotQ5_0r8", blockBytes: 22, prefetch: 1024,
		setup: func(k *ikernel) {
			k.lowNibbles()
			k.constants["10"] = YMM()
			fillLanes(k.constants["10"], 0x10101010)
		}},
		"dotQ5_0 of eight Q5_0 rows interleaved at w (tensor.Pack) with the activation's nb blocks of quants x, scales xd and sums xs.",
		func(k *ikernel, vnni bool) (Register, Register) {
			qh := YMM()
			VMOVDQU(Mem{Base: k.w, Disp: 16}, qh)
			// fifth returns 16 in byte i of every lane whose row has bit
			// first+i of qh set (for i < 4), else 0.
			fifth := func(first int) Register {
				f := YMM()
				b := uint8(first / 8)
				VPSHUFB(byteOfLanes(b), qh, f) // the byte holding the bits, four times
				bit := uint8(first % 8)
				bits := bytesOf(fmt.Sprintf("q5bits_%d", bit), [4]uint8{1 << bit, 2 << bit, 4 << bit, 8 << bit})
				VPAND(bits, f, f)
				VPCMPEQB(bits, f, f)
				VPAND(k.constants["10"], f, f)
				return f
			}
			acc, accHi := YMM(), YMM()
			if vnni {
				VPXOR(acc, acc, acc)
			}
			for c := range 4 {
				lo, hi := YMM(), YMM()
				VMOVDQU(Mem{Base: k.w, Disp: 48 + 32*c}, lo)
				VPSRLW(Imm(4), lo, hi)
				VPAND(k.low, lo, lo)
				VPAND(k.low, hi, hi)
				VPOR(fifth(4*c), lo, lo)
				VPOR(fifth(16+4*c), hi, hi)
				xl, xh := Mem{Base: k.x, Disp: 4 * c}, Mem{Base: k.x, Disp: 16 + 4*c}
				if vnni {
					VPDPBUSD_BCST(xl, lo, acc)
					VPDPBUSD_BCST(xh, hi, acc)
					continue
				}
				// Four int16 pair sums of at most 2·31·128 each fit.
				b := YMM()
				VPBROADCASTD(xl, b)
				VPMADDUBSW(b, lo, lo)
				VPBROADCASTD(xh, b)
				VPMADDUBSW(b, hi, hi)
				if c == 0 {
					VMOVDQA(lo, acc)
					VMOVDQA(hi, accHi)
				} else {
					VPADDW(lo, acc, acc)
					VPADDW(hi, accHi, accHi)
				}
			}
			if !vnni {
				VPMADDWD(k.ones, acc, acc)
				VPMADDWD(k.ones, accHi, accHi)
				VPADDD(accHi, acc, acc)
			}
			s := YMM()
			VPBROADCASTD(Mem{Base: k.xs}, s)
			VPSLLD(Imm(4), s, s)
			VPSUBD(s, acc, acc) // − 16·Σ x_q

			return acc, nil
		})
}
