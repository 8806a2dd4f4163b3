package gpu_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/race"
)

// memoryHost keeps buffers in memory: enough of a Host for uploads.
type memoryHost struct{ gpu.Host }

type memoryBuffer struct{ data []byte }

func (b *memoryBuffer) Size() int { return len(b.data) }
func (b *memoryBuffer) Destroy()  {}

func (memoryHost) Adapter() gpu.Adapter { return gpu.Adapter{MaxStorageBufferBindingSize: 1 << 20} }

func (memoryHost) NewBuffer(label string, size int, usage gpu.Usage) (gpu.Buffer, error) {
	if size%4 != 0 {
		return nil, fmt.Errorf("buffer %s: %d bytes", label, size)
	}
	return &memoryBuffer{make([]byte, size)}, nil
}

func (memoryHost) Write(b gpu.Buffer, offset int, data []byte) {
	if offset%4 != 0 || len(data)%4 != 0 {
		panic(fmt.Sprintf("write of %d bytes at %d", len(data), offset))
	}
	copy(b.(*memoryBuffer).data[offset:], data)
}

// randomMatrix is a rows×cols matrix of type t quantized from normal values.
func randomMatrix(t testing.TB, typ tensor.Type, rows, cols int, rng *rand.Rand) *tensor.Matrix {
	rb, err := tensor.RowBytes(typ, cols)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, rows*rb)
	src := make([]float32, cols)
	for r := range rows {
		for c := range src {
			src[c] = float32(rng.NormFloat64())
		}
		if err := tensor.Quantize(typ, data[r*rb:(r+1)*rb], src); err != nil {
			t.Fatal(err)
		}
	}
	m, err := tensor.NewMatrix(typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestUploadMatrixHoldsTheFileBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		typ        tensor.Type
		rows, cols int
	}{
		{tensor.Q4_0, 13, 96}, // 54-byte rows: the rows straddle words
		// Packed where this build has SIMD kernels for the type (natively:
		// rows a multiple of 8).
		{tensor.Q4_0, 16, 96},
		{tensor.Q8_0, 16, 256},
		{tensor.Q4_K, 8, 256},
		{tensor.F16, 3, 8},
	} {
		m := randomMatrix(t, c.typ, c.rows, c.cols, rng)
		file := bytes.Clone(m.Data)
		packed := tensor.Pack(m)
		g, err := gpu.UploadMatrix(memoryHost{}, "m", m)
		if err != nil {
			t.Fatal(err)
		}
		got := g.Buffer.(*memoryBuffer).data
		if want := (len(file)+3)&^3 + 4; len(got) != want || g.Bytes() != want {
			t.Errorf("%v %d×%d: %d bytes, want %d", c.typ, c.rows, c.cols, len(got), want)
		}
		if !bytes.Equal(got[:len(file)], file) || !bytes.Equal(got[len(file):], make([]byte, len(got)-len(file))) {
			t.Errorf("%v %d×%d (packed %v): the buffer is not the file's rows and zeros", c.typ, c.rows, c.cols, packed)
		}
		t.Logf("%v: packed for SIMD kernels: %v", c.typ, packed)
		if g.RowBytes*g.Rows != len(file) {
			t.Errorf("%v: RowBytes %d", c.typ, g.RowBytes)
		}
	}
	// A float matrix whose rows are not whole chunks of 8 values: each row
	// padded with zeros to 8.
	m := randomMatrix(t, tensor.F16, 3, 6, rng)
	g, err := gpu.UploadMatrix(memoryHost{}, "m", m)
	if err != nil {
		t.Fatal(err)
	}
	got := g.Buffer.(*memoryBuffer).data
	var want []byte
	for r := range 3 {
		want = append(append(want, m.RowData(r)...), make([]byte, 4)...)
	}
	want = append(want, make([]byte, 4)...)
	if g.RowBytes != 16 || !bytes.Equal(got, want) {
		t.Errorf("F16 3×6: RowBytes %d, buffer % x, want 16 and % x", g.RowBytes, got, want)
	}
	_, err = gpu.UploadMatrix(memoryHost{}, "big", randomMatrix(t, tensor.F32, 1025, 256, rng))
	if !errors.Is(err, gpu.ErrUnsupported) {
		t.Errorf("a matrix over maxStorageBufferBindingSize: error %v", err)
	}
}

type memoryKernel string

func (k memoryKernel) Label() string { return string(k) }

func (memoryHost) NewKernel(label, source, entry string) (gpu.Kernel, error) {
	return memoryKernel(label), nil
}

func (memoryHost) NewBindings(gpu.Kernel, ...gpu.Binding) (gpu.Bindings, error) {
	return struct{}{}, nil
}

func (memoryHost) Submit([]gpu.Dispatch) error { return nil }

func (memoryHost) Err() error { return nil }

// TestProductsRecordAllocatesNothing: recording a token's products (and
// submitting them) allocates nothing once the pass has held a submission.
func TestProductsRecordAllocatesNothing(t *testing.T) {
	race.SkipAllocationCount(t)
	var h memoryHost
	rng := rand.New(rand.NewPCG(9, 10))
	lib := gpu.NewLibrary(h)
	pass, err := gpu.NewPass(h, 8)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := h.NewBuffer("x", 4*4*256, gpu.UsageStorage)
	var ps []gpu.Product
	for _, typ := range []tensor.Type{tensor.Q4_0, tensor.Q4_K, tensor.F32} {
		m, err := gpu.UploadMatrix(h, "m", randomMatrix(t, typ, 8, 256, rng))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := h.NewBuffer("out", 4*4*8, gpu.UsageStorage)
		ps = append(ps, gpu.Product{M: m, Out: gpu.Binding{Buffer: out}})
	}
	p, err := gpu.NewProducts(lib, pass, gpu.Binding{Buffer: x}, 4, ps...)
	if err != nil {
		t.Fatal(err)
	}
	record := func() {
		for _, n := range []int{1, 4} {
			if err := p.Record(n); err != nil {
				t.Fatal(err)
			}
			if err := pass.Submit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	record()
	if allocs := testing.AllocsPerRun(20, record); allocs != 0 {
		t.Errorf("Record and Submit allocate %v times", allocs)
	}
}
