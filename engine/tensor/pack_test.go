package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPackedProductsAreTheSame: a packed matrix (Pack) gives MatVec's and
// MatMul's results bit for bit, and its rows read back as they were, for
// every type the SIMD kernels pack, with last groups of one to four rows
// and matrices of several tiles, on one thread and split among three.
// Natively the AVX2 kernels' types are packed when their rows are whole
// groups of eight; without any SIMD kernels, and for the types none packs
// (F32, Q2_K), Pack declines and nothing changes.
func TestPackedProductsAreTheSame(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 2))
	for _, typ := range []Type{F32, Q2_K, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4} {
		for _, shape := range []struct{ rows, cols int }{{1, 256}, {6, 512}, {7, 256}, {8, 768}, {4096 + 5, 256}, {4096, 256}, {64, 2048}} {
			t.Run(fmt.Sprintf("%v/%dx%d", typ, shape.rows, shape.cols), func(t *testing.T) {
				plain := randomMatrix(t, rng, typ, shape.rows, shape.cols)
				packed, err := NewMatrix(typ, shape.rows, shape.cols, slices.Clone(plain.Data))
				require.NoError(t, err)
				want := (SIMD() || packNative(plain)) && packable(typ)
				require.Equal(t, want, Pack(packed))
				require.Equal(t, want, packed.Packed())
				require.Equal(t, want, Pack(packed), "packing twice")
				if want && shape.rows > 1 && shape.cols > layouts[typ].blockSize { // else the same bytes
					assert.NotEqual(t, plain.Data, packed.Data, "packed in place")
				} else if !want {
					require.Equal(t, plain.Data, packed.Data)
				}

				for r := range shape.rows {
					require.Equal(t, plain.RowData(r), packed.AppendRow(nil, r), "row %d's bytes", r)
				}
				a, b := make([]float32, shape.cols), make([]float32, shape.cols)
				for _, r := range []int{0, shape.rows / 2, shape.rows - 1} {
					plain.Row(a, r)
					packed.Row(b, r)
					require.Equal(t, a, b, "Row(%d)", r)
				}
				if want {
					assert.Equal(t, plain.RowData(shape.rows-1), packed.RowData(shape.rows-1), "RowData, a copy")
					if shape.rows > 1 {
						_, err := packed.Slice(0, 1)
						assert.ErrorIs(t, err, ErrShape)
					}
				}

				for _, n := range []int{1, 2, 5, 33} {
					x := randNormal(rng, n*shape.cols, 1)
					got, exp := make([]float32, n*shape.rows), make([]float32, n*shape.rows)
					ws, split := NewWorkspace(shape.cols), NewWorkspace(shape.cols)
					split.SetThreads(3)
					MatMul(exp, plain, x, n, ws)
					MatMul(got, packed, x, n, ws)
					requireSameBits(t, exp, got, "MatMul, n=%d", n)
					MatMul(got, packed, x, n, split)
					requireSameBits(t, exp, got, "MatMul, n=%d, 3 threads", n)
					MatVec(exp[:shape.rows], plain, x[:shape.cols], ws)
					MatVec(got[:shape.rows], packed, x[:shape.cols], ws)
					requireSameBits(t, exp[:shape.rows], got[:shape.rows], "MatVec")
					MatVec(got[:shape.rows], packed, x[:shape.cols], split)
					requireSameBits(t, exp[:shape.rows], got[:shape.rows], "MatVec, 3 threads")
				}
			})
		}
	}
}

func requireSameBits(t *testing.T, want, got []float32, msg string, args ...any) {
	t.Helper()
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("%s: element %d is %v, want %v", fmt.Sprintf(msg, args...), i, got[i], want[i])
		}
	}
}

// TestPackedSlicesAreTheSame: a packed matrix cut along whole groups of
// PackedGroupRows rows (Slice; a stack of experts' views) gives the plain
// matrix's slice's products bit for bit, a last slice that ends at the
// matrix's last row included, and refuses a cut inside a group.
func TestPackedSlicesAreTheSame(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	for _, typ := range []Type{Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K} {
		for _, shape := range []struct{ rows, cols int }{{24, 256}, {8*3 + 5, 512}, {64, 256}} {
			t.Run(fmt.Sprintf("%v/%dx%d", typ, shape.rows, shape.cols), func(t *testing.T) {
				plain := randomMatrix(t, rng, typ, shape.rows, shape.cols)
				packed, err := NewMatrix(typ, shape.rows, shape.cols, slices.Clone(plain.Data))
				require.NoError(t, err)
				if !Pack(packed) {
					t.Skip("no packed layout for this type here")
				}
				x := randNormal(rng, 3*shape.cols, 1)
				ws := NewWorkspace(shape.cols)
				for _, cut := range [][2]int{{0, 8}, {8, 16}, {16, shape.rows}} {
					p, err := plain.Slice(cut[0], cut[1])
					require.NoError(t, err)
					v, err := packed.Slice(cut[0], cut[1])
					if err != nil {
						// the native layout packs whole groups of eight only
						require.NotZero(t, shape.rows%PackedGroupRows, "rows %v", cut)
						continue
					}
					require.True(t, v.Packed())
					exp, got := make([]float32, 3*p.Rows), make([]float32, 3*p.Rows)
					MatMul(exp, p, x, 3, ws)
					MatMul(got, v, x, 3, ws)
					requireSameBits(t, exp, got, "MatMul of rows %v", cut)
					MatVec(exp[:p.Rows], p, x[:shape.cols], ws)
					MatVec(got[:p.Rows], v, x[:shape.cols], ws)
					requireSameBits(t, exp[:p.Rows], got[:p.Rows], "MatVec of rows %v", cut)
					for r := range p.Rows {
						require.Equal(t, p.RowData(r), v.AppendRow(nil, r), "row %d of rows %v", r, cut)
					}
				}
				_, err = packed.Slice(4, 12)
				assert.ErrorIs(t, err, ErrShape, "a cut inside a group")
			})
		}
	}
}
