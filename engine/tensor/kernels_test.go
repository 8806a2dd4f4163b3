package tensor

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/race"
)

// kernelTypes are the types with kernels, in ggml id order.
var kernelTypes = []Type{F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, BF16, MXFP4}

// halfFields are the byte offsets of the fp16 scale fields in a block.
var halfFields = map[Type][]int{
	Q4_0: {0}, Q4_1: {0, 2}, Q5_0: {0}, Q5_1: {0, 2}, Q8_0: {0},
	Q2_K: {80, 82}, Q3_K: {108}, Q4_K: {0, 2}, Q5_K: {0, 2}, Q6_K: {208},
}

// e8m0Fields are the byte offsets of the E8M0 scale exponents in a block.
var e8m0Fields = map[Type][]int{MXFP4: {0}}

// setScales sets the scale fields of every block of row to values of
// scale(): the fp16 ones rounded to fp16, the E8M0 ones to the power of
// two at or below its magnitude (as 2^(e-128), MXFP4's halved scale).
func setScales(typ Type, row []byte, scale func() float32) {
	l := layouts[typ]
	for b := 0; b+l.blockBytes <= len(row); b += l.blockBytes {
		for _, off := range halfFields[typ] {
			binary.LittleEndian.PutUint16(row[b+off:], f32ToF16(scale()))
		}
		for _, off := range e8m0Fields[typ] {
			var e byte
			if s := math.Abs(float64(scale())); s != 0 {
				_, exp := math.Frexp(s)
				e = byte(min(max(127+exp, 0), 254))
			}
			row[b+off] = e
		}
	}
}

func TestKernelTypesAreSupported(t *testing.T) {
	for _, typ := range kernelTypes {
		assert.True(t, Supported(typ), "%v", typ)
	}
	assert.Len(t, traitsTable, len(kernelTypes))
	assert.False(t, Supported(Q8_K), "Q8_K is an activation encoding only")
}

// TestBlockLayouts checks each format file's block size, computed from its
// documented fields, against the layouts table (ggml's block structs).
func TestBlockLayouts(t *testing.T) {
	for _, tc := range []struct {
		typ              Type
		elements, nbytes int
	}{
		{F16, 1, f16BlockBytes}, {BF16, 1, bf16BlockBytes},
		{Q8_0, qk8, q8_0BlockBytes}, {Q8_1, qk8, q8_1BlockBytes},
		{Q4_0, qk8, q4_0BlockBytes}, {Q4_1, qk8, q4_1BlockBytes},
		{Q5_0, qk8, q5_0BlockBytes}, {Q5_1, qk8, q5_1BlockBytes},
		{Q2_K, qkK, q2KBlockBytes}, {Q3_K, qkK, q3KBlockBytes},
		{Q4_K, qkK, q4KBlockBytes}, {Q5_K, qkK, q5KBlockBytes},
		{Q6_K, qkK, q6KBlockBytes}, {Q8_K, qkK, q8KBlockBytes},
		{MXFP4, qk8, mxfp4BlockBytes},
	} {
		l := layouts[tc.typ]
		assert.Equal(t, tc.elements, l.blockSize, "%v block size", tc.typ)
		assert.Equal(t, tc.nbytes, l.blockBytes, "%v block bytes", tc.typ)
	}
}

// testCols are row lengths to test a type with: one block, a few blocks, and
// the widths of the synthetic model.
func testCols(typ Type) []int {
	switch layouts[typ].blockSize {
	case qkK:
		return []int{256, 512, 768}
	case qk8:
		return []int{32, 64, 96, 256, 768}
	}
	return []int{1, 3, 4, 7, 64, 256, 768}
}

func randNormal(rng *rand.Rand, n int, sigma float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * sigma)
	}
	return x
}

// matrixOfRows is a rows×cols matrix of type typ on aligned memory, row r
// holding the bytes row(r) returns.
func matrixOfRows(t testing.TB, typ Type, rows, cols int, row func(r int) []byte) *Matrix {
	t.Helper()
	rb, err := RowBytes(typ, cols)
	require.NoError(t, err)
	data := alignedBytes(rows * rb)
	for r := range rows {
		copy(data[r*rb:], row(r))
	}
	m, err := NewMatrix(typ, rows, cols, data)
	require.NoError(t, err)
	return m
}

