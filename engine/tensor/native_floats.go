//go:build (amd64 || arm64) && !purego

package tensor

import "unsafe"

// The float kernels natively (amd64: AVX2, F16C; arm64: NEON): F32, F16
// and BF16 rows eight at a time in DotF32's four lanes, for matrix–vector
// products and attention's scores (dotF32Rows8 and the others, in
// native_amd64.s and native_arm64.s).

// dotFloats8 is dotRows8 for F32, F16 and BF16 rows (in the file's
// layout: they are not packed), with the pure-Go kernels for rows whose
// length is no multiple of 4 (the kernels' four lanes).
func dotFloats8(out []float32, m *Matrix, r int, a *activation) {
	rb := m.rowBytes
	if m.Cols%4 != 0 {
		for i := range 8 {
			out[i] = m.tr.dot(m.Data[(r+i)*rb:(r+i+1)*rb], a)
		}
		return
	}
	w := unsafe.Pointer(&m.Data[r*rb])
	switch m.Type {
	case F32:
		dotF32Rows8(&out[0], &a.f[0], (*float32)(w), m.Cols, 8, m.Cols)
	case F16:
		dotF16Rows8(&out[0], &a.f[0], (*uint16)(w), m.Cols, 8, m.Cols)
	default:
		dotBF16Rows8(&out[0], &a.f[0], (*uint16)(w), m.Cols, 8, m.Cols)
	}
}

// dotF32RowsNative is DotF32Rows on the kernel, eight rows at a time (the
// last len(out) % 8 in Go), where the rows' length is a multiple of 4.
func dotF32RowsNative(out, x, rows []float32, stride int) bool {
	n, count := len(x), len(out)&^7
	if !nativeSIMD || n%4 != 0 || n == 0 || count == 0 {
		return false
	}
	dotF32Rows8(&out[0], &x[0], &rows[0], n, count, stride)
	for t := count; t < len(out); t++ {
		out[t] = DotF32(rows[t*stride:t*stride+n], x)
	}
	return true
}
