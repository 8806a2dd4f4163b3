package gpu_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wasmlm/wasmlm/engine/gpu"
)

// env is a test's device: its host, a library and a pass of a few slots.
type env struct {
	t    *testing.T
	host gpu.Host
	lib  *gpu.Library
	pass *gpu.Pass
}

// libraries are the hosts' libraries, shared by the tests: each kernel
// is compiled once per test binary.
var libraries = map[gpu.Host]*gpu.Library{}

func newEnv(t *testing.T) *env {
	t.Helper()
	h := testHost(t)
	pass, err := gpu.NewPass(h, 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pass.Destroy)
	lib := libraries[h]
	if lib == nil {
		lib = gpu.NewLibrary(h)
		libraries[h] = lib
	}
	return &env{t: t, host: h, lib: lib, pass: pass}
}

// upload makes a storage buffer holding vals (at least one value).
func (e *env) upload(vals []float32) gpu.Binding {
	e.t.Helper()
	b, err := e.host.NewBuffer("test", 4*max(len(vals), 1), gpu.UsageReadback)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(b.Destroy)
	if len(vals) > 0 {
		e.host.Write(b, 0, f32Bytes(vals))
	}
	return gpu.Binding{Buffer: b}
}

// zeros makes a storage buffer of n zeros.
func (e *env) zeros(n int) gpu.Binding { return e.upload(make([]float32, n)) }

// run submits what the pass recorded.
func (e *env) run() {
	e.t.Helper()
	if err := e.pass.Submit(); err != nil {
		e.t.Fatal(err)
	}
}

// read reads n values of b.
func (e *env) read(b gpu.Binding, n int) []float32 {
	e.t.Helper()
	dst := make([]byte, 4*n)
	if err := e.host.Read(b.Buffer, b.Offset, dst); err != nil {
		e.t.Fatal(err)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(dst[4*i:]))
	}
	return out
}

func f32Bytes(vals []float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// random is n values uniform in [-scale, scale), from a seeded source.
func random(r *rand.Rand, n int, scale float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32((2*r.Float64() - 1) * scale)
	}
	return out
}

// within fails t unless every got[i] is within tol·max(1, |want[i]|) of
// want[i], and logs the largest difference.
func within(t *testing.T, name string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	worst, at := 0.0, 0
	for i, w := range want {
		d := math.Abs(float64(got[i])-w) / max(1, math.Abs(w))
		if !(d <= worst) { // NaN counts as the worst
			worst, at = d, i
		}
	}
	t.Logf("%s: largest difference %.3g (relative past 1) at %d: %v, want %v", name, worst, at, got[at], want[at])
	if !(worst <= tol) {
		t.Errorf("%s: value %d is %v, want %v (difference %.3g > %.3g)", name, at, got[at], want[at], worst, tol)
	}
}

// widen is x as float64 values.
func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}
