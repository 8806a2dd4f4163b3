package tensor

import (
	"fmt"
	"math"
	"unsafe"
)

// Matrix is a (Rows, Cols) weight matrix stored row-major in Data, each row
// encoded as Type. Data is a view into the model bytes, never a copy (but see
// NewMatrix for misaligned float data).
type Matrix struct {
	Type       Type
	Rows, Cols int
	Data       []byte // Rows * RowBytes(Type, Cols) bytes
	rowBytes   int
	tr         *traits
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
	return &Matrix{Type: t, Rows: rows, Cols: cols, Data: data, rowBytes: rb, tr: tr}, nil
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

// RowData is the stored bytes of row r.
func (m *Matrix) RowData(r int) []byte {
	return m.Data[r*m.rowBytes : (r+1)*m.rowBytes]
}

// Row decodes row r into dst, which must hold Cols elements (an embedding lookup).
func (m *Matrix) Row(dst []float32, r int) {
	m.tr.dequantize(dst[:m.Cols], m.RowData(r))
}

// Workspace holds the scratch memory matrix products need (for quantized
// types, the activation vector re-encoded the way the kernels read it).
// Allocate one per session with NewWorkspace; a Workspace is not safe for
// concurrent use.
type Workspace struct {
	maxCols int
}

// NewWorkspace returns a workspace for products with up to maxCols columns.
func NewWorkspace(maxCols int) *Workspace {
	return &Workspace{maxCols: maxCols}
}

// MatVec sets out[r] = Σ_c m[r,c]·x[c] for every row r. out must hold Rows
// elements and x Cols elements; ws must have been made for at least Cols
// columns. It allocates nothing.
func MatVec(out []float32, m *Matrix, x []float32, ws *Workspace) {
	x = x[:m.Cols]
	out = out[:m.Rows]
	rb := m.rowBytes
	for r := range out {
		out[r] = m.tr.rowDot(m.Data[r*rb:(r+1)*rb], x)
	}
}

// Float32s views b as float32 values without copying. b must be 4-byte aligned
// with a length that is a multiple of 4 (NewMatrix guarantees this for F32 data).
func Float32s(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}
