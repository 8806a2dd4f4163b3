//go:build js && wasm && wasmlm_simd

package tensor

import (
	"math"
	"unsafe"

	"github.com/wasmlm/wasmlm/internal/fmath"
)

// With the wasmlm_simd build tag, MatVec, MatMul(s), the activation encoders
// for Q8_0 and Q8_K, the products of attention (DotF32Rows, AddScaledRows),
// the F16 decoder DecodeF16Rows, RoundF16, EncodeF16, Softmax(Rows),
// GELUByTable, Add and LayerNorm run the SIMD128 kernels of the module
// internal/simdgen emits (kernels.wasm) for the types it covers: for F32,
// F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K and MXFP4, a
// matrix–vector kernel and a batched one (matmul_*), which decodes each
// block of weights once for all the vectors of a batched product; for Q2_K
// and Q3_K a batched one only (a single vector runs it, matVecBatchedSIMD). The JS host
// instantiates that module on this instance's own memory and provides its
// functions as the wasmlm_simd imports below (web/simd.js does both); where
// the host has no SIMD it provides stubs and available returns 0, and the
// pure-Go kernels run. Where the engine has relaxed SIMD the host may provide
// kernels-relaxed.wasm's kernels instead: the same exports and the same bits,
// faster. Pointers cross as offsets into the shared memory: nothing is
// copied, and the kernels compute the same bits as the pure-Go ones
// (simd_wasm_test.go, batch_test.go and attention_test.go check it). A build
// with the tag needs a host that provides the imports: Go's own wasm_exec.js
// alone cannot instantiate it.
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
func simdMatVecQ8_0(out, w, xq, xd unsafe.Pointer, rows, blocks, packed int32)

//go:wasmimport wasmlm_simd matvec_q4_0
//go:noescape
func simdMatVecQ4_0(out, w, xq, xd, xsum unsafe.Pointer, rows, blocks, packed int32)

//go:wasmimport wasmlm_simd matvec_q5_0
//go:noescape
func simdMatVecQ5_0(out, w, xq, xd, xsum unsafe.Pointer, rows, blocks, packed int32)

//go:wasmimport wasmlm_simd matvec_q4_k
//go:noescape
func simdMatVecQ4K(out, w, xq, xd, xbsums, scratch unsafe.Pointer, rows, blocks, packed int32)

//go:wasmimport wasmlm_simd matvec_q6_k
//go:noescape
func simdMatVecQ6K(out, w, xq, xd unsafe.Pointer, rows, blocks, packed int32)

//go:wasmimport wasmlm_simd matvec_q5_k
//go:noescape
func simdMatVecQ5K(out, w, xq, xd, xbsums, scratch unsafe.Pointer, rows, blocks, packed int32)

//go:wasmimport wasmlm_simd matvec_q4_1
//go:noescape
func simdMatVecQ4_1(out, w, xq, xd, xs unsafe.Pointer, rows, blocks, packed int32)

//go:wasmimport wasmlm_simd matvec_q5_1
//go:noescape
func simdMatVecQ5_1(out, w, xq, xd, xs unsafe.Pointer, rows, blocks, packed int32)

//go:wasmimport wasmlm_simd matvec_mxfp4
//go:noescape
func simdMatVecMXFP4(out, w, xq, xd unsafe.Pointer, rows, blocks, packed int32)

