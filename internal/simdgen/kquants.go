package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// Kernels whose activation is Q8_K: per super-block of 256, int8 quants xq,
// a float32 scale xd and (for Q4_K) int16 sums xbsums of each 16 quants.
// The integer parts are exact (order free); the float part of each super-
// block is the pure-Go expression, four rows in the lanes of one f32x4.

// MatVecScratchBytes is the scratch of the Q4_K and Q5_K matrix–vector
// kernels: each super-block's scales of four rows, which their chunk loop
// reads back splat (v128.load16_splat, v128.load32_splat), where keeping
// them in locals and splatting them by shuffles took four v128 registers
// more, and V8 spilled (Chromium 156, 2048×768 Q4_K in the caches: relaxed
// 7.4 → 9.1 GB/s, plain 5.4 → 6.3).
const MatVecScratchBytes = 128

const (
	qkK           = 256
	q4KBlockBytes = 144
	q6KBlockBytes = 210
)

// emitQ8KKernel emits the super-block loop of a kernel with parameters
// (out, w, xq, xd, [xbsums, scratch,] rows, blocks): superBlock emits the
// work of one super-block for the four rows p (qx: its activation quants,
// bs: its block sums, scratch: MatVecScratchBytes the kernel may use) and
// leaves the f32x4 to add to the sum in res.
func emitQ8KKernel(m *wg.Module, name string, blockBytes int32, withBsums bool,
	superBlock func(k kernel, p [4]wg.Local, qx, dx, bs, scratch wg.Local) wg.Expr) {
	nAct := 2
	if withBsums {
		nAct = 4
	}
	rowBytes := func(n wg.Expr) wg.Expr { return wg.I32Mul(n, i32(blockBytes)) }
	matvec(m, name, nAct, false, blockBytes, rowBytes, func(k kernel, act []wg.Local, n wg.Local, p [4]wg.Local, step, res wg.Local) {
		b, qx, dx, bs, scratch := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
		if withBsums {
			k.hoistConstants(m, nibbleMask) // Q4_K's and Q5_K's chunk loop
		}
		k.Set(res, f32x4Zero())
		k.Set(qx, get(act[0]))
		k.Set(dx, get(act[1]))
		if withBsums {
			k.Set(bs, get(act[2]))
			k.Set(scratch, get(act[3]))
		}
		k.forRange(b, i32(0), get(n), 1, func() {
			k.Set(res, wg.F32x4Add(get(res), superBlock(k, p, qx, dx, bs, scratch)))
			for j := range p {
				k.Set(p[j], wg.I32Add(get(p[j]), get(step)))
			}
			k.Set(qx, wg.I32Add(get(qx), i32(qkK)))
			k.Set(dx, wg.I32Add(get(dx), i32(4)))
			k.Set(bs, wg.I32Add(get(bs), i32(2*qkK/16)))
		})
	})
}

// extendX sets x[0..1] to the 16 activation quants at qx+offset,
// sign-extended to int16.
func (k kernel) extendX(x []wg.Local, qx wg.Local, offset uint32, tmp wg.Local) {
	k.Set(tmp, wg.V128Load(get(qx), offset))
	k.Set(x[0], wg.I16x8ExtendLowI8x16S(get(tmp)))
	k.Set(x[1], wg.I16x8ExtendHighI8x16S(get(tmp)))
}

// dot16 is the i32x4 of partial sums of Σ q·x over 16 int8 quants q (a
// v128) and 16 activations x[0..1] (int16).
func dot16(q wg.Local, x []wg.Local) wg.Expr {
	return wg.I32x4Add(
		wg.I32x4DotI16x8S(wg.I16x8ExtendLowI8x16S(get(q)), get(x[0])),
		wg.I32x4DotI16x8S(wg.I16x8ExtendHighI8x16S(get(q)), get(x[1])))
}

// rotateBytes is v with byte i+n moved to byte i (bytes wrapping around).
func rotateBytes(v wg.Local, n int) wg.Expr {
	var s [16]uint8
	for i := range s {
		s[i] = uint8((i + n) % 16)
	}
	return wg.I8x16Shuffle(get(v), get(v), s)
}
