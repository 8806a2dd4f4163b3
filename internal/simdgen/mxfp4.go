package simdgen

import wg "github.com/wasmlm/wasmlm/internal/wasmgen"

// MXFP4 (gpt-oss's experts): blocks of 32 4-bit E2M1 codes under one E8M0
// exponent, a byte e, then the codes as Q4_0 packs its nibbles (element j
// low in byte j, j+16 high). The codes become their doubled values
// (kvaluesMXFP4, −12…12) by one i8x16.swizzle, a table lookup of sixteen
// bytes; the rest is Q8_0's kernel: int8 values times the activation's
// int8 quants, exact, and per block the pure-Go
//
//	sum += float32(float32(e8m0Half(e)·xd[b]) · float32(isum))
//
// with e8m0Half(e) = 2^(e-128) made from e's bits (e8m0Half). No relaxed
// form: neither operand lies in i7's range (both signed).

const mxfp4BlockBytes = 17

// kvaluesMXFP4 is engine/tensor's table: the E2M1 values doubled, by code.
var kvaluesMXFP4 = [16]uint8{0, 1, 2, 3, 4, 6, 8, 12, 0, 0xff, 0xfe, 0xfd, 0xfc, 0xfa, 0xf8, 0xf4}

// mxfp4Values sets lo and hi to the doubled values of the 32 codes of the
// 16 bytes at p+1 as int8: elements 0-15 in lo, 16-31 in hi.
func (k kernel) mxfp4Values(p, lo, hi wg.Local) {
	table := wg.I8x16Const(kvaluesMXFP4)
	k.Set(lo, wg.V128Load(get(p), 1))
	k.Set(hi, wg.I8x16Swizzle(table, wg.I8x16ShrU(get(lo), i32(4))))
	k.Set(lo, wg.I8x16Swizzle(table, wg.V128And(get(lo), i8x16Splat(15))))
}

// e8m0Half is the four rows' block scales 2^(e-128) as f32x4, from their
// bytes e at offset 0 of p[0..3]: the float32 bits (e-1)<<23, or for
// e < 2, where 2^(e-128) is subnormal, (e+1)<<21. h is scratch.
func (k kernel) e8m0Half(p [4]wg.Local, h wg.Local) wg.Expr {
	v := f32x4Zero()
	for j := range p {
		v = wg.V128Load16Lane(get(p[j]), 0, v, uint8(2*j)) // e and the first codes' byte
	}
	k.Set(h, wg.V128And(v, i32x4Splat(0xff)))
	normal := wg.I32x4Shl(wg.I32x4Sub(get(h), i32x4Splat(1)), i32(23))
	subnormal := wg.I32x4Shl(wg.I32x4Add(get(h), i32x4Splat(1)), i32(21))
	return wg.V128Bitselect(subnormal, normal, wg.I32x4LtS(get(h), i32x4Splat(2)))
}

// emitMatVecMXFP4 emits ggml_vec_dot_mxfp4_q8_0 as dotMXFP4 computes it.
func emitMatVecMXFP4(m *wg.Module) {
	emitQ8KernelScaled(m, MatVecMXFP4, mxfp4BlockBytes, 0, xInOrder, func(k kernel, p wg.Local, x [4]wg.Local, t [2]wg.Local) wg.Expr {
		k.mxfp4Values(p, t[0], t[1])
		lo := wg.I32x4Add(
			wg.I32x4DotI16x8S(wg.I16x8ExtendLowI8x16S(get(t[0])), get(x[0])),
			wg.I32x4DotI16x8S(wg.I16x8ExtendHighI8x16S(get(t[0])), get(x[1])))
		hi := wg.I32x4Add(
			wg.I32x4DotI16x8S(wg.I16x8ExtendLowI8x16S(get(t[1])), get(x[2])),
			wg.I32x4DotI16x8S(wg.I16x8ExtendHighI8x16S(get(t[1])), get(x[3])))
		return wg.I32x4Add(lo, hi)
	}, kernel.e8m0Half, false, false)
}

// emitMatMulMXFP4 emits matmul_mxfp4: the doubled values decoded as int16
// in element order, the scales 2^(e-128) as the extras.
func emitMatMulMXFP4(m *wg.Module) {
	emitMatMul(m, matmulType{name: MatMulMXFP4, blockBytes: mxfp4BlockBytes, chunks: 1, extraBytes: 16,
		decode: func(k kernel, p [4]wg.Local, sp wg.Local) {
			lo, hi := k.Local(wg.V128), k.Local(wg.V128)
			for j := range p {
				k.mxfp4Values(p[j], lo, hi)
				off := uint32(64 * j)
				k.V128Store(get(sp), off, wg.I16x8ExtendLowI8x16S(get(lo)))
				k.V128Store(get(sp), off+16, wg.I16x8ExtendHighI8x16S(get(lo)))
				k.V128Store(get(sp), off+32, wg.I16x8ExtendLowI8x16S(get(hi)))
				k.V128Store(get(sp), off+48, wg.I16x8ExtendHighI8x16S(get(hi)))
			}
			h := k.Local(wg.V128)
			k.V128Store(get(sp), 256, k.e8m0Half(p, h))
		},
		finish: q8Finish,
	})
}
