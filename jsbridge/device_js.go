package jsbridge

import (
	"errors"
	"fmt"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// deviceMode is load's device option: where the forward pass runs.
type deviceMode string

const (
	// deviceAuto runs the model on the GPU where a real adapter (not a
	// fallback, software one) runs it, else on the CPU, saying why.
	deviceAuto deviceMode = "auto"
	// deviceWebGPU runs it on the GPU, any adapter's (SwiftShader's
	// fallback one too), or fails with device_unsupported.
	deviceWebGPU deviceMode = "webgpu"
	// deviceCPU runs it on the CPU; navigator.gpu is never touched.
	deviceCPU deviceMode = "cpu"
)

// ErrDeviceUnsupported means load's device: 'webgpu' cannot be honoured:
// no adapter, or the GPU path cannot run this model (device_unsupported).
var ErrDeviceUnsupported = engine.NewError(engine.CodeDeviceUnsupported, "wasmlm: device 'webgpu' cannot be used")

// device reads a device option: 'auto' (also when absent), 'webgpu' or
// 'cpu'.
func (f fields) device() (deviceMode, error) {
	v, ok := f.value("device")
	if !ok {
		return deviceAuto, nil
	}
	if typeOf(v) == js.TypeString {
		switch m := deviceMode(v.String()); m {
		case deviceAuto, deviceWebGPU, deviceCPU:
			return m, nil
		}
	}
	return "", invalid("device", "must be 'auto', 'webgpu' or 'cpu', got %s", f.b.describe(v))
}

// placement is where a model's forward pass runs, as info reports it.
type placement struct {
	reason  string       // why not on the GPU; "" when it runs there
	adapter *gpu.Adapter // the GPU's, when it runs there
}

// cpuBecause is a placement on the CPU for reason.
func cpuBecause(format string, args ...any) placement {
	return placement{reason: fmt.Sprintf(format, args...)}
}

// splitPlacement is the placement of a model split across workers: the
// CPU, for the GPU path runs in one worker.
func splitPlacement(workers int) placement {
	return cpuBecause("the model is split across %d workers, and the GPU serves one", workers)
}

// set adds device ('webgpu' or 'cpu'), deviceReason (on the CPU) and
// adapter (on the GPU: {vendor, architecture, description, fallback}) to
// an info object.
func (p placement) set(out map[string]any) {
	if p.adapter == nil {
		out["device"] = "cpu"
		out["deviceReason"] = p.reason
		return
	}
	a := p.adapter
	out["device"] = "webgpu"
	out["adapter"] = map[string]any{
		"vendor": a.Vendor, "architecture": a.Architecture, "description": a.Description, "fallback": a.Fallback,
	}
}

// gpuState is the worker's WebGPU host, opened once (a worker keeps one
// GPUDevice for every model it loads), and the device of the loaded model.
type gpuState struct {
	open func() (gpu.Host, error) // openGPU; tests give a fake adapter
	// newDevice is newGPUDevice; tests give a fake device.
	newDevice func(gpu.Host, *engine.Model) (gpuDevice, error)
	// runsHeader is gpuRunsHeader; tests give one that takes every model.
	runsHeader func(engine.Config, []tensor.Type) error
	opened     bool
	host       gpu.Host
	err        error // why there is no host, once opened failed
	device     gpuDevice
	place      placement
}

// gpuHost returns the worker's WebGPU host, opening it the first time
// (navigator.gpu's adapter, and a device with its limits); when there is
// none, the error says why, and it is remembered. A lost host is opened
// anew.
func (b *Binding) gpuHost() (gpu.Host, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	g := &b.gpu
	if g.opened && g.host != nil && g.host.Err() != nil { // lost: a new device may work
		if c, ok := g.host.(interface{ Close() }); ok {
			c.Close() // its callbacks released, what it still held destroyed
		}
		g.opened, g.host = false, nil
	}
	if !g.opened {
		g.opened = true
		g.host, g.err = g.open()
	}
	return g.host, g.err
}

// adapterProblem is why mode cannot use the host h (err: why there is
// none), or "": device 'auto' skips a fallback adapter, which device
// 'webgpu' takes.
func adapterProblem(mode deviceMode, h gpu.Host, err error) string {
	if err != nil {
		return err.Error()
	}
	if a := h.Adapter(); mode == deviceAuto && a.Fallback {
		return fmt.Sprintf("the WebGPU adapter (%s) is a fallback, software one, which device: 'auto' skips (device: 'webgpu' uses it)", adapterName(a))
	}
	return ""
}

// adapterName names an adapter for a message: its vendor and architecture,
// or its description.
func adapterName(a gpu.Adapter) string {
	switch {
	case a.Vendor != "" && a.Architecture != "":
		return a.Vendor + " " + a.Architecture
	case a.Description != "":
		return a.Description
	case a.Vendor != "":
		return a.Vendor
	}
	return "unnamed"
}

// place decides where model m runs under mode, and when it is the GPU
// makes its device and a session on it (opts, with the device), which
// uploads the weights and runs one token: a buffer the GPU cannot allocate
// or a kernel it refuses fails here, while the load can still take the
// CPU. workers is how many workers the model
// is split across (the GPU path runs in one). Under deviceAuto every
// reason the GPU cannot be used is a placement on the CPU; under
// deviceWebGPU it is an error wrapping ErrDeviceUnsupported, naming what is
// missing.
func (b *Binding) place(m *engine.Model, mode deviceMode, workers int, opts engine.SessionOptions) (placement, gpuDevice, *engine.Session, error) {
	if mode == deviceCPU {
		return cpuBecause("the device: 'cpu' load option"), nil, nil, nil
	}
	refuse := func(p placement) (placement, gpuDevice, *engine.Session, error) {
		if mode == deviceWebGPU {
			return placement{}, nil, nil, fmt.Errorf("%w: %s", ErrDeviceUnsupported, p.reason)
		}
		return p, nil, nil, nil
	}
	if workers > 1 {
		return refuse(splitPlacement(workers))
	}
	h, err := b.gpuHost()
	if problem := adapterProblem(mode, h, err); problem != "" {
		return refuse(cpuBecause("%s", problem))
	}
	if err := m.DeviceSupports(); err != nil {
		return refuse(cpuBecause("%s", deviceProblem(err)))
	}
	d, err := b.gpu.newDevice(h, m)
	if err != nil {
		return refuse(cpuBecause("%s", deviceProblem(err)))
	}
	opts.Device = d
	s, err := m.NewSession(opts)
	if err == nil {
		// One token through every layer compiles the kernels now, and meets
		// what the GPU refuses (a shape a kernel does not take) while the
		// load can still take the CPU. The session then starts afresh.
		if err = s.Forward(0, 0, true); err != nil {
			s.Close()
		}
	}
	if err != nil {
		d.Close()
		return refuse(cpuBecause("%s", deviceProblem(err)))
	}
	a := h.Adapter()
	return placement{adapter: &a}, d, s, nil
}

// deviceProblem words why the GPU cannot run a model: what it lacks, or
// its buffers that could not be allocated.
func deviceProblem(err error) string {
	switch {
	case errors.Is(err, gpu.ErrOutOfMemory):
		return fmt.Sprintf("the GPU could not allocate the model's buffers: %v", err)
	case errors.Is(err, gpu.ErrUnsupported), errors.Is(err, engine.ErrUnsupported):
		return fmt.Sprintf("the GPU path cannot run this model: %v", err)
	}
	return fmt.Sprintf("the GPU device failed: %v", err)
}

// setDevice makes d the loaded model's device, placed at p, with its
// session s when it has one already, closing the previous model's device
// (its buffers are freed at once).
func (b *Binding) setDevice(p placement, d gpuDevice, s *engine.Session) {
	b.mu.Lock()
	old := b.gpu.device
	b.gpu.device, b.gpu.place = d, p
	if s != nil {
		b.session = s
	}
	b.mu.Unlock()
	if old != nil && old != d {
		old.Close()
	}
}

// parseUnload: unload() frees the loaded model's GPU buffers at once
// (its device's Close), then the worker's GPU device (the host's Close),
// and drops the model, so later calls reject with no_model; a generation
// running on the GPU meanwhile fails. It does not
// wait its turn: the page calls it just before it ends the worker.
func (b *Binding) parseUnload([]js.Value) (work, error) {
	return func() (any, error) {
		b.setDevice(placement{}, nil, nil) // first: a generation on it fails, and lets go of its session
		b.mu.Lock()
		session := b.session
		b.model, b.part, b.session, b.shardSes, b.source, b.grammars = nil, nil, nil, nil, nil, nil
		dropped := b.dropSessions()
		b.mu.Unlock()
		if session != nil {
			session.Close()
		}
		for _, s := range dropped {
			s.Close()
		}
		b.closeGPU()
		return nil, nil
	}, nil
}

// closeGPU closes the worker's WebGPU host, destroying what buffers it
// still has and its GPUDevice; a later load opens a new one.
func (b *Binding) closeGPU() {
	b.mu.Lock()
	h := b.gpu.host
	b.gpu.host, b.gpu.err, b.gpu.opened = nil, nil, false
	b.mu.Unlock()
	if c, ok := h.(interface{ Close() }); ok {
		c.Close()
	}
}
