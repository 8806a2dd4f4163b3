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
// pure-Go Softmax and SoftmaxRows, bit for bit: every length of the vector loops' tails,
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
				// Three rows in one call: x, x reversed, x halved.
				rows := append([]float32(nil), x...)
				for i := range x {
					rows = append(rows, x[n-1-i])
				}
				for i := range x {
					rows = append(rows, x[i]/2)
				}
				want, got = append([]float32(nil), rows...), append([]float32(nil), rows...)
				pureGo(func() { SoftmaxRows(want, n, scale) })
				SoftmaxRows(got, n, scale)
				requireSameBitsOrNaN(t, want, got, fmt.Sprintf("3 rows of %d, kind %d scale %g", n, kind, scale))
			}
		}
	}
}

// roundingCorpus is every float32 whose low 13 bits are one of the
// patterns that decide a rounding to F16 (and whose sign, exponent and top
// mantissa bits are any), then random ones, 4099 of them (a tail the
// kernels leave to Go).
func roundingCorpus() []float32 {
	low := []uint32{0, 1, 0x7ff, 0xfff, 0x1000, 0x1001, 0x17ff, 0x1fff}
	x := make([]float32, 0, len(low)<<19+4099)
	for hi := range uint32(1 << 19) {
		for _, l := range low {
			x = append(x, math.Float32frombits(hi<<13|l))
		}
	}
	rng := rand.New(rand.NewPCG(37, 37))
	for range 4099 {
		x = append(x, math.Float32frombits(rng.Uint32()))
	}
	return x
}

// TestSIMDGELUMatchesPureGo checks the GELU kernel's rounding to F16 and
// lookup against the pure-Go GELUByTable with a table whose entries are
// all different (so every lane's F16 bits show), over roundingCorpus.
func TestSIMDGELUMatchesPureGo(t *testing.T) {
	needSIMD(t)
	table := new([1 << 16]float32)
	for h := range table {
		table[h] = float32(h) + 0.5
	}
	x := roundingCorpus()
	want, got := append([]float32(nil), x...), append([]float32(nil), x...)
	pureGo(func() { GELUByTable(want, table) })
	GELUByTable(got, table)
	requireSameBitsOrNaN(t, want, got)
}

// TestSIMDF16RoundingMatchesPureGo checks the kernels of RoundF16 and
// EncodeF16 against the pure-Go loops over roundingCorpus: the same F16
// bits, the same float32 values (NaNs included: their F16 is 0x7e00).
func TestSIMDF16RoundingMatchesPureGo(t *testing.T) {
	needSIMD(t)
	x := roundingCorpus()
	want, got := make([]float32, len(x)), make([]float32, len(x))
	pureGo(func() { RoundF16(want, x) })
	RoundF16(got, x)
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("RoundF16 of %#08x: want %#08x, got %#08x", math.Float32bits(x[i]), math.Float32bits(want[i]), math.Float32bits(got[i]))
		}
	}
	wantH, gotH := make([]uint16, len(x)), make([]uint16, len(x))
	pureGo(func() { EncodeF16(wantH, x) })
	EncodeF16(gotH, x)
	require.Equal(t, wantH, gotH)
}

// TestSIMDAddAndLayerNormMatchPureGo checks the kernels of Add and
// LayerNorm against the pure-Go loops: every tail length, model widths,
// values at several spreads, a constant row (zero variance).
func TestSIMDAddAndLayerNormMatchPureGo(t *testing.T) {
	needSIMD(t)
	rng := rand.New(rand.NewPCG(41, 41))
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 39, 40, 41, 384, 768, 1001} {
		for kind := range 4 {
			row := func() []float32 {
				x := make([]float32, n)
				for i := range x {
					if kind == 3 {
						x[i] = 0.75
					} else {
						x[i] = float32(rng.NormFloat64()*math.Pow(2, float64(8*kind-6))) + float32(kind)
					}
				}
				return x
			}
			x, src, weight, bias := row(), row(), row(), row()
			msg := fmt.Sprintf("n %d kind %d", n, kind)
			want, got := append([]float32(nil), x...), append([]float32(nil), x...)
			pureGo(func() { Add(want, src) })
			Add(got, src)
			requireSameBitsOrNaN(t, want, got, "Add", msg)
			for _, eps := range []float32{1e-12, 1e-5} {
				pureGo(func() { LayerNorm(want, weight, bias, eps) })
				LayerNorm(got, weight, bias, eps)
				requireSameBitsOrNaN(t, want, got, "LayerNorm", msg, eps)
			}
		}
	}
}

// TestSIMDSwiGLUMatchesPureGo checks the SwiGLU kernel against the pure-Go
// loop, bit for bit: gates across every float32 exponent (one bit pattern
// in 4093, so both signs, subnormals, infinities and NaNs), the arguments
// where e^−g leaves float32's range (±89, ±110 and beyond), and up values
// of every kind; lengths that leave a tail to Go.
func TestSIMDSwiGLUMatchesPureGo(t *testing.T) {
	needSIMD(t)
	var gate []float32
	for b := uint64(0); b < 1<<32; b += 4093 {
		gate = append(gate, math.Float32frombits(uint32(b)))
	}
	for _, v := range []float32{0, 1, -1, 88, 88.7, 89, 89.5, 103, 104, 109.9, 110, 111, 1e4, 3e38} {
		gate = append(gate, v, -v, math.Nextafter32(v, 0), -math.Nextafter32(v, 200))
	}
	rng := rand.New(rand.NewPCG(41, 41))
	up := make([]float32, len(gate))
	for i := range up {
		switch i % 5 {
		case 0:
			up[i] = float32(rng.NormFloat64())
		case 1:
			up[i] = math.Float32frombits(rng.Uint32())
		case 2:
			up[i] = [4]float32{0, float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40}[rng.IntN(4)]
		default:
			up[i] = float32(rng.NormFloat64() * 8)
		}
	}
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 17, len(gate)} {
		for at := 0; at+n <= len(gate); at += max(n, len(gate)/7) {
			want, got := append([]float32(nil), gate[at:at+n]...), append([]float32(nil), gate[at:at+n]...)
			pureGo(func() { SwiGLU(want, up[at:at+n]) })
			SwiGLU(got, up[at:at+n])
			requireSameBitsOrNaN(t, want, got, fmt.Sprintf("n %d at %d", n, at))
		}
	}
}

// BenchmarkSwiGLU times SwiGLU over a 32-token prompt block of
// TinyLlama-1.1B's hidden units (32 × 5632), on the kernel and on the
// pure-Go loop.
func BenchmarkSwiGLU(b *testing.B) {
	rng := rand.New(rand.NewPCG(43, 43))
	gate, up := make([]float32, 32*5632), make([]float32, 32*5632)
	for i := range gate {
		gate[i], up[i] = float32(rng.NormFloat64()*2), float32(rng.NormFloat64())
	}
	work := make([]float32, len(gate))
	for _, simd := range []bool{true, false} {
		b.Run(map[bool]string{true: "kernel", false: "pure-Go"}[simd], func(b *testing.B) {
			defer func(was bool) { useSIMD = was }(useSIMD)
			useSIMD = useSIMD && simd
			b.SetBytes(int64(8 * len(gate)))
			for b.Loop() {
				copy(work, gate)
				SwiGLU(work, up)
			}
		})
	}
}
