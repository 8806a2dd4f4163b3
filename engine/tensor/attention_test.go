package tensor

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// attentionShapes are (positions, headDim, stride) triples: one position and
// many, head sizes around the 16- and 4-column loops of the SIMD kernels,
// and strides of a single head and of several (grouped) heads.
var attentionShapes = [][3]int{
	{1, 1, 1}, {1, 8, 8}, {2, 3, 5}, {3, 4, 4}, {5, 7, 9}, {7, 16, 48}, {9, 17, 17},
	{13, 31, 64}, {33, 48, 288}, {64, 64, 64}, {130, 64, 768}, {257, 8, 64},
}

// refScaledRows is the weighted sum as the forward pass wrote it before it
// called AddScaledRows: out[i] += float32(a·v[i]), t in order.
func refScaledRows(out, a, rows []float32, stride int) {
	for t, at := range a {
		v := rows[t*stride : t*stride+len(out)]
		for i := range out {
			out[i] += float32(at * v[i])
		}
	}
}

// TestDotF32Rows checks each score against DotF32 of its own row (the
// definition, bit for bit) and against the float64 dot product.
func TestDotF32Rows(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 31))
	for _, s := range attentionShapes {
		n, d, stride := s[0], s[1], s[2]
		x := randNormal(rng, d, 1)
		rows := randNormal(rng, (n-1)*stride+d, 1)
		out := make([]float32, n+1)
		out[n] = 42
		DotF32Rows(out[:n], x, rows, stride)
		require.Equal(t, float32(42), out[n], "%v wrote past out", s)
		for r := range n {
			row := rows[r*stride : r*stride+d]
			require.Equal(t, math.Float32bits(DotF32(row, x)), math.Float32bits(out[r]), "%v row %d", s, r)
			var want, mag float64
			for i := range d {
				want += float64(row[i]) * float64(x[i])
				mag += math.Abs(float64(row[i]) * float64(x[i]))
			}
			require.InDelta(t, want, float64(out[r]), float64(d)*0x1p-23*mag, "%v row %d", s, r)
		}
	}
}

// TestAddScaledRows checks the weighted sum against the forward pass's
// loop (bit for bit) and the float64 sum.
func TestAddScaledRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 32))
	for _, s := range attentionShapes {
		n, d, stride := s[0], s[1], s[2]
		a := randNormal(rng, n, 1)
		rows := randNormal(rng, (n-1)*stride+d, 1)
		start := randNormal(rng, d+1, 1)
		got, want := append([]float32(nil), start...), append([]float32(nil), start...)
		AddScaledRows(got[:d], a, rows, stride)
		refScaledRows(want[:d], a, rows, stride)
		require.Equal(t, start[d], got[d], "%v wrote past out", s)
		for i := range d {
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%v column %d", s, i)
			exact, mag := float64(start[i]), math.Abs(float64(start[i]))
			for r := range n {
				p := float64(a[r]) * float64(rows[r*stride+i])
				exact += p
				mag += math.Abs(p)
			}
			require.InDelta(t, exact, float64(got[i]), float64(2*n+1)*0x1p-24*mag, "%v column %d", s, i)
		}
	}
}

func TestAttentionEmpty(t *testing.T) {
	require.NotPanics(t, func() {
		DotF32Rows(nil, []float32{1}, nil, 1)
		AddScaledRows([]float32{1}, nil, nil, 1)
	})
}
