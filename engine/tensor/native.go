//go:build (amd64 || arm64) && !purego

package tensor

// nativeSIMD says whether the native kernels run (native_amd64.go,
// native_arm64.go: each sets nativeSIMDAvailable from its CPU's features).
var nativeSIMD = nativeSIMDAvailable

// cpuHasNativeSIMD reports whether this CPU could run the native kernels
// (whether or not they are on).
func cpuHasNativeSIMD() bool { return nativeSIMDAvailable }

// NativeSIMD reports whether native matrix products run on the assembly
// kernels (AVX2 on amd64, NEON on arm64; for the types that have one).
func NativeSIMD() bool { return nativeSIMD }

// SetNativeSIMD turns the native SIMD kernels on (where the CPU has them)
// or off, for the whole process: the results are the same bits either
// way, only the speed differs. Call it before any product runs.
func SetNativeSIMD(on bool) { nativeSIMD = on && nativeSIMDAvailable }
