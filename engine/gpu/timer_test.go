package gpu_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/wasmlm/wasmlm/engine/gpu"
)

// TestProfile: a Profile counts submissions and dispatches by kernel, and,
// timing, gives each kernel a positive time on the device; the work is
// done as without it (the scaled values).
func TestProfile(t *testing.T) {
	h := testHost(t)
	for _, timed := range []bool{false, true} {
		if timed && !h.Adapter().TimestampQuery {
			t.Log("the device has no timestamp-query: not timed")
			continue
		}
		p := gpu.NewProfile(h)
		if err := p.SetTimed(timed); err != nil {
			t.Fatal(err)
		}
		lib := gpu.NewLibrary(p)
		pass, err := gpu.NewPass(p, 2)
		if err != nil {
			t.Fatal(err)
		}
		const width, rows = 1 << 14, 4
		x, err := p.NewBuffer("x", 4*width*rows, gpu.UsageReadback)
		if err != nil {
			t.Fatal(err)
		}
		ones := make([]float32, width*rows)
		for i := range ones {
			ones[i] = 1
		}
		p.Write(x, 0, f32Bytes(ones))
		scale, err := gpu.NewScale(lib, pass, gpu.Binding{Buffer: x}, width, 3)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := scale.Record(rows); err != nil {
				t.Fatal(err)
			}
		}
		if err := pass.Submit(); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 4*width*rows)
		if err := p.Read(x, 0, got); err != nil {
			t.Fatal(err)
		}
		if v := [2]float32{f32At(got, 0), f32At(got, width*rows-1)}; v[0] != 9 || v[1] != 9 {
			t.Errorf("timed %v: the values scaled twice by 3 are %v … %v, want 9", timed, v[0], v[len(v)-1])
		}
		if p.Timed() != timed || p.Submissions != 1 || p.Dispatches != 2 || len(p.Kernels) != 1 {
			t.Fatalf("timed %v: %v, %d submissions, %d dispatches, kernels %v; want %v, 1, 2, one kernel", timed, p.Timed(), p.Submissions, p.Dispatches, p.Kernels, timed)
		}
		for label, k := range p.Kernels {
			t.Logf("timed %v: %s: %d dispatches, %v", timed, label, k.Dispatches, k.Time)
			if k.Dispatches != 2 || (k.Time > 0) != timed {
				t.Errorf("timed %v: kernel %s: %d dispatches, time %v", timed, label, k.Dispatches, k.Time)
			}
		}
		p.Reset()
		if p.Submissions != 0 || p.Dispatches != 0 || len(p.Kernels) != 0 {
			t.Errorf("Reset left %d submissions, %d dispatches, %v", p.Submissions, p.Dispatches, p.Kernels)
		}
		pass.Destroy()
		x.Destroy()
	}
}

// f32At is the i-th f32 of b.
func f32At(b []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])) }
