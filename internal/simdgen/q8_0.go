package simdgen

import (
	"math/bits"

	wg "github.com/wasmlm/wasmlm/internal/wasmgen"
)

// Kernels whose activation is Q8_0: per block of 32, int8 quants xq and a
// float32 scale xd (and their sums xsum). Both weight formats here start a
// block with its fp16 scale d and take an exact integer dot product of the
// block; the float part is the pure-Go
//
//	sum += float32(float32(d·xd[b]) · float32(isum))
//
// block after block, which four rows do at once in the lanes of one f32x4.

const (
	q8_0BlockBytes = 34
	q4_0BlockBytes = 18
	q5_0BlockBytes = 22
)

// emitMatVecQ8_0 emits ggml_vec_dot_q8_0_q8_0 as dotQ8_0 computes it.
func emitMatVecQ8_0(m *wg.Module, relaxed bool) {
	if relaxed {
		emitQ8Kernel(m, MatVecQ8_0, q8_0BlockBytes, 0, xSignAbs, func(k kernel, p wg.Local, x [4]wg.Local, t [2]wg.Local) wg.Expr {
			k.Set(t[0], wg.V128Load(get(p), 2))
			k.Set(t[1], wg.V128Load(get(p), 18))
			w0 := wg.I8x16Sub(wg.V128Xor(get(t[0]), get(x[2])), get(x[2]))
			w1 := wg.I8x16Sub(wg.V128Xor(get(t[1]), get(x[3])), get(x[3]))
			return wg.I32x4Add(
				wg.I32x4ExtaddPairwiseI16x8S(wg.I16x8RelaxedDotI8x16I7x16S(w0, get(x[0]))),
				wg.I32x4ExtaddPairwiseI16x8S(wg.I16x8RelaxedDotI8x16I7x16S(w1, get(x[1]))))
		}, false)
		return
	}
	emitQ8Kernel(m, MatVecQ8_0, q8_0BlockBytes, 0, xInOrder, func(k kernel, p wg.Local, x [4]wg.Local, t [2]wg.Local) wg.Expr {
		// Quants w[0..31] at p+2, int8 × int8 summed in pairs into int32;
		// x[0..3] are the activations 0-7, 8-15, 16-23, 24-31.
		k.Set(t[0], wg.V128Load(get(p), 2))
		k.Set(t[1], wg.V128Load(get(p), 18))
		lo := wg.I32x4Add(
			wg.I32x4DotI16x8S(wg.I16x8ExtendLowI8x16S(get(t[0])), get(x[0])),
			wg.I32x4DotI16x8S(wg.I16x8ExtendHighI8x16S(get(t[0])), get(x[1])))
		hi := wg.I32x4Add(
			wg.I32x4DotI16x8S(wg.I16x8ExtendLowI8x16S(get(t[1])), get(x[2])),
			wg.I32x4DotI16x8S(wg.I16x8ExtendHighI8x16S(get(t[1])), get(x[3])))
		return wg.I32x4Add(lo, hi)
	}, false)
}

// emitMatVecQ4_0 emits ggml_vec_dot_q4_0_q8_0 as dotQ4_0 computes it:
// Σ(q-8)·x as Σq·x - 8·Σx. With relaxed SIMD, the nibbles stay bytes
// (0..15, in i7's range) and i16x8.relaxed_dot multiplies them with the
// activation bytes as loaded, sixteen products in pairs per instruction.
func emitMatVecQ4_0(m *wg.Module, relaxed bool) {
	if relaxed {
		emitQ8Kernel(m, MatVecQ4_0, q4_0BlockBytes, 8, xBytes, func(k kernel, p wg.Local, x [4]wg.Local, t [2]wg.Local) wg.Expr {
			k.Set(t[0], wg.V128Load(get(p), 2))
			return nibbleSums16(k, t[0], x)
		}, true)
		return
	}
	emitQ8Kernel(m, MatVecQ4_0, q4_0BlockBytes, 8, xEvenOdd, func(k kernel, p wg.Local, x [4]wg.Local, t [2]wg.Local) wg.Expr {
		k.Set(t[0], wg.V128Load(get(p), 2))
		return nibbleDot(t[0], x)
	}, false)
}

// nibbleDotRelaxed is nibbleDot with relaxed SIMD for 5-bit quants: the
// 32 low nibbles of w as bytes (nibbleQuants) with high[0..1] or-ed into
// elements 0-15 and 16-31, times the activation bytes x[0] (elements
// 0-15) and x[1] (16-31). Each int16 lane of a relaxed dot is two
// products of at most 31·128: the pair sums of both halves added still
// fit in int16.
func nibbleDotRelaxed(k kernel, w wg.Local, x [4]wg.Local, high []wg.Expr) wg.Expr {
	q := nibbleQuants(k, w)
	for i := range q {
		q[i] = wg.V128Or(q[i], high[i])
	}
	return wg.I32x4ExtaddPairwiseI16x8S(nibblePairs(q, x))
}

