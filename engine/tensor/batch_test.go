package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/race"
)

// TestMatMulIsMatVecs: a batched product gives, bit for bit,
// what MatVec gives token by token, for every type, for blocks of 1 to 33
// vectors and matrices of fewer and more rows than a tile, and rows long
// enough that the batched SIMD kernels decode them in several chunks; and
// once its workspace has room it allocates nothing.
func TestMatMulIsMatVecs(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	for _, typ := range []Type{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, MXFP4} {
		for _, shape := range []struct{ rows, cols int }{{7, 256}, {300, 512}, {4096 + 5, 256}, {9, 4096}} {
			t.Run(fmt.Sprintf("%v/%dx%d", typ, shape.rows, shape.cols), func(t *testing.T) {
				m := randomMatrix(t, rng, typ, shape.rows, shape.cols)
				for _, n := range []int{1, 2, 4, 5, 33} {
					x := make([]float32, n*shape.cols)
					for i := range x {
						x[i] = float32(rng.NormFloat64())
					}
					ws := NewWorkspace(shape.cols)
					got := make([]float32, n*shape.rows)
					MatMul(got, m, x, n, ws)
					want := make([]float32, shape.rows)
					for tok := range n {
						MatVec(want, m, x[tok*shape.cols:(tok+1)*shape.cols], NewWorkspace(shape.cols))
						for r, w := range want {
							if g := got[tok*shape.rows+r]; math.Float32bits(g) != math.Float32bits(w) {
								t.Fatalf("n=%d token %d row %d: %v, MatVec %v", n, tok, r, g, w)
							}
						}
					}
					if !race.Enabled { // the race detector allocates
						// Three runs: the pool's goroutines may allocate once in a while when a
						// slow host (QEMU) has not parked them yet; the average of three is the
						// steady state, as a decode step sees it.
						allocs := testing.AllocsPerRun(3, func() { MatMul(got, m, x, n, ws) })
						require.Zero(t, allocs, "n=%d", n)
					}
				}
			})
		}
	}
}

// randomMatrix is a rows×cols matrix of type typ quantized from random
// values.
func randomMatrix(t testing.TB, rng *rand.Rand, typ Type, rows, cols int) *Matrix {
	t.Helper()
	rb, err := RowBytes(typ, cols)
	require.NoError(t, err)
	data := make([]byte, rows*rb)
	src := make([]float32, cols)
	for r := range rows {
		for i := range src {
			src[i] = float32(rng.NormFloat64())
		}
		require.NoError(t, Quantize(typ, data[r*rb:(r+1)*rb], src))
	}
	m, err := NewMatrix(typ, rows, cols, data)
	require.NoError(t, err)
	return m
}

// TestDotRowsExtremes: every batched kernel (traits.dotRows) gives dot's
// bits on arbitrary bytes, not only those the quantizers write, and on
// activations at the ends of the int8 range, where the kernels' lane sums
// come closest to overflowing; over rows longer than the kernels' chunks.
func TestDotRowsExtremes(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 2))
	const cols, stride = 9 * qkK, 3
	for _, typ := range kernelTypes {
		tr := traitsTable[typ]
		if tr.dotRows == nil {
			continue
		}
		t.Run(typ.String(), func(t *testing.T) {
			rb, err := RowBytes(typ, cols)
			require.NoError(t, err)
			var acts []activation
			for _, q := range extremeQuants(rng) {
				acts = append(acts, activationWith(rng, tr.vec, cols, q))
			}
			if tr.pack != nil {
				for i := range acts {
					tr.pack(&acts[i])
				}
			}
			for _, fill := range extremeFills {
				for _, finite := range []bool{false, true} {
					row := extremeRow(rng, typ, rb, fill, finite)
					out := make([]float32, len(acts)*stride)
					tr.dotRows(out, stride, row, acts)
					for i := range acts {
						requireSameDot(t, tr.dot(row, &acts[i]), out[i*stride],
							"fill %#x finite %v activation %d", fill, finite, i)
					}
				}
			}
		})
	}
}

// extremeQuants are activation quants (see setQuants) at the ends of the
// int8 range, and random ones.
func extremeQuants(rng *rand.Rand) []func(i int) int8 {
	return []func(i int) int8{
		func(int) int8 { return int8(rng.Uint32()) },
		func(int) int8 { return -128 },
		func(int) int8 { return 127 },
		func(i int) int8 { return int8(-128 + 255*(i&1)) },
		func(int) int8 { return int8(-128 + 255*int(rng.Uint32()&1)) },
		// Q8_0's relaxed kernel takes quants in -127..127 only (minQuants):
		func(int) int8 { return -127 },
		func(i int) int8 { return int8(-127 + 254*(i&1)) },
		func(int) int8 { return int8(-127 + int(rng.Uint32()%255)) },
	}
}

// extremeFills are the bytes extremeRow fills a row with (-1: random
// ones, -2: random ones but 0x80, for Q8_0's relaxed kernel): quants and
// packed scales at the ends of their ranges.
var extremeFills = []int{-1, -2, 0x00, 0xff, 0x88, 0x80, 0x81, 0x7f, 0x77, 0x08, 0x0f, 0xf0}

// extremeRow is rb bytes of typ filled with fill, the scales made 1 or -2
// (MXFP4's 1 or 2) if finite, so that no NaN hides a difference.
func extremeRow(rng *rand.Rand, typ Type, rb, fill int, finite bool) []byte {
	row := alignedBytes(rb)
	for i := range row {
		row[i] = byte(fill)
		if fill < 0 {
			row[i] = byte(rng.Uint32())
		}
		if fill == -2 && row[i] == 0x80 {
			row[i] = 0x81
		}
	}
	if finite {
		setScales(typ, row, func() float32 { return float32(1 - 3*int(rng.Uint32()&1)) })
	}
	return row
}

// requireSameDot requires got to be want's bits, or both NaN: which
// operand's payload an addition keeps depends on the machine code.
func requireSameDot(t *testing.T, want, got float32, msg string, args ...any) {
	t.Helper()
	if got != got && want != want {
		return
	}
	require.Equal(t, math.Float32bits(want), math.Float32bits(got), fmt.Sprintf(msg, args...)+": %v, dot %v", got, want)
}

// activationWith is an activation encoded as vec from random values, its
// quants (for the integer encodings) then replaced by q(i) (setQuants).
func activationWith(rng *rand.Rand, vec Type, cols int, q func(i int) int8) activation {
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	ws := NewWorkspace(cols)
	ws.Reserve(1)
	a := *ws.batch[0].encode(vec, x)
	setQuants(&a, vec, cols, q)
	return a
}

// setQuants replaces the quants of a, for the integer encodings vec, by
// q(i) and makes its sums match.
func setQuants(a *activation, vec Type, cols int, q func(i int) int8) {
	if vec != Q8_0 && vec != Q8_1 && vec != Q8_K {
		return
	}
	for i := range a.q {
		a.q[i] = q(i)
	}
	for b := range a.sum[:cols/qk8] {
		a.sum[b] = 0
		for _, v := range a.q[b*qk8 : (b+1)*qk8] {
			a.sum[b] += int32(v)
		}
	}
	for j := range a.bsums[:cols/16] {
		a.bsums[j] = 0
		for _, v := range a.q[j*16 : (j+1)*16] {
			a.bsums[j] += int16(v)
		}
	}
}
