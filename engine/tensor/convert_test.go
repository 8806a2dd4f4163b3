package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestF16DecodeAll(t *testing.T) {
	for h := range 1 << 16 {
		got, want := f16ToF32(uint16(h)), naiveHalf(uint16(h))
		if math.IsNaN(want) {
			require.True(t, math.IsNaN(float64(got)), "%#04x", h)
			continue
		}
		require.Equal(t, want, float64(got), "%#04x", h)
		require.Equal(t, math.Float32bits(got), math.Float32bits(f16Table()[h]), "%#04x", h)
	}
}

// naiveToF16 rounds f to F16 by searching the sorted non-negative F16
// values for its neighbours: nearest wins, a tie goes to the even pattern.
// pos ends with 65536 at pattern 0x7c00 (Inf), where rounding past the
// largest finite value lands.
func naiveToF16(f float32, pos []float64) uint16 {
	sign := uint16(0)
	v := float64(f)
	if math.Signbit(v) {
		sign, v = 0x8000, -v
	}
	switch {
	case math.IsNaN(v):
		return sign | 0x7e00
	case v >= 65536:
		return sign | 0x7c00
	}
	i, _ := slices.BinarySearch(pos, v) // pos[i-1] < v <= pos[i]
	if pos[i] == v {
		return sign | uint16(i)
	}
	lo, hi := pos[i-1], pos[i]
	switch {
	case v-lo < hi-v:
		return sign | uint16(i-1)
	case v-lo > hi-v:
		return sign | uint16(i)
	case (i-1)%2 == 0:
		return sign | uint16(i-1)
	}
	return sign | uint16(i)
}

func TestF16Encode(t *testing.T) {
	pos := make([]float64, 0x7c01) // every finite non-negative F16, ascending with the pattern
	for h := range 0x7c00 {
		pos[h] = naiveHalf(uint16(h))
	}
	pos[0x7c00] = 65536
	check := func(f float32) {
		require.Equal(t, naiveToF16(f, pos), f32ToF16(f), "%g (%#08x)", f, math.Float32bits(f))
	}
	for h := range 0x7c00 {
		v := float32(pos[h])
		check(v)
		check(-v)
		check(math.Nextafter32(v, 0))
		check(math.Nextafter32(v, 1e9))
		if h+1 < len(pos) { // midpoints are exact in float32: ties
			check(float32((pos[h] + pos[h+1]) / 2))
		}
	}
	for _, f := range []float32{65519.99, 65520, 65536, 1e10, float32(math.Inf(1)), float32(math.Inf(-1)), 0x1p-25, 0x1p-26, 3 * 0x1p-26} {
		check(f)
		check(-f)
	}
	assert.Equal(t, uint16(0x7e00), f32ToF16(float32(math.NaN())))
	rng := rand.New(rand.NewPCG(6, 6))
	for range 200000 {
		check(math.Float32frombits(rng.Uint32()))
	}
}

// naiveToBF16 rounds f to BF16: of the two patterns around f (its top 16
// bits, truncated, and the next one) take the nearer, on a tie the even one.
func naiveToBF16(f float32) uint16 {
	switch {
	case math.IsNaN(float64(f)):
		return uint16(math.Float32bits(f)>>16) | 0x40
	case math.IsInf(float64(f), 0):
		return uint16(math.Float32bits(f) >> 16)
	}
	lo := uint16(math.Float32bits(f) >> 16)
	a, b := float64(bf16ToF32(lo)), float64(bf16ToF32(lo+1))
	v := float64(f)
	if math.IsInf(b, 0) && !math.IsInf(v, 0) {
		b = math.Copysign(0x1p128, v) // the value past the largest finite
	}
	switch da, db := math.Abs(v-a), math.Abs(b-v); {
	case da < db, da == db && lo%2 == 0:
		return lo
	}
	return lo + 1
}

func TestBF16Encode(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 500000 {
		b := rng.Uint32()
		if i%4 == 0 {
			b = b&^0xffff | 0x8000 // a tie
		}
		f := math.Float32frombits(b)
		require.Equal(t, naiveToBF16(f), f32ToBF16(f), "%#08x", b)
	}
	for _, f := range []float32{0, 1, -1, math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1))} {
		assert.Equal(t, naiveToBF16(f), f32ToBF16(f), "%g", f)
	}
	assert.Equal(t, float32(1), bf16ToF32(f32ToBF16(1)))
}

