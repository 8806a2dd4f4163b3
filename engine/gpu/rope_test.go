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

// rotate64 rotates the heads of n rows of x at positions pos.. in float64
// with the table's values.
func rotate64(x, cos, sin []float32, n, pos, heads, headDim, rotDims, style int) []float64 {
	want, half := widen(x), rotDims/2
	for h := range n * heads {
		p, at := pos+h/heads, h*headDim
		for i := range half {
			a, b := at+2*i, at+2*i+1
			if style == gpu.RopeHalves {
				a, b = at+i, at+i+half
			}
			co, s := float64(cos[p*half+i]), float64(sin[p*half+i])
			want[a], want[b] = float64(x[a])*co-float64(x[b])*s, float64(x[a])*s+float64(x[b])*co
		}
	}
	return want
}

func TestRope(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const context = 40
	for _, c := range []struct {
		name                   string
		n, pos, heads, headDim int
		rotDims, style         int
		kvHeads                int // > 0: the keys too, in the same dispatch (NewRopeQK)
	}{
		{"adjacent", 3, 5, 4, 16, 16, gpu.RopeAdjacent, 0},
		{"halves", 2, 30, 3, 32, 32, gpu.RopeHalves, 0},
		{"halves partial", 4, 36, 2, 32, 24, gpu.RopeHalves, 0},
		{"adjacent partial", 1, 7, 5, 16, 8, gpu.RopeAdjacent, 0},
		{"queries and keys", 3, 20, 6, 16, 16, gpu.RopeHalves, 2},
		{"queries and keys partial", 2, 11, 4, 32, 16, gpu.RopeAdjacent, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			cos, sin := ropeTable(context, c.rotDims, 10000)
			table, err := gpu.NewRopeTable(e.host, cos, sin)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(table.Destroy)
			x, y := random(r, c.n*c.heads*c.headDim, 2), random(r, c.n*c.kvHeads*c.headDim, 2)
			v, k := e.upload(x), e.upload(y)
			var op *gpu.Rope
			if c.kvHeads > 0 {
				op, err = gpu.NewRopeQK(e.lib, e.pass, v, k, table, c.heads, c.kvHeads, c.headDim, c.rotDims, c.style)
			} else {
				op, err = gpu.NewRope(e.lib, e.pass, v, table, c.heads, c.headDim, c.rotDims, c.style)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := op.Record(c.n, c.pos); err != nil {
				t.Fatal(err)
			}
			e.run()
			within(t, c.name, e.read(v, len(x)), rotate64(x, cos, sin, c.n, c.pos, c.heads, c.headDim, c.rotDims, c.style), 1e-6)
			if c.kvHeads > 0 {
				within(t, c.name+" keys", e.read(k, len(y)), rotate64(y, cos, sin, c.n, c.pos, c.kvHeads, c.headDim, c.rotDims, c.style), 1e-6)
			}
			if err := op.Record(2, context-1); err == nil {
				t.Error("positions past the table were recorded")
			}
		})
	}
}
