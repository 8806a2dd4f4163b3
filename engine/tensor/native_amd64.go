//go:build amd64 && !purego

package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:generate go run ../../internal/asmgen -out native_amd64.s -stubs native_stubs_amd64.go -pkg tensor -arm64 native_arm64.s

// Natively on amd64 the matrix–vector products of some types run on AVX2
// kernels (native_amd64.s, written by internal/asmgen), eight rows at a
// time, with the pure-Go kernels' bits: see internal/asmgen. They need
// AVX2 and F16C, which every x86-64 CPU with AVX2 has; without them, with
// the purego build tag, or after SetNativeSIMD(false) (the command line's
// WASMLM_SIMD=off), the pure-Go kernels run.

// nativeSIMDAvailable says whether this CPU runs the kernels.
var nativeSIMDAvailable = cpu.X86.HasAVX2 && cpu.X86.HasF16C

// nativeFast says whether the interleaved kernels (Q8_0, Q4_0, Q5_0, Q4_K,
// Q6_K and MXFP4, packed by Pack) run their fast form — here AVX-512 VNNI, on YMM
// registers — rather than their AVX2 one: where the CPU has AVX-512 VNNI
// and VL. Both give the same bits; tests and benchmarks turn it off to
// check and time the other form (slowForm) on such a CPU.
var nativeFast = nativeSIMDAvailable && cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512VL

// slowForm names the kernels' form without nativeFast, for benchmarks.
const slowForm = "avx2"

// hasRows8 reports whether dotRows8 has a kernel for t.
func hasRows8(t Type) bool {
	switch t {
	case Q8_0, Q4_0, Q5_0, Q4_K, Q6_K, MXFP4, F32, F16, BF16:
		return nativeSIMD
	}
	return false
}

// dotRows8 sets out[0:8] to the dot products of rows r..r+7 of m with a, on
// the type's eight-row kernel, and reports whether there is one. A packed
// matrix (Pack) is read in its layout; r is then a multiple of eight.
func dotRows8(out []float32, m *Matrix, r int, a *activation) bool {
	if !hasRows8(m.Type) {
		return false
	}
	if m.rows8 {
		dotInterleaved8(out, m, r, a)
		return true
	}
	if m.Type == F32 || m.Type == F16 || m.Type == BF16 {
		dotFloats8(out, m, r, a)
		return true
	}
	if m.Type == Q5_0 || m.Type == MXFP4 { // their kernels read the interleaved layout only
		dot := m.tr.dot
		for i := range 8 {
			out[i] = dot(m.Data[(r+i)*m.rowBytes:(r+i+1)*m.rowBytes], a)
		}
		return true
	}
	rb, bb := m.rowBytes, layouts[m.Type].blockBytes
	stride, second, step := rb, 4*rb, bb // the file's layout: row after row
	if m.packed {
		stride, step = bb, 4*bb // each group of four rows block by block
	}
	w, x := &m.Data[r*rb], (*int8)(unsafe.Pointer(&a.q[0]))
	switch m.Type {
	case Q8_0:
		dotQ8_0x8(&out[0], w, stride, second, step, x, &a.d[0], nil, m.Cols/qk8)
	case Q4_0:
		dotQ4_0x8(&out[0], w, stride, second, step, x, &a.d[0], &a.sum[0], m.Cols/qk8)
	case Q4_K:
		dotQ4Kx8(&out[0], w, stride, second, step, x, &a.d[0], &a.bsums[0], m.Cols/qkK)
	case Q6_K:
		dotQ6Kx8(&out[0], w, stride, second, step, x, &a.d[0], &a.bsums[0], m.Cols/qkK)
	}
	return true
}

