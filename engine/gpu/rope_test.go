package gpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wasmlm/wasmlm/engine/gpu"
)

// ropeTable is cos and sin of pos·theta^(-2i/rotDims) for every position
// and pair, as float32 values.
func ropeTable(context, rotDims int, theta float64) (cos, sin []float32) {
	half := rotDims / 2
	cos, sin = make([]float32, context*half), make([]float32, context*half)
	for pos := range context {
		for i := range half {
			angle := float64(pos) * math.Pow(theta, -float64(2*i)/float64(rotDims))
			cos[pos*half+i], sin[pos*half+i] = float32(math.Cos(angle)), float32(math.Sin(angle))
		}
	}
	return cos, sin
}

func TestRope(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const context = 40
	for _, c := range []struct {
		name                   string
		n, pos, heads, headDim int
		rotDims, style         int
	}{
		{"adjacent", 3, 5, 4, 16, 16, gpu.RopeAdjacent},
		{"halves", 2, 30, 3, 32, 32, gpu.RopeHalves},
		{"halves partial", 4, 36, 2, 32, 24, gpu.RopeHalves},
		{"adjacent partial", 1, 7, 5, 16, 8, gpu.RopeAdjacent},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			cos, sin := ropeTable(context, c.rotDims, 10000)
			table, err := gpu.NewRopeTable(e.host, cos, sin)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(table.Destroy)
			x := random(r, c.n*c.heads*c.headDim, 2)
			v := e.upload(x)
			op, err := gpu.NewRope(e.lib, e.pass, v, table, c.heads, c.headDim, c.rotDims, c.style)
			if err != nil {
				t.Fatal(err)
			}
			if err := op.Record(c.n, c.pos); err != nil {
				t.Fatal(err)
			}
			e.run()
			want, half := widen(x), c.rotDims/2
			for h := range c.n * c.heads {
				pos, at := c.pos+h/c.heads, h*c.headDim
				for i := range half {
					a, b := at+2*i, at+2*i+1
					if c.style == gpu.RopeHalves {
						a, b = at+i, at+i+half
					}
					co, s := float64(cos[pos*half+i]), float64(sin[pos*half+i])
					want[a], want[b] = float64(x[a])*co-float64(x[b])*s, float64(x[a])*s+float64(x[b])*co
				}
			}
			within(t, c.name, e.read(v, len(x)), want, 1e-6)
			if err := op.Record(2, context-1); err == nil {
				t.Error("positions past the table were recorded")
			}
		})
	}
}