// nibbleQuants is the 32 4-bit quants of w as bytes: elements 0-15 (the
// low nibble of byte j is element j) and 16-31 (the high nibbles).
func nibbleQuants(k kernel, w wg.Local) [2]wg.Expr {
	mask := k.constant(nibbleMask)
	return [2]wg.Expr{wg.V128And(get(w), mask), wg.V128And(wg.I16x8ShrU(get(w), i32(4)), mask)}
}

// nibblePairs is the int16 sums of two relaxed dots: the products of the
// quants q[0] (elements 0-15) and q[1] (16-31) with the activation bytes
// x[0] and x[1], four in each lane.
func nibblePairs(q [2]wg.Expr, x [4]wg.Local) wg.Expr {
	return wg.I16x8Add(
		wg.I16x8RelaxedDotI8x16I7x16S(get(x[0]), q[0]),
		wg.I16x8RelaxedDotI8x16I7x16S(get(x[1]), q[1]))
}

// nibbleSums16 is the relaxed dot of 4-bit quants (no fifth bits) left as
// the int16 sums, each lane four products of at most 15·128 (7680), for a
// kernel that adds them up with transposeSum16.
func nibbleSums16(k kernel, w wg.Local, x [4]wg.Local) wg.Expr {
	return nibblePairs(nibbleQuants(k, w), x)
}

// nibbleMask is the low nibble of every byte.
var nibbleMask = bytes8(15)

// emitMatVecQ5_0 emits ggml_vec_dot_q5_0_q8_0 as dotQ5_0 computes it:
// Σ(q-16)·x as Σq·x - 16·Σx, q the nibble plus 16 times bit j of qh.
func emitMatVecQ5_0(m *wg.Module, relaxed bool) {
	emitQ8Kernel(m, MatVecQ5_0, q5_0BlockBytes, 16, fiveBitLayout(relaxed), fiveBitDot(relaxed, 2, 6), false)
}

// fiveBitLayout is the activation layout of fiveBitDot (and of nibbleDot
// and nibbleDotRelaxed).
func fiveBitLayout(relaxed bool) xLayout {
	if relaxed {
		return xBytes
	}
	return xEvenOdd
}

// fiveBitDot is the block dot of the 5-bit quants of Q5_0 and Q5_1, their
// fifth bits qh (bit e: element e's) at offset qh of the block and their
// low bits, as Q4_0's, at qs. The quants (0..31) are made as bytes, the
// fifth bits picked per byte (fifthBits). With relaxed SIMD
// nibbleDotRelaxed multiplies those bytes with the activation's; else they
// are read as int16 lanes of two elements, the even one the lane's low
// byte and the odd one its high byte, for the even and odd activations.
// (Splatting qh's halves to int16 lanes and testing a bit per lane took
// 1.4 times as long: more operations, and more constants.)
func fiveBitDot(relaxed bool, qh, qs uint32) func(k kernel, p wg.Local, x [4]wg.Local, t [2]wg.Local) wg.Expr {
	return func(k kernel, p wg.Local, x [4]wg.Local, t [2]wg.Local) wg.Expr {
		k.Set(t[0], wg.V128Load32Splat(get(p), qh)) // qh in every lane
		k.Set(t[1], wg.V128Load(get(p), qs))
		if relaxed {
			return nibbleDotRelaxed(k, t[1], x, []wg.Expr{fifthBits(t[0], 0), fifthBits(t[0], 2)})
		}
		lo := k.Local(wg.V128)
		k.Set(lo, wg.V128Or(wg.V128And(get(t[1]), i8x16Splat(15)), fifthBits(t[0], 0)))
		k.Set(t[1], wg.V128Or(wg.V128And(wg.I16x8ShrU(get(t[1]), i32(4)), i8x16Splat(15)), fifthBits(t[0], 2)))
		low := i16x8Splat(0xff)
		return wg.I32x4Add(
			wg.I32x4Add(wg.I32x4DotI16x8S(wg.V128And(get(lo), low), get(x[0])), wg.I32x4DotI16x8S(wg.I16x8ShrU(get(lo), i32(8)), get(x[1]))),
			wg.I32x4Add(wg.I32x4DotI16x8S(wg.V128And(get(t[1]), low), get(x[2])), wg.I32x4DotI16x8S(wg.I16x8ShrU(get(t[1]), i32(8)), get(x[3]))))
	}
}

