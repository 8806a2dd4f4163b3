package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNativeKernelsAreBitIdentical: each native eight-row kernel gives the
// pure-Go dot kernel's bits on every row (any NaN for a NaN of the float
// types' random rows, whose NaN weights meet in a different order): for random rows and rows the
// quantizer cannot write (every quant −128, 127 or random bytes), with
// activations from the encoder and with quants at the ends of the range the
// encoder writes (±127: it never writes −128), over 1 to 200 blocks.
func TestNativeKernelsAreBitIdentical(t *testing.T) {
	if !NativeSIMD() {
		if cpuHasNativeSIMD() && os.Getenv("CI") != "" {
			t.Fatal("the CPU has the native kernels' instructions (AVX2 and F16C, or NEON) but they are off")
		}
		// A CPU without them is not something CI can install.
		t.Skip("no native SIMD kernels here (not amd64 with AVX2 and F16C nor arm64, or purego)")
	}
	rng := rand.New(rand.NewPCG(40, 2))
	quants := []func(i int) int8{
		nil, // the encoder's
		func(int) int8 { return 127 },
		func(int) int8 { return -127 },
		func(i int) int8 { return int8(-127 + 254*(i&1)) },
		func(int) int8 { return int8(rng.IntN(255) - 127) },
	}
	for _, typ := range []Type{Q8_0, Q4_0, Q5_0, Q4_K, Q6_K, MXFP4, F32, F16, BF16} {
		if !hasRows8(typ) {
			continue // no kernel for it on this architecture
		}
		tr := traitsTable[typ]
		for _, nb := range []int{1, 2, 7, 64, 200} {
			cols := nb * layouts[typ].blockSize
			rb, err := RowBytes(typ, cols)
			require.NoError(t, err)
			for _, fill := range append([]int{-2}, extremeFills...) {
				t.Run(fmt.Sprintf("%v/%d-blocks/fill-%d", typ, nb, fill), func(t *testing.T) {
					const rows = 8 + 3
					m := randomMatrix(t, rng, typ, rows, cols)
					if fill != -2 {
						m = matrixOfRows(t, typ, rows, cols, func(int) []byte { return extremeRow(rng, typ, rb, fill, true) })
					}
					for qi, q := range quants {
						a := activationWith(rng, tr.vec, cols, func(int) int8 { return 0 })
						if q != nil {
							setQuants(&a, tr.vec, cols, q)
						} else {
							x := randNormal(rng, cols, 1)
							a = *NewWorkspace(cols).encode(tr.vec, x)
						}
						if interleaves(typ) {
							requireInterleavedBits(t, m, &a, qi)
						}
						// Each row's pure-Go dot once: the eight-row windows overlap.
						var wants [rows]float32
						for r := range wants {
							wants[r] = tr.dot(m.Data[r*rb:(r+1)*rb], &a)
						}
						for r0 := 0; r0+8 <= rows; r0++ {
							var got [8]float32
							require.True(t, dotRows8(got[:], m, r0, &a), "an eight-row kernel for %v", typ)
							for i := range got {
								r := r0 + i
								want := wants[r]
								if isFloat(typ) && isNaN32(got[i]) && isNaN32(want) {
									continue // which NaN's payload comes out depends on the order of the sums (see floatRows8)
								}
								if math.Float32bits(got[i]) != math.Float32bits(want) {
									t.Fatalf("quants %d, row %d: %v (%#x), pure Go %v (%#x)", qi, r, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
								}
							}
						}
					}
				})
			}
		}
	}
}

// requireInterleavedBits checks the interleaved kernels (both forms where
// the CPU has the fast one: AVX-512 VNNI, arm64's dot product) on m's first eight rows, packed, against the
// pure-Go kernel.
func requireInterleavedBits(t *testing.T, m *Matrix, a *activation, qi int) {
	t.Helper()
	rb := m.rowBytes
	packed, err := NewMatrix(m.Type, 8, m.Cols, slices.Clone(m.Data[:8*rb]))
	require.NoError(t, err)
	require.True(t, Pack(packed))
	require.True(t, packed.rows8, "interleaved")
	vnni := nativeFast
	defer func() { nativeFast = vnni }()
	for _, on := range []bool{false, vnni} {
		nativeFast = on
		var got [8]float32
		require.True(t, dotRows8(got[:], packed, 0, a))
		for r := range got {
			want := m.tr.dot(m.Data[r*rb:(r+1)*rb], a)
			if math.Float32bits(got[r]) != math.Float32bits(want) {
				t.Fatalf("interleaved (fast form %v), quants %d, row %d: %v (%#x), pure Go %v (%#x)", on, qi, r, got[r], math.Float32bits(got[r]), want, math.Float32bits(want))
			}
		}
	}
}

// TestNativeF16RoundingIsPureGo: EncodeF16 and RoundF16, which run on F16C
// natively eight values at a time, give f32ToF16's bits for values around
// every F16 (each F16's float32 value, its neighbours, the ties halfway to
// the next), random bit patterns, and NaNs with any payload.
func TestNativeF16RoundingIsPureGo(t *testing.T) {
	var src []float32
	for h := range 1 << 16 {
		f := f16Table()[h]
		b := math.Float32bits(f)
		src = append(src, f, math.Float32frombits(b+1), math.Float32frombits(b-1), math.Float32frombits(b+1<<12), math.Float32frombits(b+1<<12+1))
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 1 << 18 {
		src = append(src, math.Float32frombits(rng.Uint32()))
	}
	src = append(src, math.Float32frombits(0x7f800001), math.Float32frombits(0xffbfffff), float32(math.NaN()))
	src = src[:len(src)&^7]
	enc, round := make([]uint16, len(src)+3), make([]float32, len(src)+3)
	EncodeF16(enc[:len(src)+3], append(slices.Clone(src), 1, 2, 3))
	RoundF16(round[:len(src)+3], append(slices.Clone(src), 1, 2, 3))
	for i, v := range src {
		want := f32ToF16(v)
		if enc[i] != want {
			t.Fatalf("EncodeF16(%#x) = %#04x, f32ToF16 %#04x", math.Float32bits(v), enc[i], want)
		}
		if math.Float32bits(round[i]) != math.Float32bits(f16Table()[want]) {
			t.Fatalf("RoundF16(%#x) = %#x, want %#x", math.Float32bits(v), math.Float32bits(round[i]), math.Float32bits(f16Table()[want]))
		}
	}
}

// isFloat reports whether t stores plain floats (F32, F16, BF16).
func isFloat(t Type) bool { return t == F32 || t == F16 || t == BF16 }

func isNaN32(f float32) bool { return f != f }

// TestSwiGLUIsPureGo: SwiGLU, which runs on AVX2 natively, gives the
// pure-Go loop's bits for random gates over the whole float32 range and
// near its kernel's limit (|g| = 700), zeros, infinities and NaNs mixed in
// (the eight values around one of them take the Go loop), and lengths that
// are no multiple of 8.
func TestSwiGLUIsPureGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	var gates []float32
	for range 1 << 16 {
		gates = append(gates, float32(rng.NormFloat64()*4), float32(rng.NormFloat64()*100), math.Float32frombits(rng.Uint32()))
	}
	for _, v := range []float32{0, float32(math.Copysign(0, -1)), 699.99994, 700, -700, 88.7, -88.7, 104, -104, 1e-40, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		gates = append(gates, v, -v)
	}
	ups := make([]float32, len(gates))
	for i := range ups {
		ups[i] = float32(rng.NormFloat64())
	}
	for _, n := range []int{len(gates), len(gates) - 3, 7, 8, 9} {
		got, want := slices.Clone(gates[:n]), slices.Clone(gates[:n])
		SwiGLU(got, ups)
		swiGLUGo(want, ups)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: SwiGLU(%v (%#x), %v) = %v (%#x), pure Go %v (%#x)", n, gates[i], math.Float32bits(gates[i]), ups[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
}

// TestExpShiftedIsPureGo: ExpShifted, on AVX2 natively, gives the pure-Go
// loop's bits for the gates of TestSwiGLUIsPureGo shifted by several
// maxima, as a softmax shifts its scores.
func TestExpShiftedIsPureGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var xs []float32
	for range 1 << 16 {
		xs = append(xs, float32(rng.NormFloat64()*4), float32(rng.NormFloat64()*100), math.Float32frombits(rng.Uint32()))
	}
	for _, v := range []float32{0, 699.99994, 700, -700, 88.7, -104, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		xs = append(xs, v, -v)
	}
	for _, shift := range []float32{0, 3.5, -20, 650} {
		for _, n := range []int{len(xs), len(xs) - 5, 8, 9} {
			got, want := slices.Clone(xs[:n]), slices.Clone(xs[:n])
			ExpShifted(got, shift)
			expShiftedGo(want, shift)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("shift %v, n=%d: Exp(%v − shift) = %v (%#x), pure Go %v (%#x)", shift, n, xs[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}
	}
}
