//go:build js && wasm && wasmlm_simd

package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run under tools/wasm_exec_simd.sh, which provides the SIMD
// kernels (or, with WASMLM_SIMD=off, the stubs).

// simdTypes are the types with a SIMD matrix–vector kernel (and a batched
// one).
var simdTypes = []Type{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4}

// simdMatMulTypes are the types with a batched SIMD kernel: simdTypes, and
// those with no matrix–vector kernel.
var simdMatMulTypes = append([]Type{Q2_K, Q3_K}, simdTypes...)

// needSIMD skips a test of the SIMD kernels where the host provides the
// stubs on purpose (WASMLM_SIMD=off); anywhere else a host without them
// fails it.
func needSIMD(t *testing.T) {
	t.Helper()
	if SIMD() {
		return
	}
	if os.Getenv("WASMLM_SIMD") != "off" {
		t.Fatal("the host provides no SIMD kernels (run the tests through tools/wasm_exec_simd.sh)")
	}
	t.Skip("WASMLM_SIMD=off: the host provides the stubs")
}

// TestSIMDAvailability proves which path the host chose: the kernels, or
// with WASMLM_SIMD=off the stubs, when every other test of the package
// then runs the pure-Go kernels.
func TestSIMDAvailability(t *testing.T) {
	assert.Equal(t, os.Getenv("WASMLM_SIMD") != "off", SIMD())
}

// simdCols are row lengths to test a type with: for block types 1, 2, 3 and
// 5 blocks; for F32 and F16 every tail length of the 16-, 8- and 4-column
// loops, and model widths.
func simdCols(typ Type) []int {
	if bs := layouts[typ].blockSize; bs > 1 {
		return []int{bs, 2 * bs, 3 * bs, 5 * bs}
	}
	return []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 47, 64, 100, 288, 768}
}

// randomSIMDRow is randomRow (for Q8_0 with no quant -128), plus for F16 and BF16 (kind 1) raw random
// bit patterns of every finite kind: normal, subnormal, zero of either sign.
func randomSIMDRow(t *testing.T, rng *rand.Rand, typ Type, cols, kind int) []byte {
	if typ == Q8_0 && kind != 0 { // raw blocks, but no quant -128, which the kernel refuses (minQuants)
		row := randomRow(t, rng, typ, cols, kind)
		for b := 0; b < len(row); b += q8_0BlockBytes {
			for i := b + 2; i < b+q8_0BlockBytes; i++ {
				if row[i] == 0x80 {
					row[i] = 0x81
				}
			}
		}
		return row
	}
	if typ != F16 && typ != BF16 || kind == 0 {
		return randomRow(t, rng, typ, cols, kind)
	}
	exponent, mantissa := uint16(0x7c00), uint16(0x03ff) // F16
	if typ == BF16 {
		exponent, mantissa = 0x7f80, 0x007f
	}
	row := alignedBytes(2 * cols)
	for i := 0; i < cols; i++ {
		h := uint16(rng.Uint32())
		if typ == BF16 { // exponents near 0: random ones would overflow the sums
			h = h&0x807f | uint16(120+rng.IntN(16))<<7
		}
		if h&exponent == exponent {
			h &^= exponent &^ (exponent >> 1) // not Inf or NaN: the sums would be NaN or Inf
		}
		if i%7 == 0 {
			h &= 0x8000 | mantissa // subnormal or zero
		}
		binary.LittleEndian.PutUint16(row[2*i:], h)
	}
	return row
}

// randomActivation is x at several magnitudes, with zeros (a whole zero
// block takes the Q8 encoders' zero-scale path).
func randomActivation(rng *rand.Rand, cols, trial int) []float32 {
	x := randNormal(rng, cols, math.Pow(10, float64(trial%5-2)))
	switch trial % 4 {
	case 1:
		for i := range x {
			if rng.IntN(3) == 0 {
				x[i] = 0
			}
		}
	case 2:
		clear(x[:min(len(x), 256)])
	}
	return x
}

// TestSIMDMatchesPureGo is the test of record for the SIMD kernels: for
// random rows (quantizer output and raw random blocks with finite scales),
// row counts around the group of four, several block counts and
// activations, each output equals the pure-Go kernel's bit for bit.
func TestSIMDMatchesPureGo(t *testing.T) {
	needSIMD(t)
	rng := rand.New(rand.NewPCG(21, 21))
	for _, typ := range simdTypes {
		t.Run(typ.String(), func(t *testing.T) {
			tr := traitsTable[typ]
			for _, cols := range simdCols(typ) {
				for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 32} {
					trial := rows + cols
					m := matrixOfRows(t, typ, rows, cols, func(r int) []byte { return randomSIMDRow(t, rng, typ, cols, (r+trial)%2) })
					x := randomActivation(rng, cols, trial)
					ws := NewWorkspace(cols)
					a := ws.encode(tr.vec, x)
					got := make([]float32, rows+1)
					got[rows] = 42 // a sentinel: the kernel writes rows outputs only
					require.True(t, matVecSIMD(got[:rows], m, a))
					require.Equal(t, float32(42), got[rows], "%d×%d wrote past the output", rows, cols)
					for r := range rows {
						want := tr.dot(m.RowData(r), a)
						require.Equal(t, math.Float32bits(want), math.Float32bits(got[r]),
							"%d×%d row %d: SIMD %v, pure Go %v", rows, cols, r, got[r], want)
					}
				}
			}
		})
	}
}

