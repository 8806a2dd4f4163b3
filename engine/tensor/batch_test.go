package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMatMulIsMatVecs (issue 12): a batched product gives, bit for bit,
// what MatVec gives token by token, for every type, for blocks of 1 to 33
// vectors and matrices of fewer and more rows than a tile, and rows long
// enough that the batched SIMD kernels decode them in several chunks; and
// once its workspace has room it allocates nothing.
func TestMatMulIsMatVecs(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	for _, typ := range []Type{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K} {
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
					allocs := testing.AllocsPerRun(3, func() { MatMul(got, m, x, n, ws) })
					require.Zero(t, allocs, "n=%d", n)
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
