package tensor

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Differential fuzz targets, one per format: an arbitrary row (whole blocks
// of arbitrary bytes) dotted with an activation made from arbitrary bytes
// must never panic and must agree with naiveDot within dotTolerance whenever
// the reference is finite. The quantizer, fed the activation bytes as
// values, must never panic; for K-quants it must store the nearest grid
// point for every element (checkNearestGrid) and for the types with
// closed-form scales round-trip within one step (checkDequantize; blocks of magnitude ≥ 1, so
// that fp16 scales stay normal).

func FuzzDotF32(f *testing.F)  { fuzzDot(f, F32) }
func FuzzDotF16(f *testing.F)  { fuzzDot(f, F16) }
func FuzzDotBF16(f *testing.F) { fuzzDot(f, BF16) }
func FuzzDotQ8_0(f *testing.F) { fuzzDot(f, Q8_0) }
func FuzzDotQ4_0(f *testing.F) { fuzzDot(f, Q4_0) }
func FuzzDotQ4_1(f *testing.F) { fuzzDot(f, Q4_1) }
func FuzzDotQ5_0(f *testing.F) { fuzzDot(f, Q5_0) }
func FuzzDotQ5_1(f *testing.F) { fuzzDot(f, Q5_1) }
func FuzzDotQ2_K(f *testing.F) { fuzzDot(f, Q2_K) }
func FuzzDotQ3_K(f *testing.F) { fuzzDot(f, Q3_K) }
func FuzzDotQ4_K(f *testing.F) { fuzzDot(f, Q4_K) }
func FuzzDotQ5_K(f *testing.F) { fuzzDot(f, Q5_K) }
func FuzzDotQ6_K(f *testing.F) { fuzzDot(f, Q6_K) }

func FuzzDotMXFP4(f *testing.F) { fuzzDot(f, MXFP4) }

func fuzzDot(f *testing.F, typ Type) {
	l := layouts[typ]
	f.Add(make([]byte, l.blockBytes), []byte{1, 2, 3}, int8(0))
	f.Fuzz(func(t *testing.T, rowBytes, xBytes []byte, exp int8) {
		nb := min(len(rowBytes)/l.blockBytes, 4096/l.blockSize)
		if nb == 0 || len(xBytes) == 0 {
			return
		}
		cols := nb * l.blockSize
		row := alignedCopy(rowBytes[:nb*l.blockBytes])
		// x = int8 byte values times 2^exp (exp in [-40, 40]).
		x := make([]float32, cols)
		for i := range x {
			x[i] = float32(math.Ldexp(float64(int8(xBytes[i%len(xBytes)])), int(exp)%41))
		}

		tr := traitsTable[typ]
		a := encodeFor(typ, x)
		got := tr.dot(row, a)
		deq := make([]float32, cols)
		tr.dequantize(deq, row)
		want, mag := naiveDot(typ, row, a, cols)
		if !math.IsNaN(want) && mag < 1e30 {
			require.InDelta(t, want, float64(got), dotTolerance(typ, cols, mag))
		}

		// Round trip of the activation bytes as values (x / 2^exp · 1/8 ∈ [-16, 16)).
		for i := range x {
			x[i] = float32(int8(xBytes[i%len(xBytes)])) / 8
		}
		q := make([]byte, nb*l.blockBytes)
		require.NoError(t, Quantize(typ, q, x))
		switch typ {
		case F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, MXFP4:
			checkDequantize(t, typ, x, q, 1, typ.String())
		}
		if layouts[typ].blockSize == qkK {
			checkNearestGrid(t, typ, x, q, typ.String())
		}
	})
}

// FuzzDecodeF16Rows is the differential target of the F16 KV cache's
// decoder: rows of arbitrary F16 bits (every pattern: Inf, NaN payloads,
// subnormals), of any width and stride, decode to the bits of the table
// that f16ToF32 fills, field by field.
func FuzzDecodeF16Rows(f *testing.F) {
	f.Add([]byte{0, 0x3c, 0, 0xc0, 1, 0, 0xff, 0x7b, 0, 0x7c, 1, 0xfe}, uint8(2), uint8(3))
	f.Fuzz(func(t *testing.T, rowBytes []byte, width, stride uint8) {
		src := make([]uint16, min(len(rowBytes)/2, 4096))
		for i := range src {
			src[i] = uint16(rowBytes[2*i]) | uint16(rowBytes[2*i+1])<<8
		}
		w := int(width)%65 + 1
		s := max(int(stride)%130+1, w)
		if len(src) < w {
			return
		}
		rows := (len(src)-w)/s + 1
		dst := make([]float32, rows*w)
		DecodeF16Rows(dst, src, w, s)
		for r := range rows {
			for i := range w {
				h := src[r*s+i]
				require.Equal(t, math.Float32bits(f16ToF32(h)), math.Float32bits(dst[r*w+i]), "row %d, %#04x", r, h)
			}
		}
	})
}
