//go:build arm64 && !purego

package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Natively on arm64 the matrix–vector products of Q8_0, Q4_0, Q5_0, Q4_K, Q6_K and MXFP4 (and
// of F32, F16 and BF16 rows, see native_floats.go) run on NEON kernels,
// with the dot-product extension where the CPU has it (native_arm64.s,
// written by internal/asmgen), reading the interleaved layout of the amd64
// kernels (Pack), eight rows at a time, with the pure-Go kernels' bits. The
// other types run the pure-Go kernels;
// the purego build tag or SetNativeSIMD(false) (the command line's
// WASMLM_SIMD=off) turn the kernels off.

// nativeSIMDAvailable says whether this CPU runs the kernels: every arm64
// CPU with NEON (ASIMD), which is all of them that run Go.
var nativeSIMDAvailable = cpu.ARM64.HasASIMD

// nativeFast says whether the quantized kernels run their form with the
// dot-product extension (SDOT, ARMv8.2's ASIMDDP) rather than their plain
// NEON one (SMULL and pairwise additions). Both give the same bits; tests
// and benchmarks turn it off to check and time the other (slowForm).
var nativeFast = nativeSIMDAvailable && cpu.ARM64.HasASIMDDP

// slowForm names the kernels' form without nativeFast, for benchmarks.
const slowForm = "neon"

// hasRows8 reports whether dotRows8 has a kernel for t.
func hasRows8(t Type) bool {
	switch t {
	case Q8_0, Q4_0, Q5_0, Q4_K, Q6_K, MXFP4, F32, F16, BF16:
		return nativeSIMD
	}
	return false
}

// interleaves reports whether Pack stores a matrix of type t in the
// interleaved layout of eight rows (packRows8) for the native kernels.
func interleaves(t Type) bool {
	switch t {
	case Q8_0, Q4_0, Q5_0, Q4_K, Q6_K, MXFP4:
		return nativeSIMD
	}
	return false
}

// packNative reports whether Pack reorders m for the native kernels.
func packNative(m *Matrix) bool { return interleaves(m.Type) && m.Rows%8 == 0 }

// dotRows8 sets out[0:8] to the dot products of rows r..r+7 of m with a
// and reports whether it could: on the NEON kernels for a matrix in the
// interleaved layout (r a multiple of eight), with the pure-Go kernel for
// one in the file's.
func dotRows8(out []float32, m *Matrix, r int, a *activation) bool {
	if !hasRows8(m.Type) {
		return false
	}
	if m.Type == F32 || m.Type == F16 || m.Type == BF16 {
		dotFloats8(out, m, r, a)
		return true
	}
	if !m.rows8 { // the file's layout: the pure-Go kernel
		for i := range 8 {
			out[i] = m.tr.dot(m.Data[(r+i)*m.rowBytes:(r+i+1)*m.rowBytes], a)
		}
		return true
	}
	w, x, nb := &m.Data[r*m.rowBytes], (*int8)(unsafe.Pointer(&a.q[0])), m.Cols/qk8
	switch {
	case m.Type == Q8_0 && nativeFast:
		dotQ8_0r8SDOT(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case m.Type == Q8_0:
		dotQ8_0r8NEON(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case m.Type == Q4_0 && nativeFast:
		dotQ4_0r8SDOT(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case m.Type == Q4_0:
		dotQ4_0r8NEON(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case m.Type == Q5_0 && nativeFast:
		dotQ5_0r8SDOT(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case m.Type == Q5_0:
		dotQ5_0r8NEON(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case m.Type == MXFP4 && nativeFast:
		dotMXFP4r8SDOT(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case m.Type == MXFP4:
		dotMXFP4r8NEON(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case m.Type == Q4_K && nativeFast:
		dotQ4Kr8SDOT(&out[0], w, x, &a.d[0], &a.sum[0], m.Cols/qkK)
	case m.Type == Q4_K:
		dotQ4Kr8NEON(&out[0], w, x, &a.d[0], &a.sum[0], m.Cols/qkK)
	case nativeFast:
		dotQ6Kr8SDOT(&out[0], w, x, &a.d[0], &a.bsums[0], m.Cols/qkK)
	default:
		dotQ6Kr8NEON(&out[0], w, x, &a.d[0], &a.bsums[0], m.Cols/qkK)
	}
	return true
}

// dotQ8_0r8SDOT sets out[0:8] to dotQ8_0 of eight Q8_0 rows interleaved at
// w with the activation's nb blocks of quants x and scales xd (NEON, SDOT);
// dotQ8_0r8NEON is it without SDOT. The Q4_0 and Q5_0 ones take the
// activation's sums xs too, the Q4_K ones nb super-blocks and sums of 32
// quants, the Q6_K ones super-blocks and sums of 16.
//
//go:noescape
func dotQ8_0r8SDOT(out *float32, w *byte, x *int8, xd *float32, xs *int32, nb int)

//go:noescape
func dotQ8_0r8NEON(out *float32, w *byte, x *int8, xd *float32, xs *int32, nb int)

//go:noescape
func dotQ4_0r8SDOT(out *float32, w *byte, x *int8, xd *float32, xs *int32, nb int)

//go:noescape
func dotQ4_0r8NEON(out *float32, w *byte, x *int8, xd *float32, xs *int32, nb int)

//go:noescape
func dotQ5_0r8SDOT(out *float32, w *byte, x *int8, xd *float32, xs *int32, nb int)

//go:noescape
func dotQ5_0r8NEON(out *float32, w *byte, x *int8, xd *float32, xs *int32, nb int)

//go:noescape
func dotQ4Kr8SDOT(out *float32, w *byte, x *int8, xd *float32, xs *int32, nb int)

//go:noescape
func dotQ4Kr8NEON(out *float32, w *byte, x *int8, xd *float32, xs *int32, nb int)

//go:noescape
func dotQ6Kr8SDOT(out *float32, w *byte, x *int8, xd *float32, xs *int16, nb int)

//go:noescape
func dotQ6Kr8NEON(out *float32, w *byte, x *int8, xd *float32, xs *int16, nb int)

// dotMXFP4r8SDOT sets out[0:8] to dotMXFP4 of eight MXFP4 rows
// interleaved at w with the activation's nb blocks of quants x and scales
// xd (NEON, SDOT; xs unused); dotMXFP4r8NEON is it without SDOT.
//
//go:noescape
func dotMXFP4r8SDOT(out *float32, w *byte, x *int8, xd *float32, xs *int32, nb int)

//go:noescape
func dotMXFP4r8NEON(out *float32, w *byte, x *int8, xd *float32, xs *int32, nb int)

// dotF32Rows8 sets out[t] to the four-lane dot product (DotF32's order) of
// x with the n values at rows[t·stride:] for t < count, count a multiple
// of 8 and n of 4 (NEON); dotF16Rows8 and dotBF16Rows8 are it for F16 and
// BF16 rows.
//
//go:noescape
func dotF32Rows8(out, x *float32, rows *float32, n, count, stride int)

//go:noescape
func dotF16Rows8(out, x *float32, rows *uint16, n, count, stride int)

//go:noescape
func dotBF16Rows8(out, x *float32, rows *uint16, n, count, stride int)
