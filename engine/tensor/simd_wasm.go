//go:build js && wasm && wasmlm_simd

package tensor

import "unsafe"

// With the wasmlm_simd build tag, MatVec, the activation encoders for Q8_0
// and Q8_K, DotF32Rows and AddScaledRows run the SIMD128 kernels of the
// module internal/simdgen emits (kernels.wasm) for the types it covers.
// The JS host instantiates that module on this instance's own memory and
// provides its functions as the wasmlm_simd imports below (web/simd.js does
// both); where the host has no SIMD it provides stubs and available
// returns 0, and the pure-Go kernels run. Pointers cross as offsets into
// the shared memory: nothing is copied, and the kernels compute the same
// bits as the pure-Go ones (simd_wasm_test.go and attention_test.go check
// it). A build with the tag needs a host that provides the imports: Go's
// own wasm_exec.js alone cannot instantiate it.
//
// The kernels keep no reference to their arguments, hence go:noescape.

//go:wasmimport wasmlm_simd available
func simdAvailable() int32

//go:wasmimport wasmlm_simd matvec_f32
//go:noescape
func simdMatVecF32(out, w, x unsafe.Pointer, rows, cols, stride int32)

//go:wasmimport wasmlm_simd matvec_f16
//go:noescape
func simdMatVecF16(out, w, x unsafe.Pointer, rows, cols int32)

//go:wasmimport wasmlm_simd matvec_bf16
//go:noescape
func simdMatVecBF16(out, w, x unsafe.Pointer, rows, cols int32)

//go:wasmimport wasmlm_simd matvec_q8_0
//go:noescape
func simdMatVecQ8_0(out, w, xq, xd unsafe.Pointer, rows, blocks int32)

//go:wasmimport wasmlm_simd matvec_q4_0
//go:noescape
func simdMatVecQ4_0(out, w, xq, xd, xsum unsafe.Pointer, rows, blocks int32)

//go:wasmimport wasmlm_simd matvec_q5_0
//go:noescape
func simdMatVecQ5_0(out, w, xq, xd, xsum unsafe.Pointer, rows, blocks int32)

//go:wasmimport wasmlm_simd matvec_q4_k
//go:noescape
func simdMatVecQ4K(out, w, xq, xd, xbsums unsafe.Pointer, rows, blocks int32)

//go:wasmimport wasmlm_simd matvec_q6_k
//go:noescape
func simdMatVecQ6K(out, w, xq, xd unsafe.Pointer, rows, blocks int32)

//go:wasmimport wasmlm_simd encode_q8_0
//go:noescape
func simdEncodeQ8_0(x, q, amax, sum unsafe.Pointer, blocks int32)

//go:wasmimport wasmlm_simd encode_q8_k
//go:noescape
func simdEncodeQ8K(x, q, d, bsums unsafe.Pointer, blocks int32)

//go:wasmimport wasmlm_simd add_scaled_rows_f32
//go:noescape
func simdAddScaledRowsF32(out, a, v unsafe.Pointer, rows, cols, stride int32)

// useSIMD is decided once, when the package is initialised (the host has
// instantiated the kernels by then), and never changes.
var useSIMD = simdAvailable() != 0

// SIMD reports whether matrix products run on the SIMD128 kernels.
func SIMD() bool {
	return useSIMD
}

// matVecSIMD computes MatVec's rows with a SIMD kernel and reports whether
// it did (false: no kernel for this type, or none available).
func matVecSIMD(out []float32, m *Matrix, a *activation) bool {
	if !useSIMD {
		return false
	}
	o, w := unsafe.Pointer(unsafe.SliceData(out)), unsafe.Pointer(unsafe.SliceData(m.Data))
	rows, cols := int32(m.Rows), int32(m.Cols)
	switch m.Type {
	case F32:
		simdMatVecF32(o, w, ptr(a.f), rows, cols, cols)
	case F16:
		simdMatVecF16(o, w, ptr(a.f), rows, cols)
	case BF16:
		simdMatVecBF16(o, w, ptr(a.f), rows, cols)
	case Q8_0:
		simdMatVecQ8_0(o, w, ptr(a.q), ptr(a.d), rows, cols/qk8)
	case Q4_0:
		simdMatVecQ4_0(o, w, ptr(a.q), ptr(a.d), ptr(a.sum), rows, cols/qk8)
	case Q5_0:
		simdMatVecQ5_0(o, w, ptr(a.q), ptr(a.d), ptr(a.sum), rows, cols/qk8)
	case Q4_K:
		simdMatVecQ4K(o, w, ptr(a.q), ptr(a.d), ptr(a.bsums), rows, cols/qkK)
	case Q6_K:
		simdMatVecQ6K(o, w, ptr(a.q), ptr(a.d), rows, cols/qkK)
	default:
		return false
	}
	return true
}

// simdBatch is a Workspace's memory for batched kernels: none yet.
type simdBatch struct{}

func (*simdBatch) reserve(int) {}

// matMulSIMD computes a batched product's tile (out[t·stride + r] for the
// rows of m and every encoding in acts, which are ws's batch) with SIMD
// kernels and reports whether it did: for now the matrix–vector kernel
// once per vector, the tile of rows staying in the cache between them.
func matMulSIMD(out []float32, stride int, m *Matrix, acts []activation, _ *Workspace) bool {
	if !useSIMD {
		return false
	}
	for t := range acts {
		if !matVecSIMD(out[t*stride:t*stride+m.Rows], m, &acts[t]) {
			return false
		}
	}
	return true
}

// encodeSIMD encodes x as vec with a SIMD kernel and reports whether it
// did (the same bytes as encodeQ8_0 and encodeQ8K).
func encodeSIMD(vec Type, a *activation, x []float32) bool {
	if !useSIMD {
		return false
	}
	switch vec {
	case Q8_0:
		nb := len(x) / qk8
		a.q, a.d, a.sum = a.q[:nb*qk8], a.d[:nb], a.sum[:nb]
		simdEncodeQ8_0(ptr(x), ptr(a.q), ptr(a.d), ptr(a.sum), int32(nb))
		for b, amax := range a.d { // the kernel leaves max|x| here
			a.d[b] = roundHalf(amax / 127)
		}
	case Q8_K:
		nb := len(x) / qkK
		a.q, a.d, a.bsums = a.q[:nb*qkK], a.d[:nb], a.bsums[:nb*qkK/16]
		simdEncodeQ8K(ptr(x), ptr(a.q), ptr(a.d), ptr(a.bsums), int32(nb))
	default:
		return false
	}
	return true
}

func ptr[T any](s []T) unsafe.Pointer {
	return unsafe.Pointer(unsafe.SliceData(s))
}

func dotF32RowsSIMD(out, x, rows []float32, stride int) bool {
	if !useSIMD {
		return false
	}
	simdMatVecF32(ptr(out), ptr(rows), ptr(x), int32(len(out)), int32(len(x)), int32(stride))
	return true
}

func addScaledRowsSIMD(out, a, rows []float32, stride int) bool {
	if !useSIMD {
		return false
	}
	simdAddScaledRowsF32(ptr(out), ptr(a), ptr(rows), int32(len(a)), int32(len(out)), int32(stride))
	return true
}
