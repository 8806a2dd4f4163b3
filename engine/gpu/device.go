package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Device is a model's forward pass on a WebGPU device: engine.Device over
// a Host. It holds the model's weights on the device, uploaded once in
// their stored form, and makes the device side of each session.
type Device struct {
	host     Host
	lib      *Library
	matrices map[*tensor.Matrix]*Matrix
	vectors  map[*float32]Buffer // norm weights and biases, by their first element
	ropes    map[*float32]Buffer // rotation tables, by their first cosine: cos then sin
	sessions map[*session]bool
	bytes    int64 // uploaded
	closed   bool
}

// Types are the storage types whose matrices the device's products read,
// in ggml's order.
func Types() []tensor.Type {
	ts := make([]tensor.Type, 0, len(kernelTypes))
	for t := range kernelTypes {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// Supports says whether m's forward pass can run on a device with
// adapter a: nil, or an error wrapping ErrUnsupported that names what is
// missing (a step of its recipe, a matrix's storage type, a buffer larger
// than the device's limits).
func Supports(m *engine.Model, a Adapter) error {
	if err := m.DeviceSupports(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	for _, mat := range m.DeviceMatrices() {
		kt, ok := kernelTypes[mat.Type]
		if !ok {
			return fmt.Errorf("%w: %v matrices are not computed on the GPU yet", ErrUnsupported, mat.Type)
		}
		if mat.Cols%kt.chunk != 0 && floatWidth(mat.Type) == 0 {
			return fmt.Errorf("%w: a %d×%d %v matrix: the GPU's kernels read rows in chunks of %d values", ErrUnsupported, mat.Rows, mat.Cols, mat.Type, kt.chunk)
		}
		if n := len(mat.Data); n > a.MaxStorageBufferBindingSize || n > a.MaxBufferSize {
			return fmt.Errorf("%w: a %d×%d %v matrix takes %d bytes, more than the device's largest buffer binding (%d bytes)",
				ErrUnsupported, mat.Rows, mat.Cols, mat.Type, n, min(a.MaxStorageBufferBindingSize, a.MaxBufferSize))
		}
	}
	return nil
}

// MemoryBytes is the device memory a session of m with context positions
// and a KV cache of type kv takes, with the model's weights: the matrices
// in their stored form, the vectors, the KV cache, the rotation tables and
// the activations of a prompt block.
func MemoryBytes(m *engine.Model, context int, kv engine.KVType) int64 {
	c := m.Config()
	var n int64
	for _, mat := range m.DeviceMatrices() {
		n += int64(len(mat.Data))
	}
	n += int64(c.Layers) * int64(4*c.Dim) * 2 // the norms' weights
	n += c.KVCacheBytes(context, kv.Resolve(m.Info().Parameters))
	n += int64(context) * int64(c.RotaryDims()) * 4 // a rotation table's cosines and sines
	q := c.QDim()
	n += int64(engine.DefaultPromptBlock) * int64(4*(4*c.Dim+3*q+2*c.HiddenDim)) // activations
	n += int64(engine.DefaultPromptBlock) * int64(4*c.VocabSize)                 // a block's logits (Session.Score)
	return n
}

// NewDevice makes a device for m on host h, failing where Supports does.
// The weights are uploaded by the first session (engine.Device.Upload).
func NewDevice(h Host, m *engine.Model) (*Device, error) {
	if err := Supports(m, h.Adapter()); err != nil {
		return nil, err
	}
	return &Device{
		host: h, lib: NewLibrary(h),
		matrices: map[*tensor.Matrix]*Matrix{}, vectors: map[*float32]Buffer{}, ropes: map[*float32]Buffer{},
		sessions: map[*session]bool{},
	}, nil
}

// Name is "webgpu".
func (d *Device) Name() string { return "webgpu" }

// Host is the device's host.
func (d *Device) Host() Host { return d.host }

// Bytes is how many bytes of weights the device holds.
func (d *Device) Bytes() int64 { return d.bytes }

// errClosed is the error of a closed device's calls.
var errClosed = errors.New("gpu: the device is closed")

// Upload uploads every tensor of w the device does not hold yet.
func (d *Device) Upload(w engine.DeviceWeights) error {
	if d.closed {
		return errClosed
	}
	for _, m := range w.Matrices {
		if d.matrices[m] != nil {
			continue
		}
		g, err := UploadMatrix(d.host, fmt.Sprintf("%v %d×%d", m.Type, m.Rows, m.Cols), m)
		if err != nil {
			return err
		}
		d.matrices[m] = g
		d.bytes += int64(g.Bytes())
	}
	for _, v := range w.Vectors {
		if d.vectors[&v[0]] != nil {
			continue
		}
		b, err := d.upload("vector", floatBytes(v))
		if err != nil {
			return err
		}
		d.vectors[&v[0]] = b
	}
	for _, r := range w.Ropes {
		if d.ropes[&r.Cos[0]] != nil {
			continue
		}
		b, err := d.upload("rope", append(floatBytes(r.Cos), floatBytes(r.Sin)...))
		if err != nil {
			return err
		}
		d.ropes[&r.Cos[0]] = b
	}
	return d.host.Err()
}

// upload makes a storage buffer holding data.
func (d *Device) upload(label string, data []byte) (Buffer, error) {
	b, err := d.host.NewBuffer(label, (len(data)+3)&^3, UsageStorage|UsageCopyDst)
	if err != nil {
		return nil, err
	}
	d.host.Write(b, 0, data)
	d.bytes += int64(b.Size())
	return b, nil
}

// floatBytes is v's little-endian bytes (a copy).
func floatBytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// Close frees every buffer of the device and of its sessions.
func (d *Device) Close() {
	if d.closed {
		return
	}
	d.closed = true
	for s := range d.sessions {
		s.Close()
	}
	for _, m := range d.matrices {
		m.Destroy()
	}
	for _, b := range d.vectors {
		b.Destroy()
	}
	for _, b := range d.ropes {
		b.Destroy()
	}
	clear(d.matrices)
	clear(d.vectors)
	clear(d.ropes)
}

// vector is the buffer of an uploaded vector.
func (d *Device) vector(v []float32) Binding {
	return Binding{Buffer: d.vectors[unsafe.SliceData(v)]}
}
