package gpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// rmsNorm64 is weight ⊙ x / √(mean(x²) + eps) over each group of width
// values of x.
func rmsNorm64(x, weight []float32, width int, eps float64) []float64 {
	out := make([]float64, len(x))
	for at := 0; at < len(x); at += width {
		var ss float64
		for _, v := range x[at : at+width] {
			ss += float64(v) * float64(v)
		}
		scale := 1 / math.Sqrt(ss/float64(width)+eps)
		for i := range width {
			out[at+i] = float64(weight[i]) * scale * float64(x[at+i])
		}
	}
	return out
}

func TestRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		name          string
		n, width      int
		heads         int // 0: a row norm
		inPlace, ggml bool
	}{
		{name: "rows", n: 3, width: 288},
		{name: "rows ggml in place", n: 2, width: 600, inPlace: true, ggml: true},
		{name: "one row narrower than a workgroup", n: 1, width: 100},
		{name: "heads", n: 3, width: 32, heads: 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			groups := max(c.heads, 1)
			x, weight := random(r, c.n*groups*c.width, 3), random(r, c.width, 1.5)
			in, w := e.upload(x), e.upload(weight)
			out := in
			if !c.inPlace && c.heads == 0 {
				out = e.zeros(len(x))
			}
			var op interface{ Record(int) error }
			var err error
			if c.heads > 0 {
				op, err = gpu.NewHeadsRMSNorm(e.lib, e.pass, in, w, c.width, c.heads, 1e-6)
			} else {
				op, err = gpu.NewRMSNorm(e.lib, e.pass, out, in, w, c.width, 1e-6, c.ggml)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := op.Record(c.n); err != nil {
				t.Fatal(err)
			}
			e.run()
			within(t, c.name, e.read(out, len(x)), rmsNorm64(x, weight, c.width, 1e-6), 2e-6)
		})
	}
}

func TestLayerNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	e := newEnv(t)
	const n, width = 3, 300
	x, weight, bias := random(r, n*width, 3), random(r, width, 1.5), random(r, width, 1)
	for i := range x {
		x[i] += 2 // a mean far from 0
	}
	in := e.upload(x)
	op, err := gpu.NewLayerNorm(e.lib, e.pass, in, e.upload(weight), e.upload(bias), width, 1e-12)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Record(n); err != nil {
		t.Fatal(err)
	}
	e.run()
	want := make([]float64, len(x))
	for at := 0; at < len(x); at += width {
		var sum, sum2 float64
		for _, v := range x[at : at+width] {
			sum += float64(v)
		}
		mean := sum / width
		for _, v := range x[at : at+width] {
			sum2 += (float64(v) - mean) * (float64(v) - mean)
		}
		scale := 1 / math.Sqrt(sum2/width+1e-12)
		for i := range width {
			want[at+i] = (float64(x[at+i])-mean)*scale*float64(weight[i]) + float64(bias[i])
		}
	}
	got := e.read(in, len(x))
	within(t, "layernorm", got, want, 2e-6)
	for at := 0; at < len(x); at += width {
		tensor.LayerNorm(x[at:at+width], weight, bias, 1e-12)
	}
	within(t, "layernorm against tensor.LayerNorm", got, widen(x), 2e-6)
}

func TestAddRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	e := newEnv(t)
	const n, width = 3, 300
	x, add, weight := random(r, n*width, 3), random(r, n*width, 3), random(r, width, 1.5)
	xb, out := e.upload(x), e.zeros(n*width)
	op, err := gpu.NewAddRMSNorm(e.lib, e.pass, out, xb, e.upload(add), e.upload(weight), width, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Record(n); err != nil {
		t.Fatal(err)
	}
	e.run()
	sum := make([]float32, len(x))
	for i := range x {
		sum[i] = x[i] + add[i]
	}
	within(t, "x + add", e.read(xb, len(x)), widen(sum), 1e-7)
	within(t, "rmsnorm(x + add)", e.read(out, len(x)), rmsNorm64(sum, weight, width, 1e-5), 2e-6)
	if _, err := gpu.NewAddRMSNorm(e.lib, e.pass, xb, xb, out, e.upload(weight), width, 1e-5); err == nil {
		t.Error("out = x was accepted")
	}
}
