package tensor

import (
	"fmt"
	"math"
	"unsafe"
)

// Matrix is a (Rows, Cols) weight matrix stored row-major in Data, each row
// encoded as Type. Data is a view into the model bytes, never a copy (but see
// NewMatrix for misaligned float data). The products take Data as
// unchanging once one has read it (see finiteScales).
type Matrix struct {
	Type       Type
	Rows, Cols int
	Data       []byte // Rows * RowBytes(Type, Cols) bytes
	rowBytes   int
	tr         *traits
	packed     bool        // Data in a packed layout (Pack)
	rows8      bool        // that layout is the native kernels' interleaved one (packRows8)
	scales     *scaleCheck // whether its F16 block scales are finite (finiteScales), shared with its views
}

// NewMatrix returns a matrix view over data, checking that data holds exactly
// rows rows of cols elements of type t. Float types whose data is not aligned
// for direct loads are copied once into aligned memory; every other type is
// used in place.
func NewMatrix(t Type, rows, cols int, data []byte) (*Matrix, error) {
	tr, err := lookup(t)
	if err != nil {
		return nil, err
	}
	if rows <= 0 {
		return nil, fmt.Errorf("%w: %d rows", ErrShape, rows)
	}
	rb, err := RowBytes(t, cols)
	if err != nil {
		return nil, err
	}
	if rows > math.MaxInt/rb || rows*rb != len(data) {
		return nil, fmt.Errorf("%w: %d×%d %v needs %d bytes per row, have %d bytes", ErrShape, rows, cols, t, rb, len(data))
	}
	if align := elementAlign(t); align > 1 && uintptr(unsafe.Pointer(unsafe.SliceData(data)))%align != 0 {
		aligned := make([]float64, (len(data)+7)/8) // float64 backing: 8-byte aligned
		buf := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(aligned))), len(data))
		copy(buf, data)
		data = buf
	}
	m := &Matrix{Type: t, Rows: rows, Cols: cols, Data: data, rowBytes: rb, tr: tr}
	if f16Scales[t] != nil {
		m.scales = &scaleCheck{data: data}
	}
	return m, nil
}

// elementAlign is the alignment a type's kernels need to load elements directly.
func elementAlign(t Type) uintptr {
	switch t {
	case F32:
		return 4
	case F16, BF16:
		return 2
	}
	return 1
}

// RowData is the stored bytes of row r: a view into Data, or for a packed
// matrix (Pack), whose rows are not contiguous, a copy (AppendRow).
func (m *Matrix) RowData(r int) []byte {
	if m.packed {
		return m.AppendRow(nil, r)
	}
	return m.Data[r*m.rowBytes : (r+1)*m.rowBytes]
}

// Slice is a view of rows [lo, hi) of m: the same bytes, nothing copied.
// A packed matrix (Pack) slices only along whole groups of its layout: lo
// a multiple of PackedGroupRows, and hi one too or m's last row (the view
// of one expert of a stack of experts, each of whole groups of rows).
func (m *Matrix) Slice(lo, hi int) (*Matrix, error) {
	if lo < 0 || lo >= hi || hi > m.Rows {
		return nil, fmt.Errorf("%w: rows [%d, %d) of a %d-row matrix", ErrShape, lo, hi, m.Rows)
	}
	if lo == 0 && hi == m.Rows {
		return m, nil
	}
	if m.packed && (lo%PackedGroupRows != 0 || (hi%PackedGroupRows != 0 && hi != m.Rows)) {
		return nil, errPacked(fmt.Sprintf("rows [%d, %d), not whole groups of %d rows,", lo, hi, PackedGroupRows))
	}
	return &Matrix{Type: m.Type, Rows: hi - lo, Cols: m.Cols, Data: m.Data[lo*m.rowBytes : hi*m.rowBytes : hi*m.rowBytes], rowBytes: m.rowBytes, tr: m.tr,
		packed: m.packed, rows8: m.rows8, scales: m.scales}, nil
}