// randomRow returns a row of typ: from the quantizer (kind 0) or random
// bytes with finite fp16 scales (kind 1, which reaches every bit pattern of
// the quants and sub-scales that the quantizer might never write).
func randomRow(t testing.TB, rng *rand.Rand, typ Type, cols, kind int) []byte {
	rb, err := RowBytes(typ, cols)
	require.NoError(t, err)
	row := alignedBytes(rb)
	l := layouts[typ]
	if kind == 0 || l.blockSize == 1 {
		require.NoError(t, Quantize(typ, row, randNormal(rng, cols, 0.05)))
		return row
	}
	for i := range row {
		row[i] = byte(rng.Uint32())
	}
	setScales(typ, row, func() float32 { return float32(rng.NormFloat64() * 0.01) })
	return row
}

// alignedBytes returns n zero bytes 8-byte aligned, as NewMatrix provides.
func alignedBytes(n int) []byte {
	f := make([]float32, (n+3)/4+1)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))[:n]
}

func encodeFor(typ Type, x []float32) *activation {
	ws := NewWorkspace(len(x))
	return ws.encode(traitsTable[typ].vec, x)
}

// TestDotMatchesNaive compares every kernel with the float64 reference on
// random rows and activations, within the rounding bound of dotTolerance.
func TestDotMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, typ := range kernelTypes {
		t.Run(typ.String(), func(t *testing.T) {
			for _, cols := range testCols(typ) {
				for trial := range 20 {
					row := randomRow(t, rng, typ, cols, trial%2)
					x := randNormal(rng, cols, 1)
					a := encodeFor(typ, x)
					got := traitsTable[typ].dot(row, a)
					want, mag := naiveDot(typ, row, a, cols)
					require.InDelta(t, want, float64(got), dotTolerance(typ, cols, mag), "cols %d trial %d", cols, trial)
				}
			}
		})
	}
}

// TestDotExactIntegers makes every float operation of the kernels exact
// (scales ±1 or ±0.5, activations that quantize to themselves with scale
// ±1, magnitudes below 2²⁴ units), so any difference from the reference
// would be a wrong integer: a misread quant, bit or sub-scale.
func TestDotExactIntegers(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	scales := []float32{1, -1, 0.5, -0.5}
	for _, typ := range kernelTypes {
		t.Run(typ.String(), func(t *testing.T) {
			l := layouts[typ]
			cols := 768
			rb, err := RowBytes(typ, cols)
			require.NoError(t, err)
			for trial := range 30 {
				row := alignedBytes(rb)
				if l.blockSize == 1 {
					w := make([]float32, cols)
					for i := range w {
						w[i] = float32(rng.IntN(17) - 8)
					}
					require.NoError(t, Quantize(typ, row, w))
				} else {
					for i := range row {
						row[i] = byte(rng.Uint32())
					}
					setScales(typ, row, func() float32 { return scales[rng.IntN(len(scales))] })
				}
				// Values in {-1, 0, 1} and one ±127 per block of the
				// activation encoding, so that its scale is exactly ±1.
				x := make([]float32, cols)
				peak := 32
				if traitsTable[typ].vec == Q8_K {
					peak = 256
				}
				for i := range x {
					x[i] = float32(rng.IntN(3) - 1)
					if i%peak == trial%peak {
						x[i] = float32(127 * (2*rng.IntN(2) - 1))
					}
				}
				a := encodeFor(typ, x)
				got := traitsTable[typ].dot(row, a)
				want, _ := naiveDot(typ, row, a, cols)
				require.Equal(t, want, float64(got), "trial %d", trial)
			}
		})
	}
}

// TestDequantizeMatchesNaive checks dequantize against the float64 decode:
// a decoded weight is at most a few float32 roundings (a scale product, a
// quant product, a min subtraction) away from the exact value.
func TestDequantizeMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, typ := range kernelTypes {
		t.Run(typ.String(), func(t *testing.T) {
			for _, cols := range testCols(typ) {
				for kind := range 2 {
					row := randomRow(t, rng, typ, cols, kind)
					got := make([]float32, cols)
					traitsTable[typ].dequantize(got, row)
					for i := range cols {
						s, o := naiveElement(typ, row, i)
						tol := 3*0x1p-24*(math.Abs(s)+math.Abs(o)) + 0x1p-149
						require.InDelta(t, s+o, float64(got[i]), tol, "cols %d element %d", cols, i)
					}
				}
			}
		})
	}
}

