package tensor

import "github.com/wasmlm/wasmlm/internal/fmath"

// SwiGLU sets gate[i] = SiLU(gate[i])·up[i], with SiLU(g) = g/(1 + e^−g)
// in float32 and e^x fmath.Exp's: the gated unit of a llama-style
// feed-forward. up must be at least as long as gate. Natively on amd64 a
// kernel computes eight values at a time with the same bits, and with the
// wasmlm_simd kernels one computes four at a time.
func SwiGLU(gate, up []float32) {
	up = up[:len(gate)]
	n := swiGLUSIMD(gate, up)
	swiGLUGo(gate[n:], up[n:])
}

func swiGLUGo(gate, up []float32) {
	up = up[:len(gate)]
	for i, g := range gate {
		gate[i] = float32(g/(1+fmath.Exp(-g))) * up[i]
	}
}

// ExpShifted sets x[i] = e^(x[i] − shift), the difference in float32 and
// e^x fmath.Exp's: a softmax's exponentials. Natively on amd64 a kernel
// computes eight values at a time with the same bits.
func ExpShifted(x []float32, shift float32) {
	n := expShiftedNative(x, shift)
	expShiftedGo(x[n:], shift)
}

func expShiftedGo(x []float32, shift float32) {
	for i, v := range x {
		x[i] = fmath.Exp(v - shift)
	}
}