// Row decodes row r into dst, which must hold Cols elements (an embedding
// lookup). For a packed matrix it decodes block by block.
func (m *Matrix) Row(dst []float32, r int) {
	if !m.packed {
		m.tr.dequantize(dst[:m.Cols], m.RowData(r))
		return
	}
	l := layouts[m.Type]
	if m.rows8 {
		m.rowInterleaved(dst, r)
		return
	}
	for b := range m.rowBytes / l.blockBytes {
		m.tr.dequantize(dst[b*l.blockSize:(b+1)*l.blockSize], m.appendBlock(nil, r, b))
	}
}

// Workspace holds the scratch memory matrix products need: the activation
// vector re-encoded the way the weight type's kernel reads it (rounded to
// F16/BF16, or quantized to Q8_0/Q8_1/Q8_K as ggml does before its integer
// dot products). Allocate one per session with NewWorkspace; a Workspace is
// not safe for concurrent use.
type Workspace struct {
	maxCols  int
	rounded  []float32 // (maxCols) x rounded to F16 or BF16; act.f points here or to x
	act      activation
	batch    []Workspace  // one per vector of a batched product (Reserve), in common arrays
	acts     []activation // the batch's encodings, as MatMuls hands them to the kernels
	simd     simdBatch    // the batched SIMD kernels' scratch (nothing without them)
	threads  int          // SetThreads: how many threads a product's rows split among (0: 1)
	job      rowsJob      // the product being split (pool.go)
	encoding encodeTask   // a batch being encoded (encodeBatch)
}

// activation is an input vector x encoded for one family of kernels. Which
// fields are set depends on the encoding (see Workspace.encode).
type activation struct {
	f     []float32 // (cols) F32: x itself; F16, BF16: x rounded to that type
	q     []int8    // (cols) Q8_0, Q8_1, Q8_K: the quants
	d     []float32 // (cols/32) Q8_0, Q8_1: block scale as the kernels use it; (cols/256) Q8_K
	s     []float32 // (cols/32) Q8_1: fp16(d·Σq), the term ggml multiplies with a block's min
	sum   []int32   // (cols/32) Q8_0, Q8_1: Σq per block; Q8_K once packed, Σq per 32
	bsums []int16   // (cols/16) Q8_K: Σq per 16 elements
	// The quants packed into lanes for the batched kernels, which read an
	// encoding many times (traits.pack): four to a word (p) or three (p3),
	// as packed says. Only a batch's workspaces have room for them (Reserve).
	p      [][8]uint64  // (cols/32) Q8_0, Q8_1, Q8_K: packLanes
	p3     [][11]uint64 // (cols/32) Q8_0: packLanes3
	packed packing
}

// NewWorkspace returns a workspace for products with up to maxCols columns.
func NewWorkspace(maxCols int) *Workspace {
	maxCols = max(maxCols, 0)
	n := (maxCols + qkK - 1) / qkK * qkK // whole Q8_K blocks, which also covers Q8_0
	return &Workspace{
		maxCols: maxCols,
		rounded: make([]float32, n),
		act: activation{
			q:     make([]int8, n),
			d:     make([]float32, n/qk8),
			s:     make([]float32, n/qk8),
			sum:   make([]int32, n/qk8),
			bsums: make([]int16, n/16),
		},
	}
}

// encode writes x, encoded as vec, into the workspace and returns it. A
// workspace too small for x grows (which allocates); NewWorkspace with the
// largest column count avoids that.
func (ws *Workspace) encode(vec Type, x []float32) *activation {
	if len(x) > ws.maxCols {
		*ws = *NewWorkspace(len(x))
	}
	a := &ws.act
	a.packed = 0
	if encodeSIMD(vec, a, x) {
		return a
	}
	switch vec {
	case F32:
		a.f = x
	case F16:
		a.f = ws.rounded[:len(x)]
		RoundF16(a.f, x)
	case BF16:
		a.f = ws.rounded[:len(x)]
		roundBF16(a.f, x)
	case Q8_0:
		encodeQ8_0(a, x)
	case Q8_1:
		encodeQ8_1(a, x)
	case Q8_K:
		encodeQ8K(a, x)
		if nativeSIMD {
			sums32(a) // for the interleaved Q4_K kernels, before any thread reads a
		}
	}
	return a
}

