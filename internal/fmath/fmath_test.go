package fmath

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func relErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Abs(want)
}

func TestExp64AgainstMath(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		x := (rng.Float64()*2 - 1) * 700
		if i%2 == 0 {
			x /= 100 // dense near zero, where softmax lives
		}
		require.LessOrEqual(t, relErr(Exp64(x), math.Exp(x)), 4e-16, "x=%v", x)
	}
}

func TestExpSpecialValues(t *testing.T) {
	tests := []struct {
		x, want float64
	}{
		{0, 1}, {math.Inf(1), math.Inf(1)}, {math.Inf(-1), 0}, {710, math.Inf(1)}, {-746, 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Exp64(tt.x), "Exp64(%v)", tt.x)
	}
	assert.InEpsilon(t, math.E, Exp64(1), 4e-16)
	assert.InEpsilon(t, 1.6549840276802644e+308, Exp64(709.7), 4e-16) // near overflow
	assert.Greater(t, Exp64(-745), 0.0)                               // smallest subnormal range
	assert.True(t, math.IsNaN(Exp64(math.NaN())))
	assert.Equal(t, float32(0), Exp(-200))
	assert.True(t, math.IsInf(float64(Exp(100)), 1))
}

func TestExp32WithinOneULP(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200000; i++ {
		x := float32((rng.Float64()*2 - 1) * 87)
		got := Exp(x)
		want := float32(math.Exp(float64(x)))
		diff := int64(math.Float32bits(got)) - int64(math.Float32bits(want))
		require.LessOrEqual(t, diff*diff, int64(1), "x=%v got %v want %v", x, got, want)
	}
}

func TestLog64AgainstMath(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 200000; i++ {
		x := math.Exp((rng.Float64()*2 - 1) * 700)
		want := math.Log(x)
		got := Log64(x)
		if math.Abs(want) < 1e-3 {
			require.InDelta(t, want, got, 1e-18, "x=%v", x)
			continue
		}
		require.LessOrEqual(t, relErr(got, want), 8e-16, "x=%v", x)
	}
	for _, x := range []float64{1, 2, 10000, 500000, 1e6, 0.5} {
		assert.InDelta(t, math.Log(x), Log64(x), 1e-15*math.Max(1, math.Abs(math.Log(x))), "x=%v", x)
	}
	assert.True(t, math.IsNaN(Log64(-1)))
	assert.True(t, math.IsInf(Log64(0), -1))
	assert.True(t, math.IsInf(Log64(math.Inf(1)), 1))
}

func BenchmarkExp(b *testing.B) {
	var s float32
	for i := 0; i < b.N; i++ {
		s += Exp(float32(i%64) * -0.25)
	}
	_ = s
}
