//go:build !(amd64 || arm64) || purego

package tensor

// NativeSIMD reports whether native matrix products run on the AVX2
// kernels: never on this architecture or with the purego build tag.
func NativeSIMD() bool { return false }

// SetNativeSIMD does nothing here: there are no native SIMD kernels.
func SetNativeSIMD(bool) {}

func dotRows8([]float32, *Matrix, int, *activation) bool { return false }

func hasRows8(Type) bool { return false }

func packNative(*Matrix) bool { return false }

// cpuHasNativeSIMD reports false: there are no native kernels in this build.
func cpuHasNativeSIMD() bool { return false }

func interleaves(Type) bool { return false }

// nativeSIMD and nativeFast are never set here (see native_amd64.go).
// slowForm names nothing that runs.
const slowForm = "none"

var nativeSIMD, nativeFast = false, false

func dotF32RowsNative(_, _, _ []float32, _ int) bool { return false }