// MatVec sets out[r] = Σ_c m[r,c]·x[c] for every row r. out must hold Rows
// elements and x Cols elements; ws should have been made for at least Cols
// columns (a smaller one grows, allocating). With a large enough workspace it
// allocates nothing.
//
// Like ggml, it first encodes x as the weight type's activation type (see
// traits.vec) and then computes each row's dot product with that encoding, so
// quantized types use integer arithmetic within blocks.
func MatVec(out []float32, m *Matrix, x []float32, ws *Workspace) {
	MatVecs(x[:m.Cols], ws, Product{out, m})
}

// Product is one matrix–vector product for MatVecs: Out = M·x.
type Product struct {
	Out []float32
	M   *Matrix
}

// MatVecs computes several products of the same input x — a layer's query,
// key and value projections, or its gate and up projections — encoding x
// once for each activation type rather than once per matrix. Every M must
// have len(x) columns. The results are exactly those of separate MatVec calls.
func MatVecs(x []float32, ws *Workspace, products ...Product) {
	if ws == nil {
		ws = NewWorkspace(len(x))
	}
	var a *activation
	var encoded Type
	for i, p := range products {
		m := p.M
		if i == 0 || m.tr.vec != encoded {
			a, encoded = ws.encode(m.tr.vec, x[:m.Cols]), m.tr.vec
		}
		out := p.Out[:m.Rows]
		if matVecSIMD(out, m, a) || matVecBatchedSIMD(out, m, a, ws) {
			continue
		}
		job := &ws.job
		job.out, job.m, job.a, job.run = out, m, a, matVecRows
		if n := ws.parts(m.Rows, m.Cols); n > 1 {
			splitRows(job, m.Rows, n, rowAlign)
		} else {
			matVecRows(job, 0, m.Rows)
		}
		job.out, job.m, job.a = nil, nil, nil
	}
}

// matVecRows computes rows [lo, hi) of a matrix–vector product with the
// type's dot kernel.
func matVecRows(job *rowsJob, lo, hi int) {
	rowDots(job.out, job.m, lo, hi, job.a)
}

// rowDots sets out[r], for rows lo..hi-1 of m, to the row's dot product
// with a: eight rows at a time on the native kernel where m's type has one,
// the rest with the type's dot kernel.
func rowDots(out []float32, m *Matrix, lo, hi int, a *activation) {
	r := lo
	if hasRows8(m.Type) {
		for ; r+8 <= hi; r += 8 {
			dotRows8(out[r:r+8], m, r, a)
		}
	}
	dot, rb := m.tr.dot, m.rowBytes
	for ; r < hi; r++ {
		out[r] = dot(m.Data[r*rb:(r+1)*rb], a)
	}
}

// Quantize encodes src as type t into dst: len(src) must be a positive
// multiple of t's block size and len(dst) exactly RowBytes(t, len(src)). Each
// type follows ggml's reference quantizer (quantize_row_*_ref), so the bytes
// are those llama-quantize writes without an importance matrix.
func Quantize(t Type, dst []byte, src []float32) error {
	tr, err := lookup(t)
	if err != nil {
		return err
	}
	n, err := RowBytes(t, len(src))
	if err != nil {
		return err
	}
	if len(dst) != n {
		return fmt.Errorf("%w: %d %v elements take %d bytes, dst has %d", ErrShape, len(src), t, n, len(dst))
	}
	tr.quantize(dst, src)
	return nil
}

// Float32s views b as float32 values without copying. b must be 4-byte aligned
// with a length that is a multiple of 4 (NewMatrix guarantees this for F32 data).
func Float32s(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}
