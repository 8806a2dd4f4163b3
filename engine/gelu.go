package engine

import (
	"math"
	"sync"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// GELU as llama.cpp computes it on the CPU, which gemma's feed-forward is
// held to. ggml's CPU backend does not evaluate GELU's tanh approximation,
// 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²))), for each value: it builds
// a table of it at every F16 value once (ggml_table_gelu_f16, the result
// rounded to F16 too) and, for |x| < 10, looks up x rounded to F16 (vec.h
// defines GGML_GELU_FP16 unconditionally); below -10 GELU is 0, from 10 on
// x. The F16 roundings move a unit by up to a few 1e-4 of its value, far
// more than float32 arithmetic would, so the engine keeps the same table.
//
// ggml computes the table's entries in float32, with tanhf and, in its
// builds for CPUs with FMA (every x86-64 build above the baseline, which
// is what llama.cpp loads on any CPU of the last ten years), 1 + a·x·x
// fused into one multiply-add; geluF32 does the same. The baseline builds'
// table (no FMA) differs in one entry, at x = -1.9990234.

// geluTable is ggml_table_gelu_f16 of ggml's FMA builds, decoded: entry h is
// GELU at the F16 value of bits h, rounded to F16. Built at its first use.
var geluTable = sync.OnceValue(func() *[1 << 16]float32 {
	var bits [1 << 16]uint16
	for i := range bits {
		bits[i] = uint16(i)
	}
	t := new([1 << 16]float32)
	tensor.DecodeF16(t[:], bits[:])
	for i, x := range t {
		t[i] = geluF32(x)
	}
	tensor.EncodeF16(bits[:], t[:])
	tensor.DecodeF16(t[:], bits[:])
	return t
})

// geluF32 is ggml_gelu_f32 as ggml's FMA builds compile it: float32
// arithmetic, the inner 1 + (a·x)·x one fused multiply-add.
func geluF32(x float32) float32 {
	const (
		a           = float32(0.044715)
		sqrt2OverPi = float32(0.79788456080286535587989211986876)
	)
	inner := float32(math.FMA(float64(float32(a*x)), float64(x), 1))
	t := float32(math.Tanh(float64(float32(float32(sqrt2OverPi*x) * inner))))
	return float32(0.5*x) * (1 + t)
}

// geluInPlace sets x = GELU(x), as ggml_vec_gelu_f32 computes it (see
// geluTable): bert's feed-forward.
func geluInPlace(x []float32) {
	tensor.GELUByTable(x, geluTable())
}

// geglu sets gate = GELU(gate) ⊙ up, as ggml_vec_geglu_f32 computes it
// (see geluTable).
func geglu(gate, up []float32) {
	t := geluTable()
	up = up[:len(gate)]
	var half [64]uint16 // gate rounded to F16, a run at a time
	for at := 0; at < len(gate); at += len(half) {
		g := gate[at:min(len(gate), at+len(half))]
		u, h := up[at:at+len(g)], half[:len(g)]
		tensor.EncodeF16(h, g)
		for i, x := range g {
			switch {
			case x <= -10:
				g[i] = 0
			case x >= 10:
				g[i] = x * u[i]
			default:
				g[i] = t[h[i]] * u[i]
			}
		}
	}
}
