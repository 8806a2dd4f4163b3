//go:build !(js && wasm && wasmlm_simd)

package tensor

// Without the wasmlm_simd build tag (natively, and in wasm builds for hosts
// that do not provide the SIMD kernels) no product runs the SIMD128
// kernels (simd_wasm.go); natively some run assembly kernels instead
// (native_amd64.go).

// SIMD reports whether matrix products run on the SIMD128 kernels.
func SIMD() bool {
	return false
}

func matVecSIMD([]float32, *Matrix, *activation) bool {
	return false
}

func matMulSIMD([]float32, int, *Matrix, []activation, *Workspace) bool {
	return false
}

func matVecBatchedSIMD([]float32, *Matrix, *activation, *Workspace) bool {
	return false
}

// simdBatch is empty without the SIMD kernels.
type simdBatch struct{}

func (*simdBatch) reserve(int) {}

// The attention kernels run natively where there are some (native_amd64.go).

func dotF32RowsSIMD(out, x, rows []float32, stride int) bool {
	return dotF32RowsNative(out, x, rows, stride)
}

func addScaledRowsSIMD(out, a, rows []float32, stride int) bool {
	return addScaledRowsNative(out, a, rows, stride)
}

func decodeF16RowsSIMD(dst []float32, src []uint16, width, stride int) bool {
	return decodeF16RowsNative(dst, src, width, stride)
}

func encodeSIMD(Type, *activation, []float32) bool {
	return false
}

func softmaxSIMD([]float32, int, float32) bool {
	return false
}

func swiGLUSIMD(gate, up []float32) int {
	return swiGLUNative(gate, up)
}

func geluSIMD([]float32, *[1 << 16]float32) int {
	return 0
}

func roundF16SIMD(dst, src []float32) int {
	return roundF16Native(dst, src)
}

func encodeF16SIMD(dst []uint16, src []float32) int {
	return encodeF16Native(dst, src)
}

func addSIMD(_, _ []float32) bool {
	return false
}

func layerNormSIMD(_, _, _ []float32, _ float32) bool {
	return false
}