//go:wasmimport wasmlm_simd matmul_mxfp4
//go:noescape
func simdMatMulMXFP4(out, w unsafe.Pointer, rows, blocks int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd matmul_q8_0
//go:noescape
func simdMatMulQ8_0(out, w unsafe.Pointer, rows, blocks int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd matmul_q4_0
//go:noescape
func simdMatMulQ4_0(out, w unsafe.Pointer, rows, blocks int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd matmul_q5_0
//go:noescape
func simdMatMulQ5_0(out, w unsafe.Pointer, rows, blocks int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd matmul_q4_k
//go:noescape
func simdMatMulQ4K(out, w unsafe.Pointer, rows, blocks int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd matmul_q6_k
//go:noescape
func simdMatMulQ6K(out, w unsafe.Pointer, rows, blocks int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd matmul_q2_k
//go:noescape
func simdMatMulQ2K(out, w unsafe.Pointer, rows, blocks int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd matmul_q3_k
//go:noescape
func simdMatMulQ3K(out, w unsafe.Pointer, rows, blocks int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd matmul_q4_1
//go:noescape
func simdMatMulQ4_1(out, w unsafe.Pointer, rows, blocks int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd matmul_q5_1
//go:noescape
func simdMatMulQ5_1(out, w unsafe.Pointer, rows, blocks int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd matmul_q5_k
//go:noescape
func simdMatMulQ5K(out, w unsafe.Pointer, rows, blocks int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd matmul_f32
//go:noescape
func simdMatMulF32(out, w unsafe.Pointer, rows, cols int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd matmul_f16
//go:noescape
func simdMatMulF16(out, w unsafe.Pointer, rows, cols int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd matmul_bf16
//go:noescape
func simdMatMulBF16(out, w unsafe.Pointer, rows, cols int32, batch unsafe.Pointer)

//go:wasmimport wasmlm_simd encode_q8_0
//go:noescape
func simdEncodeQ8_0(x, q, d, sum unsafe.Pointer, blocks int32)

//go:wasmimport wasmlm_simd encode_q8_k
//go:noescape
func simdEncodeQ8K(x, q, d, bsums unsafe.Pointer, blocks int32)

//go:wasmimport wasmlm_simd add_scaled_rows_f32
//go:noescape
func simdAddScaledRowsF32(out, a, v unsafe.Pointer, rows, cols, stride int32)

//go:wasmimport wasmlm_simd decode_f16_rows
//go:noescape
func simdDecodeF16Rows(dst, src unsafe.Pointer, rows, cols, stride int32)

//go:wasmimport wasmlm_simd softmax_f32
//go:noescape
func simdSoftmaxF32(x unsafe.Pointer, n, rows, scale int32, table unsafe.Pointer)

//go:wasmimport wasmlm_simd swiglu_f32
//go:noescape
func simdSwiGLUF32(gate, up unsafe.Pointer, n int32, table unsafe.Pointer)

//go:wasmimport wasmlm_simd gelu_f16
//go:noescape
func simdGELUF16(x unsafe.Pointer, n int32, table unsafe.Pointer)

//go:wasmimport wasmlm_simd round_f16
//go:noescape
func simdRoundF16(dst, src unsafe.Pointer, n int32)

//go:wasmimport wasmlm_simd encode_f16
//go:noescape
func simdEncodeF16(dst, src unsafe.Pointer, n int32)

//go:wasmimport wasmlm_simd add_f32
//go:noescape
func simdAddF32(dst, src unsafe.Pointer, n int32)

//go:wasmimport wasmlm_simd layer_norm_f32
//go:noescape
func simdLayerNormF32(x, weight, bias unsafe.Pointer, n, eps int32)

// useSIMD is decided once, when the package is initialised (the host has
// instantiated the kernels by then), and never changes.
var useSIMD = simdAvailable() != 0

// SIMD reports whether matrix products run on the SIMD128 kernels.
func SIMD() bool {
	return useSIMD
}

// matVecSIMD computes MatVec's rows with a SIMD kernel and reports whether
// it did (false: no kernel for this type, none available, an F16 block
// scale of m not finite: finiteScales, or a Q8_0 quant -128 in m or a:
// minQuants).
func matVecSIMD(out []float32, m *Matrix, a *activation) bool {
	if !useSIMD {
		return false
	}
	if !m.finiteScales() { // the kernels take F16 block scales as finite
		return false
	}
	if m.Type == Q8_0 && (m.minQuants() || minQuant8(a.q[:m.Cols])) { // and Q8_0's quants in -127..127
		return false
	}
	o, w := unsafe.Pointer(unsafe.SliceData(out)), unsafe.Pointer(unsafe.SliceData(m.Data))
	rows, cols := int32(m.Rows), int32(m.Cols)
	var packed int32
	if m.packed {
		packed = 1
	}
	switch m.Type {
	case F32:
		simdMatVecF32(o, w, ptr(a.f), rows, cols, cols)
	case F16:
		simdMatVecF16(o, w, ptr(a.f), rows, cols)
	case BF16:
		simdMatVecBF16(o, w, ptr(a.f), rows, cols)
	case Q8_0:
		simdMatVecQ8_0(o, w, ptr(a.q), ptr(a.d), rows, cols/qk8, packed)
	case Q4_0:
		simdMatVecQ4_0(o, w, ptr(a.q), ptr(a.d), ptr(a.sum), rows, cols/qk8, packed)
	case Q5_0:
		simdMatVecQ5_0(o, w, ptr(a.q), ptr(a.d), ptr(a.sum), rows, cols/qk8, packed)
	case Q4_K:
		simdMatVecQ4K(o, w, ptr(a.q), ptr(a.d), ptr(a.bsums), unsafe.Pointer(&matVecScratch), rows, cols/qkK, packed)
	case Q6_K:
		simdMatVecQ6K(o, w, ptr(a.q), ptr(a.d), rows, cols/qkK, packed)
	case Q5_K:
		simdMatVecQ5K(o, w, ptr(a.q), ptr(a.d), ptr(a.bsums), unsafe.Pointer(&matVecScratch), rows, cols/qkK, packed)
	case Q4_1:
		simdMatVecQ4_1(o, w, ptr(a.q), ptr(a.d), ptr(a.s), rows, cols/qk8, packed)
	case Q5_1:
		simdMatVecQ5_1(o, w, ptr(a.q), ptr(a.d), ptr(a.s), rows, cols/qk8, packed)
	case MXFP4:
		simdMatVecMXFP4(o, w, ptr(a.q), ptr(a.d), rows, cols/qk8, packed)
	default:
		return false
	}
	return true
}

// matVecScratchBytes is simdgen.MatVecScratchBytes: the memory the Q4_K
// and Q5_K matrix–vector kernels write their scales to.
const matVecScratchBytes = 128

// matVecScratch is that memory. Go runs one thread in WebAssembly, so one
// kernel at a time uses it.
var matVecScratch [matVecScratchBytes / 8]uint64

// batchDesc is the batch descriptor of the batched kernels (matmul_*),
// field by field as internal/simdgen's Batch* offsets: addresses as
// offsets into the memory the kernels share (below 4 GiB in wasm), strides
// and sizes in bytes. The pointers in it are to memory the Workspace holds.
type batchDesc struct {
	tokens, outStride     int32
	q, d, bsums           int32 // vector 0's encoding (bsums: Q8_K's, Q8_1's s, or Q8_0's Σq per block)
	qStride, dStride      int32 // from vector t's q to t+1's; d and bsums
	scratch, scratchBytes int32 // the decoded weights of a chunk of blocks
	acc                   int32 // 64 bytes per vector
	packed                int32 // 1: the matrix is packed (Pack)
}

// matMulScratchBytes is the scratch for decoded weights: at least
// simdgen.MatMulMinScratch (one Q4_K super-block of four rows, 2256 bytes),
// and small enough to stay in the L1 cache beside a vector's quants.
const matMulScratchBytes = 12 << 10

// simdBatch is a Workspace's memory for the batched kernels, made by
// Reserve.
type simdBatch struct {
	desc    batchDesc
	scratch []uint64 // matMulScratchBytes (uint64: 8-byte aligned)
	acc     []uint64 // 64 bytes per vector
}

func (b *simdBatch) reserve(n int) {
	if !useSIMD {
		return
	}
	if b.scratch == nil {
		b.scratch = make([]uint64, matMulScratchBytes/8)
	}
	if len(b.acc) < 8*n {
		b.acc = make([]uint64, 8*n)
	}
}

// matMulMinVectors is the fewest vectors for which the batched kernels
// beat the matrix–vector kernel once per vector: with one they are no
// faster (decoding into scratch costs about as much as it saves), with two
// 1.1 to 1.6 times as fast, F16 1.4 (measured on 2048×768 matrices). But
// BF16, whose matrix–vector kernel has next to nothing to decode, gains
// only from eight vectors on (0.7 times as fast with two, as fast with
// four, 1.2 times with eight).
const matMulMinVectors, matMulMinVectorsBF16 = 2, 8

// matMulSIMD computes a batched product's tile (out[t·stride + r] for the
// rows of m and every encoding in acts, which are ws's batch) with SIMD
// kernels and reports whether it did: the type's batched kernel if it has
// one, each block of weights decoded once for all the vectors, else the
// matrix–vector kernel once per vector, the tile of rows staying in the
// cache between them.
func matMulSIMD(out []float32, stride int, m *Matrix, acts []activation, ws *Workspace) bool {
	if !useSIMD {
		return false
	}
	kernel, blocks := matMulKernel(m)
	if kernel == nil || len(acts) < matMulMinVectors || m.Type == BF16 && len(acts) < matMulMinVectorsBF16 {
		for t := range acts {
			if !matVecSIMD(out[t*stride:t*stride+m.Rows], m, &acts[t]) && !matVecBatchedSIMD(out[t*stride:t*stride+m.Rows], m, &acts[t], ws) {
				return false
			}
		}
		return true
	}
	runMatMul(kernel, blocks, out, stride, m, acts, ws)
	return true
}

// matVecBatchedSIMD computes MatVec's rows with the type's batched SIMD
// kernel and one vector, and reports whether it did: the way of the types
// that have a batched kernel but no matrix–vector one (Q2_K, Q3_K), for
// which callers try it after matVecSIMD. Each block is
// decoded into scratch for one product only, but that is still several
// times the pure-Go kernels' speed. ws's scratch is made the first time.
func matVecBatchedSIMD(out []float32, m *Matrix, a *activation, ws *Workspace) bool {
	if !useSIMD {
		return false
	}
	kernel, blocks := matMulKernel(m)
	if kernel == nil {
		return false
	}
	ws.simd.reserve(1)
	runMatMul(kernel, blocks, out, m.Rows, m, unsafe.Slice(a, 1), ws)
	return true
}

type matMulKernelFunc = func(out, w unsafe.Pointer, rows, blocks int32, batch unsafe.Pointer)

// matMulKernel is the batched kernel for m's type, if any, and the blocks
// (for floats, elements) of a row it takes.
func matMulKernel(m *Matrix) (kernel matMulKernelFunc, blocks int) {
	blocks = m.Cols / qk8
	switch m.Type {
	case F32:
		kernel, blocks = simdMatMulF32, m.Cols
	case F16:
		kernel, blocks = simdMatMulF16, m.Cols
	case BF16:
		kernel, blocks = simdMatMulBF16, m.Cols
	case Q8_0:
		kernel = simdMatMulQ8_0
	case Q4_0:
		kernel = simdMatMulQ4_0
	case Q4_1:
		kernel = simdMatMulQ4_1
	case Q5_0:
		kernel = simdMatMulQ5_0
	case Q5_1:
		kernel = simdMatMulQ5_1
	case Q4_K:
		kernel, blocks = simdMatMulQ4K, m.Cols/qkK
	case Q5_K:
		kernel, blocks = simdMatMulQ5K, m.Cols/qkK
	case Q6_K:
		kernel, blocks = simdMatMulQ6K, m.Cols/qkK
	case Q2_K:
		kernel, blocks = simdMatMulQ2K, m.Cols/qkK
	case Q3_K:
		kernel, blocks = simdMatMulQ3K, m.Cols/qkK
	case MXFP4:
		kernel = simdMatMulMXFP4
	}
	return kernel, blocks
}

// runMatMul runs a batched kernel on the encodings acts: ws's batch,
// equally spaced in common arrays (see Reserve), or for F32 the vectors
// themselves, one after the other; or a single encoding.
func runMatMul(kernel matMulKernelFunc, blocks int, out []float32, stride int, m *Matrix, acts []activation, ws *Workspace) {
	b := &ws.simd
	b.desc = batchDesc{
		tokens: int32(len(acts)), outStride: int32(4 * stride),
		q: addr(acts[0].q), d: addr(acts[0].d), bsums: addr(acts[0].bsums),
		scratch: addr(b.scratch), scratchBytes: int32(8 * len(b.scratch)),
		acc: addr(b.acc),
	}
	if len(acts) > 1 {
		b.desc.qStride, b.desc.dStride = addr(acts[1].q)-addr(acts[0].q), addr(acts[1].d)-addr(acts[0].d)
	}
	if m.packed {
		b.desc.packed = 1
	}
	if m.tr.vec == Q8_0 { // the relaxed Q4_0 kernel reads the block sums where Q8_K's go
		b.desc.bsums = addr(acts[0].sum)
	}
	if m.Type == F32 || m.Type == F16 || m.Type == BF16 { // float32 vectors
		b.desc.q, b.desc.qStride = addr(acts[0].f), 0
		if len(acts) > 1 {
			b.desc.qStride = addr(acts[1].f) - addr(acts[0].f)
		}
	}
	if m.tr.vec == Q8_1 { // s where Q8_K's block sums go, spaced as d
		b.desc.bsums = addr(acts[0].s)
	}
	kernel(ptr(out), ptr(m.Data), int32(m.Rows), int32(blocks), unsafe.Pointer(&b.desc))
}

// addr is the address of s's first element, as the kernels take it.
func addr[T any](s []T) int32 {
	return int32(uintptr(ptr(s)))
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

func decodeF16RowsSIMD(dst []float32, src []uint16, width, stride int) bool {
	if !useSIMD {
		return false
	}
	simdDecodeF16Rows(ptr(dst), ptr(src), int32(len(dst)/width), int32(width), int32(stride))
	return true
}

// expTable is fmath.Exp64's table, where the softmax kernel reads it.
var expTable = fmath.Exp2Table()

// softmaxSIMD computes SoftmaxRows on its kernel (x holds whole rows) and
// reports whether it did.
func softmaxSIMD(x []float32, width int, scale float32) bool {
	if !useSIMD {
		return false
	}
	simdSoftmaxF32(ptr(x), int32(width), int32(len(x)/width), int32(math.Float32bits(scale)), unsafe.Pointer(&expTable))
	return true
}

// swiGLUSIMD computes SwiGLU's first values, a multiple of 4, on its
// kernel and returns how many.
func swiGLUSIMD(gate, up []float32) int {
	n := len(gate) &^ 3
	if !useSIMD || n == 0 {
		return 0
	}
	simdSwiGLUF32(ptr(gate), ptr(up), int32(n), unsafe.Pointer(&expTable))
	return n
}

// geluSIMD computes GELUByTable's first values, a multiple of 4, on its
// kernel and returns how many.
func geluSIMD(x []float32, table *[1 << 16]float32) int {
	n := len(x) &^ 3
	if !useSIMD || n == 0 {
		return 0
	}
	simdGELUF16(ptr(x), int32(n), unsafe.Pointer(table))
	return n
}

// roundF16SIMD computes RoundF16's first values, a multiple of 4, on its
// kernel and returns how many.
func roundF16SIMD(dst, src []float32) int {
	n := len(src) &^ 3
	if !useSIMD || n == 0 {
		return 0
	}
	simdRoundF16(ptr(dst), ptr(src), int32(n))
	return n
}

// encodeF16SIMD is roundF16SIMD for EncodeF16.
func encodeF16SIMD(dst []uint16, src []float32) int {
	n := len(src) &^ 3
	if !useSIMD || n == 0 {
		return 0
	}
	simdEncodeF16(ptr(dst), ptr(src), int32(n))
	return n
}

// addSIMDMin is the shortest Add worth a kernel call (the call crosses
// into JavaScript and back).
const addSIMDMin = 32

// addSIMD computes Add on its kernel and reports whether it did.
func addSIMD(dst, src []float32) bool {
	if !useSIMD || len(dst) < addSIMDMin {
		return false
	}
	simdAddF32(ptr(dst), ptr(src), int32(len(dst)))
	return true
}

// layerNormSIMD computes LayerNorm on its kernel and reports whether it did.
func layerNormSIMD(x, weight, bias []float32, eps float32) bool {
	if !useSIMD {
		return false
	}
	simdLayerNormF32(ptr(x), ptr(weight), ptr(bias), int32(len(x)), int32(math.Float32bits(eps)))
	return true
}
