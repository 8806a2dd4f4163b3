package simdgen

import (
	wg "github.com/wasmlm/wasmlm/internal/wasmgen"
)

// The module imports the Go instance's memory as MemoryModule.MemoryName.
const (
	MemoryModule = "go"
	MemoryName   = "mem"
)

// The exported kernels. Every parameter is an i32: pointers are byte
// offsets into the Go instance's memory, counts are element or block counts.
const (
	// MatVecF32 (out, w, x, rows, cols, stride): out[r] = DotF32(row r, x)
	// where row r is the cols float32 at w + 4·r·stride.
	MatVecF32 = "matvec_f32"
	// MatVecF16 (out, w, x, rows, cols): x is float32 already rounded to F16.
	MatVecF16 = "matvec_f16"
	// MatVecBF16 (out, w, x, rows, cols): x is float32 already rounded to BF16.
	MatVecBF16 = "matvec_bf16"
	// MatVecQ8_0 (out, w, xq, xd, rows, blocks): x encoded as Q8_0.
	MatVecQ8_0 = "matvec_q8_0"
	// MatVecQ4_0 (out, w, xq, xd, xsum, rows, blocks): x encoded as Q8_0.
	MatVecQ4_0 = "matvec_q4_0"
	// MatVecQ5_0 (out, w, xq, xd, xsum, rows, blocks): x encoded as Q8_0.
	MatVecQ5_0 = "matvec_q5_0"
	// MatVecMXFP4 (out, w, xq, xd, rows, blocks): x encoded as Q8_0.
	MatVecMXFP4 = "matvec_mxfp4"
	// MatVecQ4_K (out, w, xq, xd, xbsums, scratch, rows, blocks): x
	// encoded as Q8_K; scratch is MatVecScratchBytes the kernel writes.
	MatVecQ4_K = "matvec_q4_k"
	// MatVecQ6_K (out, w, xq, xd, rows, blocks): x encoded as Q8_K.
	MatVecQ6_K = "matvec_q6_k"
	// MatVecQ5_K (out, w, xq, xd, xbsums, scratch, rows, blocks): as
	// MatVecQ4_K.
	MatVecQ5_K = "matvec_q5_k"
	// MatVecQ4_1 and MatVecQ5_1 (out, w, xq, xd, xs, rows, blocks): x
	// encoded as Q8_1, xs its s (a float32 per block).
	MatVecQ4_1 = "matvec_q4_1"
	MatVecQ5_1 = "matvec_q5_1"
	// MatMulQ8_0, MatMulQ4_0, MatMulQ5_0, MatMulQ4_K and MatMulQ6_K (out,
	// w, rows, blocks, batch): the matrix–vector kernel of the type for
	// every vector of a batch (see emitMatMul and the Batch* fields).
	MatMulQ8_0 = "matmul_q8_0"
	MatMulQ4_0 = "matmul_q4_0"
	MatMulQ5_0 = "matmul_q5_0"
	MatMulQ4_K = "matmul_q4_k"
	MatMulQ6_K = "matmul_q6_k"
	// MatMulMXFP4 (out, w, rows, blocks, batch): the same for MXFP4.
	MatMulMXFP4 = "matmul_mxfp4"
	// MatMulQ2_K and MatMulQ3_K: the same, though these types have no
	// matrix–vector kernel (see matmul_q2_k.go).
	MatMulQ2_K = "matmul_q2_k"
	MatMulQ3_K = "matmul_q3_k"
	// MatMulQ4_1, MatMulQ5_1 and MatMulQ5_K (out, w, rows, blocks, batch):
	// the same for the types with a min (matmul_mins.go); Q4_1 and Q5_1
	// take Q8_1 vectors, their s where Q8_K's block sums go.
	MatMulQ4_1 = "matmul_q4_1"
	MatMulQ5_1 = "matmul_q5_1"
	MatMulQ5_K = "matmul_q5_k"
	// MatMulF32, MatMulF16 and MatMulBF16 (out, w, rows, cols, batch):
	// the same for the float types, the batch's Q being the vectors'
	// float32 activations (see emitMatMulFloat).
	MatMulF32  = "matmul_f32"
	MatMulF16  = "matmul_f16"
	MatMulBF16 = "matmul_bf16"
	// AddScaledRowsF32 (out, a, v, rows, cols, stride): for t = 0..rows-1 in
	// order, out[i] += a[t]·v[t·stride+i] for i < cols, each product rounded.
	AddScaledRowsF32 = "add_scaled_rows_f32"
	// DecodeF16Rows (dst, src, rows, cols, stride): row r, the cols F16
	// values at src + 2·r·stride, decoded exactly to the float32 at
	// dst + 4·r·cols (attention over an F16 KV cache decodes chunks of it
	// so, then runs the F32 kernels over them).
	DecodeF16Rows = "decode_f16_rows"
	// EncodeQ8_0 (x, q, d, sum, blocks): x quantized to Q8_0 (see
	// emitEncodeQ8_0).
	EncodeQ8_0 = "encode_q8_0"
	// EncodeQ8K (x, q, d, bsums, blocks): x quantized to Q8_K.
	EncodeQ8K = "encode_q8_k"
	// SoftmaxF32 (x, n, rows, scale, table): each of the rows of n ≥ 1
	// float32 from x on times the float32 whose bits are scale, then its
	// softmax, with fmath.Exp's table (32 float64) at table (see
	// emitSoftmaxF32).
	SoftmaxF32 = "softmax_f32"
	// SwiGLUF32 (gate, up, n, table): gate[i] = SiLU(gate[i])·up[i] for
	// the n float32 at gate (a multiple of 4), with fmath.Exp's table (32
	// float64) at table (see emitSwiGLUF32).
	SwiGLUF32 = "swiglu_f32"
	// GELUF16 (x, n, table): GELU of the n float32 at x (a multiple of 4)
	// by the 65536 float32 at table, indexed by x's F16 bits (see
	// emitGELUF16).
	GELUF16 = "gelu_f16"
	// RoundF16 (dst, src, n): the n float32 at src (a multiple of 4)
	// rounded to F16, as float32, to dst.
	RoundF16 = "round_f16"
	// EncodeF16 (dst, src, n): the F16 bits of the n float32 at src (a
	// multiple of 4) to the uint16 at dst.
	EncodeF16 = "encode_f16"
	// AddF32 (dst, src, n): dst[i] += src[i] for the n float32.
	AddF32 = "add_f32"
	// LayerNormF32 (x, weight, bias, n, eps): LayerNorm of the n ≥ 1
	// float32 at x in place, eps a float32's bits (see emitLayerNormF32).
	LayerNormF32 = "layer_norm_f32"
)

