package engine

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSwigluOAI holds swigluOAI to the formula in float64 (gpt-oss's
// clamped SwiGLU: the gate capped at 7 above only, up clamped to ±7, the
// sigmoid's slope 1.702), on both sides of each clamp.
func TestSwigluOAI(t *testing.T) {
	gate := []float32{-9, -7.5, -1, -0.01, 0, 0.3, 2, 6.99, 7, 7.01, 12}
	up := []float32{-12, 8, -7, -0.5, 3, 0, 1.5, -6.5, 7.5, 100, -2}
	got := append([]float32(nil), gate...)
	swigluOAI(got, up)
	for i := range gate {
		x := math.Min(float64(gate[i]), 7)
		y := math.Max(math.Min(float64(up[i]), 7), -7)
		want := x / (1 + math.Exp(-1.702*x)) * (y + 1)
		assert.InDelta(t, want, got[i], 1e-5*math.Max(1, math.Abs(want)), "gate %v, up %v", gate[i], up[i])
	}
}
