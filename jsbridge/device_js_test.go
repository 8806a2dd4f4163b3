package jsbridge

import (
	"errors"
	"fmt"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/models"
)

// fakeAdapter is a gpu.Host that only describes its adapter: enough for
// the bridge to decide where a model runs.
type fakeAdapter struct {
	gpu.Host
	adapter gpu.Adapter
}

func (f fakeAdapter) Adapter() gpu.Adapter { return f.adapter }
func (f fakeAdapter) Err() error           { return nil }

// withGPU makes b's WebGPU host h, or none because of err, whose GPU path
// would run any model.
func withGPU(b *Binding, h gpu.Host, err error) {
	b.gpu.open = func() (gpu.Host, error) { return h, err }
	b.gpu.runsHeader = func(engine.Config, []tensor.Type) error { return nil }
}

// TestLoadDevice: load's device option says where the model runs, and
// info says where it does (device) and why not on the GPU
// (deviceReason). 'cpu' never opens the GPU; 'auto' (also when absent)
// takes the CPU, saying why, where there is no adapter or it is a fallback
// one; 'webgpu' takes any adapter and rejects with device_unsupported,
// naming what is missing, when it cannot run the model. Anything else is
// an invalid argument named device.
func TestLoadDevice(t *testing.T) {
	noAdapter := errors.New("navigator.gpu gave no adapter")
	swiftshader := fakeAdapter{adapter: gpu.Adapter{Vendor: "google", Architecture: "swiftshader", Fallback: true}}
	cases := []struct {
		name   string
		opt    any // the device option; nil: absent
		host   gpu.Host
		err    error
		reason string // info.deviceReason; "" when the load rejects
		code   string // the load's code when it rejects
	}{
		{"cpu", "cpu", nil, nil, "the device: 'cpu' load option", ""},
		{"absent, no adapter", nil, nil, noAdapter, "navigator.gpu gave no adapter", ""},
		{"null, no adapter", js.Null(), nil, noAdapter, "navigator.gpu gave no adapter", ""},
		{"auto, no adapter", "auto", nil, noAdapter, "navigator.gpu gave no adapter", ""},
		{"auto, a fallback adapter", "auto", swiftshader, nil,
			"the WebGPU adapter (google swiftshader) is a fallback, software one, which device: 'auto' skips (device: 'webgpu' uses it)", ""},
		{"webgpu, no adapter", "webgpu", nil, noAdapter, "", "device_unsupported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := New()
			defer b.Release()
			opened := false
			b.gpu.open = func() (gpu.Host, error) { opened = true; return c.host, c.err }
			opts := map[string]any{}
			if c.opt != nil {
				opts["device"] = c.opt
			}
			info, err := call(t, b, "load", jsBytes(models.Default()), obj(opts))
			if c.code != "" {
				requireCode(t, err, c.code, c.name)
				assert.Contains(t, err.Error(), "navigator.gpu gave no adapter", "names what is missing")
				_, err = call(t, b, "info")
				requireCode(t, err, "no_model", "a failed load leaves no model")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.opt != "cpu", opened, "only 'cpu' leaves navigator.gpu alone")
			for _, v := range []js.Value{info, mustCall(t, b, "info")} {
				assert.Equal(t, "cpu", v.Get("device").String())
				assert.Equal(t, c.reason, v.Get("deviceReason").String())
				assert.True(t, v.Get("adapter").IsUndefined())
			}
			res := mustCall(t, b, "generate", "Once upon a time", greedy(8))
			assert.Equal(t, 8, res.Get("tokens").Length(), "the CPU generates")
		})
	}
	b := New()
	defer b.Release()
	for _, bad := range []any{"gpu", "WebGPU", "", 1, true, js.ValueOf(map[string]any{})} {
		_, err := call(t, b, "load", jsBytes(models.Default()), obj(map[string]any{"device": bad}))
		requireField(t, err, "invalid_argument", "device")
		assert.Contains(t, err.Error(), "device must be 'auto', 'webgpu' or 'cpu', got ")
	}
}