// Module returns the bytes of the kernel module.
func Module() ([]byte, error) { return build(false) }

// RelaxedModule returns the bytes of the kernel module for engines with
// relaxed SIMD: the same exports computing the same bits, some of them
// with relaxed SIMD's integer dot product (see the package comment).
func RelaxedModule() ([]byte, error) { return build(true) }

func build(relaxed bool) ([]byte, error) {
	m := wg.NewModule()
	m.ImportMemory(MemoryModule, MemoryName, 0)
	emitMatVecF32(m)
	emitMatVecF16(m)
	emitMatVecBF16(m)
	emitMatVecQ8_0(m, relaxed)
	emitMatVecQ4_0(m, relaxed)
	emitMatVecQ5_0(m, relaxed)
	emitMatVecQ4K(m, relaxed)
	emitMatVecQ6K(m, relaxed)
	emitMatVecQ5K(m, relaxed)
	emitMatVecQ4_1(m, relaxed)
	emitMatVecQ5_1(m, relaxed)
	emitMatMulQ8_0(m)
	emitMatMulQ4_0(m, relaxed)
	emitMatMulQ5_0(m, relaxed)
	emitMatMulQ4K(m, relaxed)
	emitMatMulQ6K(m, relaxed)
	emitMatMulQ2K(m)
	emitMatMulQ3K(m)
	emitMatMulQ4_1(m)
	emitMatMulQ5_1(m)
	emitMatMulQ5K(m)
	emitMatMulF32(m)
	emitMatVecMXFP4(m)
	emitMatMulMXFP4(m)
	emitMatMulF16(m)
	emitMatMulBF16(m)
	emitAddScaledRowsF32(m)
	emitDecodeF16Rows(m)
	emitEncodeQ8_0(m)
	emitEncodeQ8K(m)
	emitSoftmaxF32(m)
	emitSwiGLUF32(m)
	emitGELUF16(m)
	emitRoundF16(m)
	emitEncodeF16(m)
	emitAddF32(m)
	emitLayerNormF32(m)
	return m.Bytes()
}

// kernel wraps a function body with the loops and lane manipulations the
// kernels share.
type kernel struct {
	*wg.Func
	// invariant holds the constants hoistConstants read into locals,
	// which constant returns.
	invariant map[[16]uint8]wg.Local
}

// hoistConstants reads each of vs from a mutable global of m
// (wg.GlobalGet) into a local, which constant then returns for it: V8
// makes a v128.const anew at each use, three instructions on x64 even
// inside a loop, where a value it cannot fold, read before the loop, stays
// in a register (Chromium 156: TinyLlama's shape in Q4_0 decoded 3–4%
// faster with its nibble mask and F16 constants so). Call it before the
// loops; k's copies made after it share the locals.
func (k *kernel) hoistConstants(m *wg.Module, vs ...[16]uint8) {
	if k.invariant == nil {
		k.invariant = map[[16]uint8]wg.Local{}
	}
	for _, v := range vs {
		l := k.Local(wg.V128)
		k.Set(l, wg.GlobalGet(m.GlobalV128(v)))
		k.invariant[v] = l
	}
}