// fifthBits is 16 in byte e where bit 8·first+e of the 32 bits of qh
// (splat in every lane) is set, else 0: the fifth bits of elements
// 16·(first/2)..+15 of a Q5 block, picked per byte (byte first + e/8 of qh,
// by i8x16.shuffle) and tested against a byte mask (i8x16.eq).
func fifthBits(qh wg.Local, first uint8) wg.Expr {
	var bits, pick [16]uint8
	for i := range bits {
		bits[i] = 1 << (i % 8)
		pick[i] = first + uint8(i/8)
	}
	mask := wg.I8x16Const(bits)
	b := wg.V128And(wg.I8x16Shuffle(get(qh), get(qh), pick), mask)
	return wg.V128And(wg.I8x16Eq(b, mask), i8x16Splat(16))
}

// nibbleDot is Σ q·x over a block of 32 4-bit quants, 16 bytes in w,
// element j in the low nibble of byte j, j+16 in the high one. Read as
// int16 lanes of two bytes, the nibbles of the even byte are lane&15 and
// lane>>4&15, of the odd byte lane>>8&15 and lane>>12, so x[0..3] are the
// activations 0-15 even, 0-15 odd, 16-31 even, 16-31 odd.
func nibbleDot(w wg.Local, x [4]wg.Local) wg.Expr {
	mask := i16x8Splat(15)
	q := [4]wg.Expr{
		wg.V128And(get(w), mask),
		wg.V128And(wg.I16x8ShrU(get(w), i32(8)), mask),
		wg.V128And(wg.I16x8ShrU(get(w), i32(4)), mask),
		wg.I16x8ShrU(get(w), i32(12)),
	}
	return wg.I32x4Add(
		wg.I32x4Add(wg.I32x4DotI16x8S(q[0], get(x[0])), wg.I32x4DotI16x8S(q[1], get(x[1]))),
		wg.I32x4Add(wg.I32x4DotI16x8S(q[2], get(x[2])), wg.I32x4DotI16x8S(q[3], get(x[3]))))
}

// xLayout is how emitQ8Kernel gives blockDot a block's 32 activation
// quants.
type xLayout int

const (
	xInOrder xLayout = iota // int16: elements 0-7, 8-15, 16-23, 24-31
	xEvenOdd                // int16: 0-15 even, 0-15 odd, 16-31 even, 16-31 odd
	xBytes                  // int8 as stored: 0-15, 16-31 (x[2], x[3] unused)
	xSignAbs                // |x| bytes 0-15, 16-31, then x < 0 (all ones) 0-15, 16-31
)

// emitQ8Kernel emits a kernel with parameters (out, w, xq, xd, rows,
// blocks), or for a nibble format (offset 8 or 16) (out, w, xq, xd, xsum,
// rows, blocks). blockDot returns the integer dot product of the block at p
// with the activation block as an i32x4 of partial sums; it gets the 32
// activation quants in x as layout says, and then offset·xsum[b] is taken
// from the sums (the quants' offset). t is scratch; the returned
// expression is emitted after blockDot returns, so a scratch local it
// reads must not be set again before. With sums16 blockDot returns int16
// sums instead, each lane at most 7680 in magnitude (nibbleSums16), which
// transposeSum16 adds up with fewer instructions.
func emitQ8Kernel(m *wg.Module, name string, blockBytes, offset int32, layout xLayout,
	blockDot func(k kernel, p wg.Local, x [4]wg.Local, t [2]wg.Local) wg.Expr, sums16 bool) {
	emitQ8KernelScaled(m, name, blockBytes, offset, layout, blockDot, f16Scales, false, sums16)
}

// f16Scales is the four rows' block scales, the fp16 at offset 0 of each
// block p[j], as f32x4; finite ones (f16ToF32Finite).
func f16Scales(k kernel, p [4]wg.Local, h wg.Local) wg.Expr {
	k.Set(h, gatherHalf(p, 0))
	return f16ToF32Finite(k, h)
}

