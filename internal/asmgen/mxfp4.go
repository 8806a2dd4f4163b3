package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// mxfp4Values are MXFP4's codes' doubled E2M1 values plus 16 (4…28:
// unsigned bytes, for VPMADDUBSW and VPDPBUSD), by code, in both halves
// of a YMM for VPSHUFB.
var mxfp4Values = [16]uint8{16, 17, 18, 19, 20, 22, 24, 28, 16, 15, 14, 13, 12, 10, 8, 4}

// dotMXFP4r8 and dotMXFP4r8VNNI: MXFP4 interleaved (tensor.Pack) — per
// block of eight rows, their E8M0 exponents (8 bytes), then the codes four
// bytes of each row at a time (the low nibbles elements 4c…4c+3, the high
// ones 16+4c…). Per block, the codes become their values plus 16 by one
// VPSHUFB, isum = Σ (v+16)·x_q − 16·Σ x_q, as dotMXFP4's Σ v·x_q; the
// scales are 2^(e-128) made from e's bits. AVX2 widens each chunk's int16
// pair sums (at most 2·28·128 each, two chunks' worth would not fit).
func interleavedMXFP4() {
	forms(interleaved{name: "dotMXFP4r8", blockBytes: 17, prefetch: interleavedPrefetch,
		setup: func(k *ikernel) {
			k.lowNibbles()
			t := YMM()
			VMOVDQU(byteTable("mxfp4Values", func(b int) uint8 { return mxfp4Values[b%16] }), t)
			k.constants["values"] = t
			one := YMM()
			fillLanes(one, 1)
			k.constants["one"] = one
		},
		scales: e8m0Half8},
		"dotMXFP4 of eight MXFP4 rows interleaved at w (tensor.Pack) with the activation's nb blocks of quants x, scales xd and sums xs.",
		func(k *ikernel, vnni bool) (Register, Register) {
			values := k.constants["values"]
			acc := YMM()
			if vnni {
				VPXOR(acc, acc, acc)
			}
			for c := range 4 {
				lo, hi := YMM(), YMM()
				VMOVDQU(Mem{Base: k.w, Disp: 8 + 32*c}, lo)
				VPSRLW(Imm(4), lo, hi)
				VPAND(k.low, lo, lo)
				VPAND(k.low, hi, hi)
				VPSHUFB(lo, values, lo)
				VPSHUFB(hi, values, hi)
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
				VPADDW(hi, lo, lo) // at most 4·28·128: fits
				if c == 0 {
					VPMADDWD(k.ones, lo, acc)
					continue
				}
				VPMADDWD(k.ones, lo, lo)
				VPADDD(lo, acc, acc)
			}
			subSums(k, acc, 4) // − 16·Σ x_q
			return acc, nil
		})
}

// e8m0Half8 is the eight rows' scales 2^(e-128) as float32, one row per
// lane, from their exponents e at w: the bits (e-1)<<23, or where e < 2
// (a subnormal) (e+1)<<21, as engine/tensor's e8m0Half.
func e8m0Half8(k *ikernel) Register {
	one := k.constants["one"]
	e, normal, sub, two := YMM(), YMM(), YMM(), YMM()
	VPMOVZXBD(Mem{Base: k.w}, e)
	VPSUBD(one, e, normal)
	VPSLLD(Imm(23), normal, normal)
	VPADDD(one, e, sub)
	VPSLLD(Imm(21), sub, sub)
	VPADDD(one, one, two)
	VPCMPGTD(e, two, two) // 2 > e
	VPBLENDVB(two, sub, normal, normal)
	return normal
}