// constant is v: the local hoistConstants read it into, else a
// v128.const.
func (k kernel) constant(v [16]uint8) wg.Expr {
	if l, ok := k.invariant[v]; ok {
		return get(l)
	}
	return wg.I8x16Const(v)
}

// bytes8 and bytes32 are the bytes of a splat of b or x.
func bytes8(b uint8) (v [16]uint8) {
	for i := range v {
		v[i] = b
	}
	return v
}

func bytes32(x uint32) (v [16]uint8) {
	for i := range v {
		v[i] = byte(x >> (8 * (i % 4)))
	}
	return v
}

func get(l wg.Local) wg.Expr { return wg.Get(l) }

func i32(v int32) wg.Expr { return wg.I32Const(v) }

// forRange emits `for i = from; i < to; i += step { body }` (signed
// comparison; to is evaluated every iteration).
func (k kernel) forRange(i wg.Local, from, to wg.Expr, step int32, body func()) {
	k.Set(i, from)
	k.Block(func() {
		k.Loop(func() {
			k.BrIf(1, wg.I32GeS(get(i), to))
			body()
			k.Set(i, wg.I32Add(get(i), i32(step)))
			k.Br(0)
		})
	})
}

// i32Splat and the other byte-pattern constants.
func i8x16Splat(b uint8) wg.Expr {
	return wg.I8x16Const(bytes8(b))
}

func i16x8Splat(x uint16) wg.Expr {
	return wg.I16x8Const([8]uint16{x, x, x, x, x, x, x, x})
}

func i32x4Splat(x uint32) wg.Expr {
	return wg.I32x4Const([4]uint32{x, x, x, x})
}

func f32x4Zero() wg.Expr {
	return wg.V128Const([16]byte{})
}

// lane32 broadcasts 32-bit lane j of v to all four lanes.
func lane32(v wg.Expr, j int) wg.Expr {
	var s [16]uint8
	for i := range s {
		s[i] = uint8(4*j + i%4)
	}
	return wg.I8x16Shuffle(v, v, s)
}

// pairs32 shuffles the 32-bit lanes of a and b (lanes 4..7 are b's):
// result lane i is lane idx[i].
func pairs32(a, b wg.Expr, idx [4]int) wg.Expr {
	var s [16]uint8
	for i, j := range idx {
		for k := range 4 {
			s[4*i+k] = uint8(4*j + k)
		}
	}
	return wg.I8x16Shuffle(a, b, s)
}

// transposeSum sets dst to the vector whose lane r is
// (v[r][0] + v[r][1]) + (v[r][2] + v[r][3]), with add the lane-wise addition
// (i32x4.add or f32x4.add): for floats exactly the pure-Go
// (s0+s1)+(s2+s3) of row r, lane by lane.
func (k kernel) transposeSum(dst wg.Local, add func(a, b wg.Expr) wg.Expr, v [4]wg.Local) {
	// pairSum(a, b) = [a0+a1, a2+a3, b0+b1, b2+b3]
	pairSum := func(a, b wg.Local) wg.Expr {
		return add(pairs32(get(a), get(b), [4]int{0, 2, 4, 6}), pairs32(get(a), get(b), [4]int{1, 3, 5, 7}))
	}
	t01, t23 := k.Local(wg.V128), k.Local(wg.V128)
	k.Set(t01, pairSum(v[0], v[1]))
	k.Set(t23, pairSum(v[2], v[3]))
	k.Set(dst, add(pairs32(get(t01), get(t23), [4]int{0, 2, 4, 6}), pairs32(get(t01), get(t23), [4]int{1, 3, 5, 7})))
}

// transposeSum16 is transposeSum of four vectors of int16 sums, each lane
// at most 7680 in magnitude: the pair sums add int16 lanes (each then adds
// four of the first: at most 30720, no overflow), and a final extadd
// widens them, lane r row r's total. Three instructions fewer than
// widening each vector and adding in int32.
func (k kernel) transposeSum16(dst wg.Local, v [4]wg.Local) {
	k.transposeSum(dst, wg.I16x8Add, v)
	k.Set(dst, wg.I32x4ExtaddPairwiseI16x8S(get(dst)))
}

