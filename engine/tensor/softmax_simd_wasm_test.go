//go:build js && wasm && wasmlm_simd

package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// pureGo runs f on the pure-Go loops, the SIMD kernels off.
func pureGo(f func()) {
	defer func(was bool) { useSIMD = was }(useSIMD)
	useSIMD = false
	f()
}

// requireSameBitsOrNaN fails unless got and want hold the same bits, a
// NaN matching any NaN (WebAssembly does not fix a NaN's payload).
func requireSameBitsOrNaN(t *testing.T, want, got []float32, msgAndArgs ...any) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		if want[i] != want[i] && got[i] != got[i] {
			continue
		}
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			require.Failf(t, "different bits", "at %d of %d: want %g (%#08x), got %g (%#08x) %v",
				i, len(want), want[i], math.Float32bits(want[i]), got[i], math.Float32bits(got[i]), msgAndArgs)
		}
	}
}

// TestSIMDSoftmaxMatchesPureGo checks the softmax kernel against the
// pure-Go Softmax, bit for bit: every length of the vector loops' tails,
// attention-like scores at several spreads and scales, exponentials that
// underflow to zero, masked (-Inf) and infinite scores, ±0.
func TestSIMDSoftmaxMatchesPureGo(t *testing.T) {
	needSIMD(t)
	rng := rand.New(rand.NewPCG(31, 31))
	lengths := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 257, 1000}
	for _, n := range lengths {
		for kind := range 7 {
			for _, scale := range []float32{1, 0.17677669, 0.125, 3} {
				x := make([]float32, n)
				for i := range x {
					switch kind {
					case 0, 1, 2: // spreads of 2^-6, 2^2, 2^10
						x[i] = float32(rng.NormFloat64() * math.Pow(2, float64(8*kind-6)))
					case 3: // differences across the whole range of e^x, and past it
						x[i] = -float32(rng.Float64() * 140)
					case 4: // masked positions, zeros
						x[i] = [4]float32{float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), float32(rng.NormFloat64())}[rng.IntN(4)]
					case 5: // an infinite score
						x[i] = float32(rng.NormFloat64())
						if i == n/2 {
							x[i] = float32(math.Inf(1))
						}
					case 6: // huge scores whose scaled products overflow
						x[i] = float32(rng.NormFloat64() * 1e38)
					}
				}
				want, got := append([]float32(nil), x...), append([]float32(nil), x...)
				pureGo(func() { Softmax(want, scale) })
				Softmax(got, scale)
				requireSameBitsOrNaN(t, want, got, fmt.Sprintf("n %d kind %d scale %g", n, kind, scale))
			}
		}
	}
}

// TestSIMDGELUMatchesPureGo checks the GELU kernel's rounding to F16 and
// lookup against the pure-Go GELUByTable with a table whose entries are
// all different (so every lane's F16 bits show), over every float32 whose
// low 13 bits are one of the patterns that decide a rounding (and the
// sign, exponent and top mantissa bits all of them), and random ones.
func TestSIMDGELUMatchesPureGo(t *testing.T) {
	needSIMD(t)
	table := new([1 << 16]float32)
	for h := range table {
		table[h] = float32(h) + 0.5
	}
	low := []uint32{0, 1, 0x7ff, 0xfff, 0x1000, 0x1001, 0x17ff, 0x1fff}
	x := make([]float32, 0, len(low)<<19+4099)
	for hi := range uint32(1 << 19) {
		for _, l := range low {
			x = append(x, math.Float32frombits(hi<<13|l))
		}
	}
	rng := rand.New(rand.NewPCG(37, 37))
	for range 4099 { // and a tail the kernel leaves to Go
		x = append(x, math.Float32frombits(rng.Uint32()))
	}
	want, got := append([]float32(nil), x...), append([]float32(nil), x...)
	pureGo(func() { GELUByTable(want, table) })
	GELUByTable(got, table)
	requireSameBitsOrNaN(t, want, got)
}