// TestInspectDevice: inspect reports memory.gpu (the weights and the KV
// cache), and with a device option says whether the worker's adapter would
// take the model before its weights are read: device 'webgpu' rejects
// with device_unsupported when there is no adapter, 'auto' says cpu and
// why, and 'cpu' opens nothing.
func TestInspectDevice(t *testing.T) {
	whole := models.Default()
	inspect := func(b *Binding, opts map[string]any) (js.Value, error) {
		return call(t, b, "inspect", js.ValueOf([]any{jsBytes(whole)}), js.ValueOf([]any{len(whole)}), obj(opts))
	}
	b := New()
	defer b.Release()
	opened := 0
	b.gpu.open = func() (gpu.Host, error) { opened++; return nil, errors.New("navigator.gpu gave no adapter") }

	v, err := inspect(b, nil)
	require.NoError(t, err)
	mem := v.Get("memory")
	assert.Equal(t, mem.Get("weights").Int()+mem.Get("kvCache").Int(), mem.Get("gpu").Int())
	assert.True(t, v.Get("device").IsUndefined(), "without the option, no verdict")
	v, err = inspect(b, map[string]any{"device": "cpu"})
	require.NoError(t, err)
	assert.True(t, v.Get("device").IsUndefined())
	assert.Equal(t, 0, opened, "neither opens the GPU")

	v, err = inspect(b, map[string]any{"device": "auto"})
	require.NoError(t, err)
	assert.Equal(t, "cpu", v.Get("device").String())
	assert.Equal(t, "navigator.gpu gave no adapter", v.Get("deviceReason").String())
	_, err = inspect(b, map[string]any{"device": "webgpu"})
	requireCode(t, err, "device_unsupported", "no adapter")
	assert.Equal(t, 1, opened, "the worker opens its adapter once")

	withGPU(b, fakeAdapter{adapter: gpu.Adapter{Vendor: "google", Architecture: "swiftshader", Fallback: true}}, nil)
	b.gpu.opened = false
	v, err = inspect(b, map[string]any{"device": "webgpu"})
	require.NoError(t, err)
	assert.Equal(t, "webgpu", v.Get("device").String(), "'webgpu' takes a fallback adapter")
	assert.True(t, v.Get("adapter").Get("fallback").Bool())
	assert.Equal(t, "swiftshader", v.Get("adapter").Get("architecture").String())

	withGPU(b, fakeAdapter{adapter: gpu.Adapter{Vendor: "test", Architecture: "fake"}}, nil)
	b.gpu.opened = false
	v, err = inspect(b, map[string]any{"device": "auto"})
	require.NoError(t, err)
	assert.Equal(t, "webgpu", v.Get("device").String(), "a real adapter whose GPU path runs the model")
	b.gpu.runsHeader = func(engine.Config, []tensor.Type) error {
		return fmt.Errorf("%w: Q3_K matrices are not computed on the GPU yet", gpu.ErrUnsupported)
	}
	v, err = inspect(b, map[string]any{"device": "auto"})
	require.NoError(t, err)
	assert.Equal(t, "cpu", v.Get("device").String(), "a model the GPU path cannot run may be split")
	assert.Equal(t, "the GPU path cannot run this model: gpu: unsupported: Q3_K matrices are not computed on the GPU yet", v.Get("deviceReason").String())
	_, err = inspect(b, map[string]any{"device": "webgpu"})
	requireCode(t, err, "device_unsupported", "webgpu and a model the GPU path cannot run: before the weights are read")

	_, err = inspect(b, map[string]any{"device": "gpu"})
	requireField(t, err, "invalid_argument", "device")
}

// closeCounter is a GPU device that counts its Close calls.
type closeCounter struct {
	engine.Device
	closed int
}

func (c *closeCounter) Close() { c.closed++ }

// closingHost is a host that counts its Close calls.
type closingHost struct {
	fakeAdapter
	closed int
}

func (h *closingHost) Close() { h.closed++ }

// TestDeviceClosed: a model's GPU device is closed (its buffers freed)
// when a second model is loaded in its place and when the page unloads
// it, which also closes the worker's GPU device; later calls reject with
// no_model.
func TestDeviceClosed(t *testing.T) {
	b := New()
	defer b.Release()
	mustCall(t, b, "load", jsBytes(models.Default()), obj(map[string]any{"device": "cpu"}))
	first := &closeCounter{}
	b.setDevice(placement{adapter: &gpu.Adapter{Vendor: "test"}}, first, nil)
	assert.Equal(t, "webgpu", mustCall(t, b, "info").Get("device").String())
	assert.Equal(t, "test", mustCall(t, b, "info").Get("adapter").Get("vendor").String())

	mustCall(t, b, "load", jsBytes(models.Default()), obj(map[string]any{"device": "cpu"}))
	assert.Equal(t, 1, first.closed, "the second model closes the first one's device")
	assert.Equal(t, "cpu", mustCall(t, b, "info").Get("device").String())

	second := &closeCounter{}
	b.setDevice(placement{adapter: &gpu.Adapter{Vendor: "test"}}, second, nil)
	host := &closingHost{}
	b.gpu.host, b.gpu.opened = host, true
	mustCall(t, b, "unload")
	assert.Equal(t, 1, second.closed, "unload closes the device")
	assert.Equal(t, 1, host.closed, "and the worker's GPU device")
	assert.Equal(t, 1, first.closed)
	_, err := call(t, b, "generate", "Once upon a time", greedy(4))
	requireCode(t, err, "no_model", "after unload")
}

// fakeDevice is an engine.Device that computes nothing: its uploads fail
// with uploadErr, its sessions' reads with readErr (zeros otherwise).
type fakeDevice struct {
	uploadErr, readErr error
	closed             int
}

func (d *fakeDevice) Name() string                      { return "fake" }
func (d *fakeDevice) Upload(engine.DeviceWeights) error { return d.uploadErr }
func (d *fakeDevice) Close()                            { d.closed++ }
func (d *fakeDevice) NewSession(engine.DeviceShape) (engine.DeviceSession, error) {
	return fakeSession{d}, nil
}

