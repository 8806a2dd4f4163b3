//go:build !(js && wasm && wasmlm_simd)

package tensor

// Without the wasmlm_simd build tag (natively, and in wasm builds for hosts
// that do not provide the SIMD kernels) every product runs the pure-Go
// kernels; see simd_wasm.go.

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

func dotF32RowsSIMD(_, _, _ []float32, _ int) bool {
	return false
}

func addScaledRowsSIMD(_, _, _ []float32, _ int) bool {
	return false
}

func decodeF16RowsSIMD([]float32, []uint16, int, int) bool {
	return false
}

func encodeSIMD(Type, *activation, []float32) bool {
	return false
}