// emitQ8KernelScaled is emitQ8Kernel for a weight format whose block scale
// is not an fp16 at offset 0: weightScale returns the four rows' block
// scales as f32x4 from the blocks at p[0..3] (h is scratch, which it may
// set before it returns).
//
// With mins (Q4_1, Q5_1: x = d·q + m, the fp16 m at offset 2 of a block,
// the activation Q8_1) the third activation pointer is Q8_1's s (a
// float32 per block) and the float part is the pure-Go
// sum += float32(float32(d·xd[b])·float32(isum)) + float32(m·s[b]);
// offset is then 0.
func emitQ8KernelScaled(m *wg.Module, name string, blockBytes, offset int32, layout xLayout,
	blockDot func(k kernel, p wg.Local, x [4]wg.Local, t [2]wg.Local) wg.Expr,
	weightScale func(k kernel, p [4]wg.Local, h wg.Local) wg.Expr, mins, sums16 bool) {
	rowBytes := func(n wg.Expr) wg.Expr { return wg.I32Mul(n, i32(blockBytes)) }
	nibbles := offset != 0
	nAct := 2
	if nibbles || mins {
		nAct = 3
	}
	matvec(m, name, nAct, false, blockBytes, rowBytes, func(k kernel, act []wg.Local, n wg.Local, p [4]wg.Local, step, res wg.Local) {
		b, qx, dx, sx := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
		var x, s [4]wg.Local
		for j := range 4 {
			x[j], s[j] = k.Local(wg.V128), k.Local(wg.V128)
		}
		t := [2]wg.Local{k.Local(wg.V128), k.Local(wg.V128)}
		isum, h, xv := k.Local(wg.V128), k.Local(wg.V128), k.Local(wg.V128)
		k.hoistConstants(m, nibbleMask, f16FiniteMask, f16FiniteScale)
		k.Set(res, f32x4Zero())
		k.Set(qx, get(act[0]))
		k.Set(dx, get(act[1]))
		if nAct == 3 {
			k.Set(sx, get(act[2]))
		}
		k.forRange(b, i32(0), get(n), 1, func() {
			for half := range 2 {
				if layout == xBytes {
					k.Set(x[half], wg.V128Load(get(qx), uint32(16*half)))
					continue
				}
				if layout == xSignAbs {
					k.Set(xv, wg.V128Load(get(qx), uint32(16*half)))
					k.Set(x[half], wg.I8x16Abs(get(xv)))
					k.Set(x[2+half], wg.I8x16LtS(get(xv), f32x4Zero()))
					continue
				}
				k.Set(xv, wg.V128Load(get(qx), uint32(16*half)))
				if layout == xEvenOdd {
					k.Set(x[2*half], wg.I16x8ShrS(wg.I16x8Shl(get(xv), i32(8)), i32(8)))
					k.Set(x[2*half+1], wg.I16x8ShrS(get(xv), i32(8)))
				} else {
					k.Set(x[2*half], wg.I16x8ExtendLowI8x16S(get(xv)))
					k.Set(x[2*half+1], wg.I16x8ExtendHighI8x16S(get(xv)))
				}
			}
			for j := range p {
				k.Set(s[j], blockDot(k, p[j], x, t))
			}
			if sums16 {
				k.transposeSum16(isum, s)
			} else {
				k.transposeSum(isum, wg.I32x4Add, s)
			}
			if nibbles {
				// offset·xsum[b], the offset 8 or 16 a shift (a multiply is
				// slow on x86).
				k.Set(isum, wg.I32x4Sub(get(isum), wg.I32x4Shl(wg.V128Load32Splat(get(sx), 0), i32(int32(bits.TrailingZeros32(uint32(offset)))))))
				k.Set(sx, wg.I32Add(get(sx), i32(4)))
			}
			scale := wg.F32x4Mul(weightScale(k, p, h), wg.V128Load32Splat(get(dx), 0))
			add := wg.F32x4Mul(scale, wg.F32x4ConvertI32x4S(get(isum)))
			if mins {
				k.Set(xv, add) // the scaled sum, before h is set again
				k.Set(h, gatherHalf(p, 2))
				add = wg.F32x4Add(get(xv), wg.F32x4Mul(f16ToF32Finite(k, h), wg.V128Load32Splat(get(sx), 0)))
			}
			k.Set(res, wg.F32x4Add(get(res), add))
			if mins {
				k.Set(sx, wg.I32Add(get(sx), i32(4)))
			}
			for j := range p {
				k.Set(p[j], wg.I32Add(get(p[j]), get(step)))
			}
			k.Set(qx, wg.I32Add(get(qx), i32(32)))
			k.Set(dx, wg.I32Add(get(dx), i32(4)))
		})
	})
}

// gatherHalf loads the uint16 at offset of each row p[j] into the high half
// of 32-bit lane j (the low half zero), for f16ToF32.
func gatherHalf(p [4]wg.Local, offset uint32) wg.Expr {
	v := f32x4Zero()
	for j := range p {
		v = wg.V128Load16Lane(get(p[j]), offset, v, uint8(2*j+1))
	}
	return v
}