type fakeSession struct{ d *fakeDevice }

func (fakeSession) SetRows(engine.Vec, []float32, int)                              {}
func (fakeSession) Norm(engine.Vec, engine.Vec, int, []float32, int, float32, bool) {}
func (fakeSession) Copy(engine.Vec, engine.Vec, int)                                {}
func (fakeSession) Products(engine.Vec, int, ...engine.DeviceProduct)               {}
func (fakeSession) AddBias(engine.Vec, int, []float32)                              {}
func (fakeSession) RopeQK(int, int, engine.DeviceRope, int)                         {}
func (fakeSession) AddNorm(engine.Vec, engine.Vec, int, []float32, float32)         {}
func (fakeSession) Scale(engine.Vec, int, float32)                                  {}
func (fakeSession) SoftCap(engine.Vec, int, float32)                                {}
func (fakeSession) Attention(int, int, int, engine.AttentionSpec, float32)          {}
func (fakeSession) GateUnits(engine.FFN, int)                                       {}
func (fakeSession) Add(engine.Vec, engine.Vec, int)                                 {}
func (fakeSession) Flush() error                                                    { return nil }
func (s fakeSession) Read(engine.Vec, int, []float32) error                         { return s.d.readErr }
func (fakeSession) Close()                                                          {}

// withFakeDevice gives b an adapter (a real one, not a fallback) and d as
// the device it makes.
func withFakeDevice(b *Binding, d *fakeDevice) {
	withGPU(b, fakeAdapter{adapter: gpu.Adapter{Vendor: "test", Architecture: "fake"}}, nil)
	b.gpu.newDevice = func(gpu.Host, *engine.Model) (gpuDevice, error) { return d, nil }
}

// TestLoadOnTheGPU: with an adapter that takes the model, the load runs it
// on the GPU (info.device 'webgpu', the adapter), uploading its weights and
// running a token during the load: weights the GPU cannot hold, or a
// kernel it refuses, make device 'auto' take the CPU, saying why, and
// device 'webgpu' reject with device_unsupported. A device lost
// mid-generation rejects the call with device_lost.
func TestLoadOnTheGPU(t *testing.T) {
	b := New()
	defer b.Release()
	d := &fakeDevice{}
	withFakeDevice(b, d)
	info := mustCall(t, b, "load", jsBytes(models.Default()), obj(map[string]any{"device": "auto"}))
	assert.Equal(t, "webgpu", info.Get("device").String())
	assert.True(t, info.Get("deviceReason").IsUndefined())
	assert.Equal(t, "fake", info.Get("adapter").Get("architecture").String())
	assert.False(t, info.Get("adapter").Get("fallback").Bool())

	d.readErr = fmt.Errorf("reading the logits: %w", gpu.ErrDeviceLost)
	_, err := call(t, b, "generate", "Once upon a time", greedy(4))
	requireCode(t, err, "device_lost", "a device lost mid-generation")

	oom := &fakeDevice{uploadErr: fmt.Errorf("a 4096×32000 Q4_0 matrix: %w", gpu.ErrOutOfMemory)}
	withFakeDevice(b, oom)
	info = mustCall(t, b, "load", jsBytes(models.Default()), obj(map[string]any{"device": "auto"}))
	assert.Equal(t, 1, d.closed, "the second load closes the first model's device")
	assert.Equal(t, 1, oom.closed, "a device whose upload failed is closed")
	assert.Equal(t, "cpu", info.Get("device").String())
	assert.Equal(t, "the GPU could not allocate the model's buffers: a 4096×32000 Q4_0 matrix: gpu: out of device memory", info.Get("deviceReason").String())
	res := mustCall(t, b, "generate", "Once upon a time", greedy(4))
	assert.Equal(t, 4, res.Get("tokens").Length(), "the CPU generates")

	refused := &fakeDevice{readErr: fmt.Errorf("binding products: %w: 172 columns of F16 are not a multiple of 8", gpu.ErrUnsupported)}
	withFakeDevice(b, refused)
	info = mustCall(t, b, "load", jsBytes(models.Default()), obj(map[string]any{"device": "auto"}))
	assert.Equal(t, "cpu", info.Get("device").String(), "a kernel the GPU refuses is met during the load")
	assert.Equal(t, "the GPU path cannot run this model: binding products: gpu: unsupported: 172 columns of F16 are not a multiple of 8", info.Get("deviceReason").String())
	assert.Equal(t, 1, refused.closed)

	withFakeDevice(b, oom)
	_, err = call(t, b, "load", jsBytes(models.Default()), obj(map[string]any{"device": "webgpu"}))
	requireCode(t, err, "device_unsupported", "webgpu without room for the weights")
	assert.Contains(t, err.Error(), "the GPU could not allocate the model's buffers")
	assert.Equal(t, "cpu", mustCall(t, b, "info").Get("device").String(), "a failed load leaves the model as it was")
}
