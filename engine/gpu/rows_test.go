package gpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// gelu64 is GELU's tanh approximation in float64.
func gelu64(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*x*(1+0.044715*x*x)))
}

// roundF16 is x (through float32) rounded to the nearest F16, ties to
// even, as the engine rounds it (tensor.RoundF16).
func roundF16(x float64) float64 {
	v := []float32{float32(x)}
	tensor.RoundF16(v, v)
	return float64(v[0])
}

// geluTable64 is llama.cpp's GELU: 0 to -10, x from 10, else GELU at x
// rounded to F16, rounded to F16.
func geluTable64(x float64) float64 {
	switch {
	case x <= -10:
		return 0
	case x >= 10:
		return x
	}
	return roundF16(gelu64(roundF16(x)))
}

func TestRows(t *testing.T) {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(1, 2))
	const n, width = 5, 300 // more than one workgroup
	silu := func(g float64) float64 { return g / (1 + math.Exp(-g)) }
	type maker func(dst, src gpu.Binding) (*gpu.Rows, error)
	for _, c := range []struct {
		name  string
		scale float64
		op    maker
		want  func(x, src []float64, i int) float64
		tol   float64
		cpu   func(x, src []float32) // the CPU's kernel, where it is exported
	}{
		{"add", 4, func(d, s gpu.Binding) (*gpu.Rows, error) { return gpu.NewAdd(e.lib, e.pass, d, s, width) },
			func(x, s []float64, i int) float64 { return x[i] + s[i] }, 1e-7, tensor.Add},
		{"bias", 4, func(d, s gpu.Binding) (*gpu.Rows, error) { return gpu.NewBias(e.lib, e.pass, d, s, width) },
			func(x, s []float64, i int) float64 { return x[i] + s[i%width] }, 1e-7, nil},
		{"copy", 4, func(d, s gpu.Binding) (*gpu.Rows, error) { return gpu.NewCopy(e.lib, e.pass, d, s, width) },
			func(x, s []float64, i int) float64 { return s[i] }, 0, nil},
		{"scale", 4, func(d, _ gpu.Binding) (*gpu.Rows, error) { return gpu.NewScale(e.lib, e.pass, d, width, 0.125) },
			func(x, s []float64, i int) float64 { return x[i] * 0.125 }, 0, nil},
		{"softcap", 80, func(d, _ gpu.Binding) (*gpu.Rows, error) { return gpu.NewSoftCap(e.lib, e.pass, d, width, 30) },
			func(x, s []float64, i int) float64 { return 30 * math.Tanh(x[i]/30) }, 1e-5, nil},
		{"swiglu", 12, func(d, s gpu.Binding) (*gpu.Rows, error) { return gpu.NewSwiGLU(e.lib, e.pass, d, s, width) },
			func(x, s []float64, i int) float64 { return silu(x[i]) * s[i] }, 1e-5, tensor.SwiGLU},
		{"geglu", 12, func(d, s gpu.Binding) (*gpu.Rows, error) { return gpu.NewGeGLU(e.lib, e.pass, d, s, width, false) },
			func(x, s []float64, i int) float64 { return gelu64(x[i]) * s[i] }, 1e-5, nil},
		{"geglu f16 table", 12, func(d, s gpu.Binding) (*gpu.Rows, error) { return gpu.NewGeGLU(e.lib, e.pass, d, s, width, true) },
			func(x, s []float64, i int) float64 { return geluTable64(x[i]) * s[i] }, 1e-3, nil},
		{"gelu", 12, func(d, _ gpu.Binding) (*gpu.Rows, error) { return gpu.NewGELU(e.lib, e.pass, d, width, false) },
			func(x, s []float64, i int) float64 { return gelu64(x[i]) }, 1e-5, nil},
		{"gelu f16 table", 12, func(d, _ gpu.Binding) (*gpu.Rows, error) { return gpu.NewGELU(e.lib, e.pass, d, width, true) },
			func(x, s []float64, i int) float64 { return geluTable64(x[i]) }, 1e-3, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			x, src := random(r, n*width, c.scale), random(r, n*width, 2)
			dst := e.upload(x)
			op, err := c.op(dst, e.upload(src))
			if err != nil {
				t.Fatal(err)
			}
			if err := op.Record(n - 1); err != nil { // the last row stays
				t.Fatal(err)
			}
			e.run()
			want := make([]float64, n*width)
			for i := range want {
				want[i] = float64(x[i])
				if i < (n-1)*width {
					want[i] = c.want(widen(x), widen(src), i)
				}
			}
			got := e.read(dst, n*width)
			within(t, c.name, got, want, c.tol)
			if c.cpu != nil {
				cpu := append([]float32(nil), x...)
				c.cpu(cpu[:(n-1)*width], src)
				within(t, c.name+" against the CPU's kernel", got, widen(cpu), c.tol)
			}
		})
	}
}

// TestGELUTableAgainstF32 measures how far llama.cpp's GELU (its F16
// table's roundings) is from GELU in f32, both on the GPU: each of its two
// F16 roundings moves a value by at most half an F16 step (2^-11 of it).
func TestGELUTableAgainstF32(t *testing.T) {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(13, 14))
	const width = 1024
	x := random(r, width, 8)
	exact, table := e.upload(x), e.upload(x)
	for _, c := range []struct {
		b     gpu.Binding
		table bool
	}{{exact, false}, {table, true}} {
		op, err := gpu.NewGELU(e.lib, e.pass, c.b, width, c.table)
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Record(1); err != nil {
			t.Fatal(err)
		}
	}
	e.run()
	within(t, "gelu f16 table against f32", e.read(table, width), widen(e.read(exact, width)), 2e-3)
}

// TestCopyFrom copies a block's last row to the first row of another
// buffer, and adds rows from the middle of one.
func TestCopyFrom(t *testing.T) {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(15, 16))
	const width = 40
	src, x := random(r, 4*width, 2), random(r, 2*width, 2)
	sb, dst, sum := e.upload(src), e.zeros(width), e.upload(x)
	cp, err := gpu.NewCopy(e.lib, e.pass, dst, sb, width)
	if err != nil {
		t.Fatal(err)
	}
	add, err := gpu.NewAdd(e.lib, e.pass, sum, sb, width)
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.RecordFrom(3, 1); err != nil {
		t.Fatal(err)
	}
	if err := add.RecordFrom(1, 2); err != nil {
		t.Fatal(err)
	}
	e.run()
	within(t, "copy from row 3", e.read(dst, width), widen(src[3*width:]), 0)
	want := widen(x)
	for i := range want {
		want[i] += float64(src[width+i])
	}
	within(t, "add from row 1", e.read(sum, 2*width), want, 1e-7)
	if err := cp.RecordFrom(3, 2); err == nil {
		t.Error("rows past the source were recorded")
	}
	scale, err := gpu.NewScale(e.lib, e.pass, dst, width, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := scale.RecordFrom(1, 1); err == nil {
		t.Error("an operation without a second operand was recorded from row 1")
	}
}