// TestSIMDMatMulMatchesPureGo checks the batched kernels as
// TestSIMDMatchesPureGo checks the matrix–vector ones: raw random rows,
// row counts around the group of four, rows long enough to be decoded in
// several chunks, several vectors; every output equals the pure-Go
// kernel's with that vector's encoding, bit for bit, and nothing is
// written past the outputs.
func TestSIMDMatMulMatchesPureGo(t *testing.T) {
	needSIMD(t)
	rng := rand.New(rand.NewPCG(24, 24))
	for _, typ := range simdMatMulTypes {
		t.Run(typ.String(), func(t *testing.T) {
			tr := traitsTable[typ]
			// Long enough for several chunks of scratch: 128 or 16 blocks,
			// or three chunks of floats and a tail.
			cols := append(simdCols(typ), 1543)
			if bs := layouts[typ].blockSize; bs > 1 {
				cols = append(simdCols(typ), 4096)
			}
			for _, c := range cols {
				for _, rows := range []int{1, 2, 3, 4, 5, 7, 9, 13} {
					trial := rows + c
					m := matrixOfRows(t, typ, rows, c, func(r int) []byte { return randomSIMDRow(t, rng, typ, c, (r+trial)%2) })
					for _, n := range []int{2, 3, 5, 9} {
						x := make([]float32, 0, n*c)
						for tok := range n {
							x = append(x, randomActivation(rng, c, trial+tok)...)
						}
						ws := NewWorkspace(c)
						got := make([]float32, n*rows+1)
						got[n*rows] = 42
						MatMul(got[:n*rows], m, x, n, ws)
						require.Equal(t, float32(42), got[n*rows], "%d×%d, %d vectors: wrote past the outputs", rows, c, n)
						for tok := range n {
							for r := range rows {
								want := tr.dot(m.RowData(r), &ws.acts[tok])
								g := got[tok*rows+r]
								require.Equal(t, math.Float32bits(want), math.Float32bits(g),
									"%d×%d, vector %d of %d, row %d: SIMD %v, pure Go %v", rows, c, tok, n, r, g, want)
							}
						}
					}
				}
			}
		})
	}
}

// TestSIMDExtremes is TestDotRowsExtremes for the batched SIMD kernels of
// the integer types (TestSIMDMatVecExtremes does the same for their
// matrix–vector kernels): rows of arbitrary bytes and of every quant and
// packed scale at the ends of its range (Q8_0's −128 and 127 among them),
// with finite scales or not, and vectors whose quants are at the ends of
// the int8 range (all −128, all 127, alternating, mixed, random), in one
// batch; each output is the pure-Go dot's bits (or a NaN for a NaN), over a
// number of rows not a multiple of four and rows decoded in two chunks of
// scratch. The relaxed kernels keep some quants as bytes for
// relaxed_dot: the ends of the ranges are where a bound would be passed.
func TestSIMDExtremes(t *testing.T) {
	needSIMD(t)
	rng := rand.New(rand.NewPCG(25, 25))
	const rows, cols = 5, 9 * qkK
	eachQuantizedVecType(t, simdMatMulTypes, cols, func(t *testing.T, typ Type, tr *traits, rb int) {
		quants := extremeQuants(rng)
		ws := NewWorkspace(cols)
		ws.Reserve(len(quants))
		acts := ws.encodeBatch(tr.vec, randNormal(rng, len(quants)*cols, 1), len(quants), cols)
		for i, q := range quants {
			setQuants(&acts[i], tr.vec, cols, q)
		}
		for _, fill := range extremeFills {
			for _, finite := range []bool{false, true} {
				m := matrixOfRows(t, typ, rows, cols, func(int) []byte { return extremeRow(rng, typ, rb, fill, finite) })
				out := make([]float32, len(acts)*rows+1)
				out[len(acts)*rows] = 42
				require.True(t, matMulSIMD(out[:len(acts)*rows], rows, m, acts, ws))
				require.Equal(t, float32(42), out[len(acts)*rows], "wrote past the outputs")
				for i := range acts {
					for r := range rows {
						requireSameDot(t, tr.dot(m.RowData(r), &acts[i]), out[i*rows+r],
							"fill %#x finite %v vector %d row %d", fill, finite, i, r)
					}
				}
			}
		}
	})
}