// dotInterleaved8 is dotRows8 for a matrix in the interleaved layout
// (packRows8), r a multiple of eight.
func dotInterleaved8(out []float32, m *Matrix, r int, a *activation) {
	w, x, nb := &m.Data[r*m.rowBytes], (*int8)(unsafe.Pointer(&a.q[0])), m.Cols/qk8
	switch {
	case m.Type == Q4_K && nativeFast:
		dotQ4Kr8VNNI(&out[0], w, x, &a.d[0], &a.sum[0], m.Cols/qkK)
	case m.Type == Q4_K:
		dotQ4Kr8(&out[0], w, x, &a.d[0], &a.sum[0], m.Cols/qkK)
	case m.Type == Q5_0 && nativeFast:
		dotQ5_0r8VNNI(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case m.Type == Q5_0:
		dotQ5_0r8(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case m.Type == Q6_K && nativeFast:
		dotQ6Kr8VNNI(&out[0], w, x, &a.d[0], &a.bsums[0], m.Cols/qkK)
	case m.Type == Q6_K:
		dotQ6Kr8(&out[0], w, x, &a.d[0], &a.bsums[0], m.Cols/qkK)
	case m.Type == MXFP4 && nativeFast:
		dotMXFP4r8VNNI(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case m.Type == MXFP4:
		dotMXFP4r8(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case m.Type == Q8_0 && nativeFast:
		dotQ8_0r8VNNI(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case m.Type == Q8_0:
		dotQ8_0r8(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	case nativeFast:
		dotQ4_0r8VNNI(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	default:
		dotQ4_0r8(&out[0], w, x, &a.d[0], &a.sum[0], nb)
	}
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

// packNative reports whether Pack reorders m for the native kernels: where
// they run for its type, and its rows are whole groups of eight (so that no
// row of a packed matrix is left to a pure-Go kernel, which reads rows in
// the file's layout).
func packNative(m *Matrix) bool { return hasRows8(m.Type) && m.Rows%8 == 0 }

// The attention kernels natively (see attention.go and f16.go): AVX and
// F16C forms of DotF32Rows, AddScaledRows and DecodeF16Rows with the
// pure-Go loops' bits, where the shapes suit them; the rest in Go.

func addScaledRowsNative(out, a, rows []float32, stride int) bool {
	n := len(out) &^ 7
	if !nativeSIMD || n == 0 {
		return false
	}
	addScaledRowsF32(&out[0], &a[0], &rows[0], n, len(a), stride)
	for t, at := range a { // the last len(out) % 8 elements
		v := rows[t*stride : t*stride+len(out)]
		for i := n; i < len(out); i++ {
			out[i] += float32(at * v[i])
		}
	}
	return true
}

func decodeF16RowsNative(dst []float32, src []uint16, width, stride int) bool {
	n := width &^ 7
	if !nativeSIMD || n == 0 {
		return false
	}
	for r := range len(dst) / width {
		d, s := dst[r*width:(r+1)*width], src[r*stride:r*stride+width]
		decodeF16x8(&d[0], &s[0], n)
		DecodeF16(d[n:], s[n:])
	}
	return true
}

// roundF16Native rounds the first values of src, a multiple of 8, into
// dst on F16C (RoundF16's bits) and returns how many.
func roundF16Native(dst, src []float32) int {
	n := len(src) &^ 7
	if !nativeSIMD || n == 0 {
		return 0
	}
	roundF16x8(&dst[0], &src[0], n)
	return n
}

// encodeF16Native is roundF16Native for EncodeF16.
func encodeF16Native(dst []uint16, src []float32) int {
	n := len(src) &^ 7
	if !nativeSIMD || n == 0 {
		return 0
	}
	encodeF16x8(&dst[0], &src[0], n)
	return n
}

// swiGLUNative computes SwiGLU's first values, a multiple of 8, on the
// AVX2 kernel (the eight values it leaves, where one is out of its range,
// in Go) and returns how many.
func swiGLUNative(gate, up []float32) int {
	return byEights(len(gate),
		func(i, n int) int { return swiGLUx8(&gate[i], &up[i], n) },
		func(i int) { swiGLUGo(gate[i:i+8], up[i:i+8]) })
}

// expShiftedNative is swiGLUNative for ExpShifted.
func expShiftedNative(x []float32, shift float32) int {
	return byEights(len(x),
		func(i, n int) int { return expShiftedx8(&x[i], shift, n) },
		func(i int) { expShiftedGo(x[i:i+8], shift) })
}

// byEights runs an exponential kernel over the first n values, a multiple
// of 8: kernel(i, left) does what it can from value i on and says how
// many; the eight values it stops at go to inGo(i). It returns how many
// values it did (none without the kernels).
func byEights(n int, kernel func(i, left int) int, inGo func(i int)) int {
	end := n &^ 7
	if !nativeSIMD || end == 0 {
		return 0
	}
	for i := 0; i < end; {
		i += kernel(i, end-i)
		if i < end {
			inGo(i)
			i += 8
		}
	}
	return end
}