// TestMatVecAndRow runs the exported API on a small matrix: MatVec equals
// the row-by-row naive dot product and Row equals the naive decode.
func TestMatVecAndRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, typ := range kernelTypes {
		t.Run(typ.String(), func(t *testing.T) {
			rows, cols := 5, testCols(typ)[1]
			m := matrixOfRows(t, typ, rows, cols, func(r int) []byte { return randomRow(t, rng, typ, cols, r%2) })
			x := randNormal(rng, cols, 1)
			out := make([]float32, rows)
			ws := NewWorkspace(cols)
			MatVec(out, m, x, ws)
			a := encodeFor(typ, x)
			dst := make([]float32, cols)
			for r := range rows {
				want, mag := naiveDot(typ, m.RowData(r), a, cols)
				assert.InDelta(t, want, float64(out[r]), dotTolerance(typ, cols, mag), "row %d", r)
				m.Row(dst, r)
				for i, v := range dst {
					s, o := naiveElement(typ, m.RowData(r), i)
					assert.InDelta(t, s+o, float64(v), 3*0x1p-24*(math.Abs(s)+math.Abs(o))+0x1p-149)
				}
			}
		})
	}
}

func TestMatVecAllocatesNothing(t *testing.T) {
	race.SkipAllocationCount(t)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, typ := range kernelTypes {
		rows, cols := 8, 256
		m := matrixOfRows(t, typ, rows, cols, func(int) []byte { return randomRow(t, rng, typ, cols, 0) })
		x := randNormal(rng, cols, 1)
		out := make([]float32, rows)
		ws := NewWorkspace(768)
		allocs := testing.AllocsPerRun(20, func() { MatVec(out, m, x, ws) })
		assert.Zero(t, allocs, "%v", typ)
	}
}

// TestWorkspaceSharedAcrossTypes uses one workspace for products with
// matrices of every type in turn, as a forward pass does: each result must
// be as with a fresh workspace, and x must not change.
func TestWorkspaceSharedAcrossTypes(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	const rows, cols = 3, 256
	x := randNormal(rng, cols, 1)
	xCopy := slices.Clone(x)
	ws := NewWorkspace(cols)
	for range 2 {
		for _, typ := range kernelTypes {
			m := matrixOfRows(t, typ, rows, cols, func(int) []byte { return randomRow(t, rng, typ, cols, 0) })
			got, want := make([]float32, rows), make([]float32, rows)
			MatVec(got, m, x, ws)
			MatVec(want, m, x, NewWorkspace(cols))
			require.Equal(t, want, got, "%v", typ)
			require.Equal(t, xCopy, x, "%v changed x", typ)
		}
	}
}

func TestWorkspaceGrows(t *testing.T) {
	m, err := NewMatrix(Q4_0, 1, 64, make([]byte, 2*q4_0BlockBytes))
	require.NoError(t, err)
	out := make([]float32, 1)
	for _, ws := range []*Workspace{nil, NewWorkspace(0), NewWorkspace(32)} {
		assert.NotPanics(t, func() { MatVec(out, m, make([]float32, 64), ws) })
	}
}

func TestQuantizeErrors(t *testing.T) {
	src := make([]float32, 64)
	assert.ErrorIs(t, Quantize(Q4_0, make([]byte, 35), src), ErrShape)
	assert.ErrorIs(t, Quantize(Q4_K, make([]byte, 144), src), ErrShape)
	assert.ErrorIs(t, Quantize(Q8_K, make([]byte, 292), make([]float32, 256)), ErrUnsupportedType)
	assert.ErrorIs(t, Quantize(Type(99), nil, src), ErrUnsupportedType)
	assert.NoError(t, Quantize(Q4_0, make([]byte, 36), src))
}

// TestMatVecsEqualsMatVec: products sharing one input, of mixed weight types
// (so the input is re-encoded between them), give exactly the bits of
// separate MatVec calls, and allocate nothing.
func TestMatVecsEqualsMatVec(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const cols = 512
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	var products []Product
	var want [][]float32
	ws := NewWorkspace(cols)
	for i, typ := range []Type{Q8_0, Q8_0, F16, Q4_K, Q4_0, F32, Q6_K} {
		rows := 3 + i
		w := make([]float32, rows*cols)
		for j := range w {
			w[j] = float32(rng.NormFloat64() * 0.1)
		}
		rb, err := RowBytes(typ, cols)
		require.NoError(t, err)
		data := make([]byte, rows*rb)
		require.NoError(t, Quantize(typ, data, w))
		m, err := NewMatrix(typ, rows, cols, data)
		require.NoError(t, err)
		single := make([]float32, rows)
		MatVec(single, m, x, ws)
		want = append(want, single)
		products = append(products, Product{Out: make([]float32, rows), M: m})
	}
	MatVecs(x, ws, products...)
	for i, p := range products {
		for r := range p.Out {
			require.Equal(t, math.Float32bits(want[i][r]), math.Float32bits(p.Out[r]), "product %d row %d", i, r)
		}
	}
	if !race.Enabled { // the race detector allocates
		allocs := testing.AllocsPerRun(20, func() { MatVecs(x, ws, products...) })
		require.Zero(t, allocs)
	}
}