// groupRows sets p[j] to where rows r..r+3's blocks start and step to the
// bytes from one of a row's blocks to the next: row r+j at w + (r+j)·rb
// and step blockBytes (the last group repeating the last row where fewer
// than four remain), or, where packed is not 0, the group's rows
// interleaved block by block (engine/tensor's Pack): block b of row r+j at
// w + r·rb + (t·b + j)·blockBytes, t = min(4, rows - r), and step
// t·blockBytes. The group's bytes are the same either way. With blockBytes
// 0 (kernels of floats) the rows are never packed.
func (k kernel) groupRows(p [4]wg.Local, step, w, r, rows, rb, packed wg.Local, blockBytes int32) {
	plain := func() {
		k.rowStarts(p, w, r, rows, rb)
		k.Set(step, i32(blockBytes))
	}
	if blockBytes == 0 {
		plain()
		return
	}
	k.IfElse(wg.I32Eq(get(packed), i32(0)), plain, func() {
		// step = t·blockBytes, t = min(4, rows-r); p[j] = group + min(j, t-1)·blockBytes.
		left := wg.I32Sub(get(rows), get(r))
		k.Set(step, wg.I32Mul(wg.Select(i32(4), left, wg.I32GeS(left, i32(4))), i32(blockBytes)))
		k.Set(p[0], wg.I32Add(get(w), wg.I32Mul(get(r), get(rb))))
		for j := 1; j < 4; j++ {
			off := i32(int32(j) * blockBytes)
			lastOff := wg.I32Sub(get(step), i32(blockBytes))
			k.Set(p[j], wg.I32Add(get(p[0]), wg.Select(off, lastOff, wg.I32LtS(off, get(step)))))
		}
	})
}

// rowStarts sets p[j] to w + (r+j)·rb, where row r+j of rows of rb bytes
// starts, the last row's start for rows past the last.
func (k kernel) rowStarts(p [4]wg.Local, w, r, rows, rb wg.Local) {
	for j := range p {
		row := wg.I32Add(get(r), i32(int32(j)))
		if j > 0 {
			last := wg.I32Sub(get(rows), i32(1))
			row = wg.Select(row, last, wg.I32LtS(row, get(rows)))
		}
		k.Set(p[j], wg.I32Add(get(w), wg.I32Mul(row, get(rb))))
	}
}

// matvec emits a matrix–vector kernel exported as name with parameters
// (out, w, act..., rows, n) (nAct activation pointers), and a final stride
// parameter if strided, and the row loop they all share: rows go in groups
// of four, row r+j at p[j] = w + (r+j)·rowBytes (the last group repeats the
// last row where fewer than four remain), and group computes the four
// results into one f32x4 local (lane j: row r+j), which is stored to
// out[r..r+3] (only the lanes of existing rows). rowBytes gets n, or the
// stride when strided.
//
// A kernel of blocks (blockBytes > 0) also takes a final packed parameter:
// when it is not 0 the matrix is packed (see groupRows), and p[j] is row
// j's first block in the group. Either way group advances p[j] by step
// from one block to the next, which matvec sets.
func matvec(m *wg.Module, name string, nAct int, strided bool, blockBytes int32, rowBytes func(n wg.Expr) wg.Expr,
	group func(k kernel, act []wg.Local, n wg.Local, p [4]wg.Local, step, res wg.Local)) {
	nParams := 4 + nAct
	if strided || blockBytes > 0 {
		nParams++
	}
	params := make([]wg.ValType, nParams)
	for i := range params {
		params[i] = wg.I32
	}
	k := kernel{Func: m.Func(name, params, nil)}
	out, w := k.Param(0), k.Param(1)
	act := make([]wg.Local, nAct)
	for i := range act {
		act[i] = k.Param(2 + i)
	}
	rows, n := k.Param(2+nAct), k.Param(3+nAct)
	rb, r, step := k.Local(wg.I32), k.Local(wg.I32), k.Local(wg.I32)
	var p [4]wg.Local
	for j := range p {
		p[j] = k.Local(wg.I32)
	}
	res := k.Local(wg.V128)
	if strided {
		k.Set(rb, rowBytes(get(k.Param(4+nAct))))
	} else {
		k.Set(rb, rowBytes(get(n)))
	}
	k.forRange(r, i32(0), get(rows), 4, func() {
		if blockBytes > 0 {
			k.groupRows(p, step, w, r, rows, rb, k.Param(4+nAct), blockBytes)
		} else {
			k.groupRows(p, step, w, r, rows, rb, 0, 0)
		}
		group(k, act, n, p, step, res)
		dst := wg.I32Add(get(out), wg.I32Shl(get(r), i32(2)))
		k.IfElse(wg.I32GeS(wg.I32Sub(get(rows), get(r)), i32(4)), func() {
			k.V128Store(dst, 0, get(res))
		}, func() {
			k.V128Store32Lane(dst, 0, get(res), 0)
			for j := 1; j < 3; j++ {
				k.If(wg.I32LtS(wg.I32Add(get(r), i32(int32(j))), get(rows)), func() {
					k.V128Store32Lane(dst, uint32(4*j), get(res), uint8(j))
				})
			}
		})
	})
}
