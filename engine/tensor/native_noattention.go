//go:build !amd64 || purego

package tensor

// Attention's kernels (but DotF32Rows's, see native_floats.go), SwiGLU's
// and softmax's exponentials run natively on amd64 only (native_amd64.go);
// everywhere else the pure-Go loops do.

func addScaledRowsNative(_, _, _ []float32, _ int) bool { return false }

func decodeF16RowsNative([]float32, []uint16, int, int) bool { return false }

func roundF16Native(_, _ []float32) int { return 0 }

func encodeF16Native([]uint16, []float32) int { return 0 }

func swiGLUNative(_, _ []float32) int { return 0 }

func expShiftedNative([]float32, float32) int { return 0 }