// TestEncodeQ8 checks the Q8_0/Q8_1 activation encoding against its
// definition: d = fp16(max|x|/127), each q within half a level of
// x·127/max|x| (ties to even aside, which the float32 product decides), the
// largest magnitude at ±127, sum = Σq and s = fp16(d·Σq).
func TestEncodeQ8(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for trial := range 50 {
		x := randNormal(rng, 96, math.Ldexp(1, trial%20-10))
		if trial == 0 {
			clear(x[32:64]) // an all-zero block
		}
		ws := NewWorkspace(len(x))
		a := ws.encode(Q8_1, x)
		for b := range 3 {
			xb, q := x[32*b:32*b+32], a.q[32*b:32*b+32]
			var amax float64
			for _, v := range xb {
				amax = max(amax, math.Abs(float64(v)))
			}
			require.Equal(t, roundHalf(float32(amax)/127), a.d[b])
			var sum int32
			for i, v := range xb {
				sum += int32(q[i])
				if amax == 0 {
					require.Zero(t, q[i])
					continue
				}
				require.InDelta(t, float64(v)*127/amax, float64(q[i]), 0.5+1e-5)
				if math.Abs(float64(v)) == amax {
					require.Equal(t, 127, int(math.Abs(float64(q[i]))))
				}
			}
			require.Equal(t, sum, a.sum[b])
			require.Equal(t, roundHalf(float32(amax)/127*float32(sum)), a.s[b])
		}
		a0 := ws.encode(Q8_0, x)
		require.Equal(t, a.q[:96], a0.q[:96])
	}
}

// TestEncodeQ8K checks the Q8_K encoding against quantize_row_q8_K_ref's
// definition: the first element of largest magnitude maps to -127, each q is
// the integer nearest x·(-127/max) (capped at 127), d = 1/(-127/max), and
// bsums are the sums of 16 quants.
func TestEncodeQ8K(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := range 50 {
		x := randNormal(rng, 512, math.Ldexp(1, trial%20-10))
		if trial == 0 {
			clear(x[256:])
		}
		a := NewWorkspace(len(x)).encode(Q8_K, x)
		for b := range 2 {
			xb, q := x[256*b:256*b+256], a.q[256*b:256*b+256]
			imax := 0
			for i, v := range xb {
				if math.Abs(float64(v)) > math.Abs(float64(xb[imax])) {
					imax = i
				}
			}
			if xb[imax] == 0 {
				require.Zero(t, a.d[b])
				require.Equal(t, make([]int8, 256), q)
				continue
			}
			iscale := -127 / xb[imax]
			require.Equal(t, 1/iscale, a.d[b])
			require.Equal(t, int8(-127), q[imax])
			for i, v := range xb {
				want := min(127, math.RoundToEven(float64(float32(iscale*v))))
				require.Equal(t, want, float64(q[i]), "element %d", i)
			}
			for j := range 16 {
				var s int16
				for _, v := range q[16*j : 16*j+16] {
					s += int16(v)
				}
				require.Equal(t, s, a.bsums[16*b+j])
			}
		}
	}
}

// TestQuantizeRoundTrip: for every type, the quantizer's output decodes to
// within one quantization step of the input (the bound of checkDequantize),
// on Gaussian rows of several scales. For Q2_K, Q3_K, Q5_K and BF16, which
// no llama.cpp file here holds, this is the main check of the quantizer.
func TestQuantizeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	for _, typ := range kernelTypes {
		if typ == F32 {
			continue
		}
		t.Run(typ.String(), func(t *testing.T) {
			for trial := range 20 {
				cols := testCols(typ)[trial%len(testCols(typ))]
				x := randNormal(rng, cols, math.Ldexp(1, trial%10-8))
				rb, err := RowBytes(typ, cols)
				require.NoError(t, err)
				row := make([]byte, rb)
				require.NoError(t, Quantize(typ, row, x))
				checkDequantize(t, typ, x, row, 0, typ.String())
				if layouts[typ].blockSize == qkK {
					checkNearestGrid(t, typ, x, row, typ.String())
				}
			}
		})
	}
}
