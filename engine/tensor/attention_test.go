package tensor

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
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
		DecodeF16Rows(nil, nil, 1, 1)
		DecodeF16Rows(make([]float32, 3), []uint16{1, 2, 3}, 0, 1)
	})
}

// TestEncodeF16 checks that an F16 cache stores what RoundF16 computes:
// the nearest F16, ties to even, overflow to infinity.
func TestEncodeF16(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000},
		{1 + 0x1p-11, 0x3c00},            // a tie: to even
		{1 + 3*0x1p-11, 0x3c02},          // a tie: to even, upwards
		{65504, 0x7bff}, {65520, 0x7c00}, // the largest F16; half an ulp above it overflows
		{0x1p-24, 0x0001}, {0x1p-25, 0}, // the smallest subnormal; half of it, a tie, to even (zero)
		{float32(math.Inf(-1)), 0xfc00},
	} {
		var got [1]uint16
		EncodeF16(got[:], []float32{c.in})
		assert.Equal(t, c.want, got[0], "%v", c.in)
		var r [1]float32
		RoundF16(r[:], []float32{c.in})
		assert.Equal(t, math.Float32bits(f16Table()[c.want]), math.Float32bits(r[0]), "%v", c.in)
	}
}

// TestDecodeF16Rows decodes every F16 bit pattern, Inf and NaN payloads
// included, in rows of several widths and strides: each value is the
// pure-Go table's, and nothing past the rows is written.
func TestDecodeF16Rows(t *testing.T) {
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	for _, s := range [][2]int{{1, 1}, {3, 5}, {4, 4}, {7, 9}, {8, 8}, {17, 24}, {64, 256}, {100, 100}} {
		width, stride := s[0], s[1]
		// Strides equal to widths cover every pattern.
		for start := 0; start+width <= len(all); start += 13 * stride {
			rows := min(13, (len(all)-start-width)/stride+1)
			src := all[start:]
			dst := make([]float32, rows*width+1)
			dst[rows*width] = 42
			DecodeF16Rows(dst[:rows*width], src, width, stride)
			require.Equal(t, float32(42), dst[rows*width], "%v wrote past dst", s)
			for r := range rows {
				for i := range width {
					h := src[r*stride+i]
					require.Equal(t, math.Float32bits(f16Table()[h]), math.Float32bits(dst[r*width+i]), "%v: %#04x", s, h)
				}
			}
		}
	}
}