// TestSIMDMatVecExtremes is TestSIMDExtremes for the matrix–vector
// kernels: rows of arbitrary bytes and of every quant and packed scale at
// the ends of its range, with finite scales or not, times activations
// whose quants are at the ends of the int8 range, in the file's layout and
// packed; each output is the pure-Go dot's bits (or a NaN for a NaN). A
// matrix with an infinite or NaN F16 block scale is the pure-Go kernels'
// (finiteScales), and only such a matrix.
func TestSIMDMatVecExtremes(t *testing.T) {
	needSIMD(t)
	rng := rand.New(rand.NewPCG(26, 26))
	const rows, cols = 7, 3 * qkK
	eachQuantizedVecType(t, simdTypes, cols, func(t *testing.T, typ Type, tr *traits, rb int) {
		for _, q := range extremeQuants(rng) {
			a := activationWith(rng, tr.vec, cols, q)
			for _, fill := range extremeFills {
				for _, finite := range []bool{false, true} {
					m := matrixOfRows(t, typ, rows, cols, func(int) []byte { return extremeRow(rng, typ, rb, fill, finite) })
					want := make([]float32, rows)
					for r := range rows {
						want[r] = tr.dot(m.RowData(r), &a)
					}
					for _, pack := range []bool{false, true} {
						if pack {
							require.True(t, Pack(m))
						}
						got := make([]float32, rows+1)
						got[rows] = 42
						ran := matVecSIMD(got[:rows], m, &a)
						// The kernels of F16 block scales run only where those are
						// finite, Q8_0's only where no quant is -128; elsewhere
						// other kernels take the product.
						fullQ8 := typ == Q8_0 && (m.minQuants() || minQuant8(a.q[:cols]))
						require.Equal(t, m.finiteScales() && !fullQ8, ran, "fill %#x finite %v", fill, finite)
						if !ran {
							require.True(t, f16Scales[typ] != nil || typ == Q8_0, "a kernel refused a matrix")
							continue
						}
						require.Equal(t, float32(42), got[rows], "wrote past the outputs")
						for r := range rows {
							requireSameDot(t, want[r], got[r], "fill %#x finite %v packed %v row %d", fill, finite, pack, r)
						}
					}
				}
			}
		}
	})
}

// eachQuantizedVecType runs f as a subtest of each of types whose
// activations are quantized (Q8_0, Q8_1, Q8_K: float ones have no quants to
// push to the ends), with its traits and the bytes of a row of cols.
func eachQuantizedVecType(t *testing.T, types []Type, cols int, f func(t *testing.T, typ Type, tr *traits, rb int)) {
	for _, typ := range types {
		tr := traitsTable[typ]
		if tr.vec != Q8_0 && tr.vec != Q8_1 && tr.vec != Q8_K {
			continue
		}
		t.Run(typ.String(), func(t *testing.T) {
			rb, err := RowBytes(typ, cols)
			require.NoError(t, err)
			f(t, typ, tr, rb)
		})
	}
}

// TestSIMDF16Specials checks the F16 decoding of Inf and NaN: products with
// them must give the pure-Go Inf of the same sign, or a NaN.
func TestSIMDF16Specials(t *testing.T) {
	needSIMD(t)
	const rows, cols = 6, 13
	data := alignedBytes(2 * rows * cols)
	specials := []uint16{0x7c00, 0xfc00, 0x7c01, 0xfe00, 0x7fff, 0x0001}
	for r := range rows {
		for c := range cols {
			binary.LittleEndian.PutUint16(data[2*(r*cols+c):], f32ToF16(float32(c+1)/16))
		}
		binary.LittleEndian.PutUint16(data[2*(r*cols+r*2):], specials[r])
	}
	m, err := NewMatrix(F16, rows, cols, data)
	require.NoError(t, err)
	x := make([]float32, cols)
	for c := range x {
		x[c] = float32(c%5) - 1.5
	}
	a := NewWorkspace(cols).encode(F16, x)
	got := make([]float32, rows)
	require.True(t, matVecSIMD(got, m, a))
	for r := range rows {
		want := traitsTable[F16].dot(m.RowData(r), a)
		if math.IsNaN(float64(want)) {
			assert.True(t, math.IsNaN(float64(got[r])), "row %d: got %v, want NaN", r, got[r])
			continue
		}
		assert.Equal(t, math.Float32bits(want), math.Float32bits(got[r]), "row %d: got %v, want %v", r, got[r], want)
	}
}

func TestSIMDMatVecAllocatesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 22))
	for _, typ := range simdTypes {
		rows, cols := 7, 512
		m := matrixOfRows(t, typ, rows, cols, func(int) []byte { return randomRow(t, rng, typ, cols, 0) })
		x := randNormal(rng, cols, 1)
		out := make([]float32, rows)
		ws := NewWorkspace(cols)
		assert.Zero(t, testing.AllocsPerRun(50, func() { MatVec(out, m, x, ws) }), "%v", typ)
	}
}

// specialActivation is x with the values that take the encoders' edge
// paths: a magnitude tie of opposite signs (the first wins), NaN, ±Inf,
// subnormals (whose reciprocal scale overflows), exact halves.
func specialActivation(rng *rand.Rand, n, kind int) []float32 {
	x := randNormal(rng, n, 1)
	switch kind {
	case 0: // the largest magnitude twice per 32, with either sign first
		for b := 0; b < n; b += 32 {
			i, j := b+rng.IntN(32), b+rng.IntN(32)
			m := float32(3 + rng.IntN(3))
			x[i], x[j] = m*float32(2*rng.IntN(2)-1), -m
		}
	case 1: // NaN and infinities here and there
		for i := range x {
			switch rng.IntN(40) {
			case 0:
				x[i] = float32(math.NaN())
			case 1:
				x[i] = float32(math.Inf(1))
			case 2:
				x[i] = float32(math.Inf(-1))
			}
		}
	case 2: // subnormal magnitudes
		for i := range x {
			x[i] = math.Float32frombits(rng.Uint32() & 0x807fffff)
		}
	case 3: // integers and halves: ties in the rounding
		for i := range x {
			x[i] = float32(rng.IntN(511)-255) / 2
		}
	case 4: // all zero, or zero but for NaN
		clear(x)
		if rng.IntN(2) == 0 {
			x[rng.IntN(n)] = float32(math.NaN())
		}
	}
	return x
}

// TestSIMDEncodeMatchesPureGo checks the SIMD activation encoders against
// encodeQ8_0 and encodeQ8K: the same quants, scales (bit for bit) and sums.
func TestSIMDEncodeMatchesPureGo(t *testing.T) {
	needSIMD(t)
	rng := rand.New(rand.NewPCG(23, 23))
	for _, cols := range []int{256, 512, 768, 2048} {
		for kind := range 6 {
			for trial := range 4 {
				var x []float32
				if kind == 5 {
					x = randomActivation(rng, cols, trial)
				} else {
					x = specialActivation(rng, cols, kind)
				}
				got, want := NewWorkspace(cols), NewWorkspace(cols)
				for _, vec := range []Type{Q8_0, Q8_K} {
					ga := got.encode(vec, x)
					wa := &want.act
					if vec == Q8_0 {
						encodeQ8_0(wa, x)
					} else {
						encodeQ8K(wa, x)
					}
					msg := []any{"%v cols %d kind %d trial %d", vec, cols, kind, trial}
					require.Equal(t, wa.q, ga.q, msg...)
					require.Equal(t, len(wa.d), len(ga.d), msg...)
					for b := range wa.d {
						require.Equal(t, math.Float32bits(wa.d[b]), math.Float32bits(ga.d[b]), msg...)
					}
					if vec == Q8_0 {
						require.Equal(t, wa.sum, ga.sum, msg...)
					} else {
						require.Equal(t, wa.bsums, ga.bsums, msg...)
					}
				}
			}
		}
	}
}

// TestSIMDMatVecOfBatchedOnlyTypes: the types with a batched SIMD kernel
// but no matrix–vector one run MatVec on the batched kernel with one
// vector (matVecBatchedSIMD), with the pure-Go kernel's bits, and after
// the first product allocate nothing.
func TestSIMDMatVecOfBatchedOnlyTypes(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 25))
	for _, typ := range []Type{Q2_K, Q3_K} {
		for _, shape := range []struct{ rows, cols int }{{1, 256}, {7, 512}, {4096 + 3, 256}, {9, 4096}} {
			t.Run(fmt.Sprintf("%v/%dx%d", typ, shape.rows, shape.cols), func(t *testing.T) {
				m := randomMatrix(t, rng, typ, shape.rows, shape.cols)
				x := randNormal(rng, shape.cols, 1)
				ws := NewWorkspace(shape.cols)
				got := make([]float32, shape.rows)
				MatVec(got, m, x, ws)
				a := ws.encode(traitsTable[typ].vec, x)
				for r := range shape.rows {
					want := traitsTable[typ].dot(m.RowData(r), a)
					require.Equal(t, math.Float32bits(want), math.Float32bits(got[r]), "row %d: %v, pure Go %v", r, got[r], want)
				}
				require.Equal(t, SIMD(), matVecBatchedSIMD(got, m, a, ws))
				require.Zero(t, testing.AllocsPerRun(3, func() { MatVec(got, m, x, ws) }))
			})
		}
	}
}
