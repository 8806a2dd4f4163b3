package jsbridge

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/webgpu"
)

// gpuDevice is a model's GPU: the engine.Device its session's forward
// pass runs on, holding the weights; Close frees its buffers at once.
type gpuDevice interface {
	engine.Device
	Close()
}

// openGPU opens navigator.gpu's adapter and a device on it, with the
// adapter's own limits (webgpu.Open); the error says why there is none:
// no navigator.gpu (no WebGPU, an insecure context, Node.js), no adapter.
func openGPU() (gpu.Host, error) {
	h, err := webgpu.Open(webgpu.Options{})
	if err != nil {
		return nil, errors.New(strings.TrimSuffix(strings.TrimPrefix(err.Error(), "webgpu: "), ": "+gpu.ErrUnsupported.Error()))
	}
	return h, nil
}

// newGPUDevice checks that the GPU path runs m on h's adapter, within the
// limits its device was requested with (gpu.Supports: the recipe's steps,
// the matrices' types, the largest buffer), and makes m's device; its first
// session uploads the weights.
func newGPUDevice(h gpu.Host, m *engine.Model) (gpuDevice, error) {
	d, err := gpu.NewDevice(h, m)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// gpuRunsHeader says, from a header (the config c and the types of the
// tensors a device reads), whether the GPU path could run the model: nil,
// or an error wrapping gpu.ErrUnsupported. A model it cannot run may then
// be split across workers. An encoder runs on the CPU only
// (engine.Model.DeviceSupports), and the products read the types of
// gpu.Types.
func gpuRunsHeader(c engine.Config, types []tensor.Type) error {
	if c.Encoder {
		return fmt.Errorf("%w: an encoder runs on the CPU only", gpu.ErrUnsupported)
	}
	for _, t := range types {
		if !slices.Contains(gpu.Types(), t) {
			return fmt.Errorf("%w: %v matrices are not computed on the GPU yet", gpu.ErrUnsupported, t)
		}
	}
	return nil
}

// gpuMemory is what a load on the GPU would take of its memory, from the
// header alone (inspect): the weights, uploaded in their stored form, and
// the KV cache, which lives on the GPU; its activations add a prompt
// block's worth.
func gpuMemory(m engine.Memory) int64 {
	return m.Weights + m.KVCache
}
