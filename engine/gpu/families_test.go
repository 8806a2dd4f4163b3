package gpu_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// deviceFamilies are the architectures TestForwardMatchesCPU holds to the
// CPU on a WebGPU device (llama in every storage type, the others in
// Q8_0).
var deviceFamilies = []string{"llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "smollm3", "olmo2", "granite"}

// TestDeviceFamiliesAreTested: an architecture the engine lets a device
// run (Model.DeviceSupports) is one TestForwardMatchesCPU holds to the
// CPU, so a family whose layers gain a step the kernels do not compute is
// refused, with its reason, rather than run wrong on the GPU.
func TestDeviceFamiliesAreTested(t *testing.T) {
	for _, pm := range modelgen.ParityModels() {
		if pm.Spec.Type != tensor.F32 {
			continue
		}
		data, err := modelgen.Build(pm.Spec)
		require.NoError(t, err, pm.Name)
		m, err := engine.Load(data, engine.LoadOptions{})
		require.NoError(t, err, pm.Name)
		if err := m.DeviceSupports(); err != nil {
			require.NotEmpty(t, err.Error(), pm.Name)
			continue
		}
		if !slices.Contains(deviceFamilies, pm.Spec.Arch) {
			t.Errorf("%s runs on a device (Model.DeviceSupports accepts it) but TestForwardMatchesCPU does not hold it to the CPU: add it to deviceFamilies, or make DeviceSupports refuse what the kernels do not compute", pm.Spec.Arch)
		}
	}
}

// TestSupportsRefusesMXFP4: the device has no kernels for MXFP4 matrices
// (gpt-oss's experts), so Supports refuses a model that holds them, naming
// the type; under device 'auto' the model then runs on the CPU.
func TestSupportsRefusesMXFP4(t *testing.T) {
	data, err := modelgen.Build(modelgen.Spec{Arch: "llama", Shape: modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 1, Heads: 4, KVHeads: 2,
		VocabSize: 320, ContextLength: 64}, Type: tensor.MXFP4, Seed: 1})
	require.NoError(t, err)
	m, err := engine.Load(data, engine.LoadOptions{})
	require.NoError(t, err)
	err = gpu.Supports(m, gpu.Adapter{MaxBufferSize: 1 << 30, MaxStorageBufferBindingSize: 1 << 30})
	require.ErrorIs(t, err, gpu.ErrUnsupported)
	require.ErrorContains(t, err, "MXFP4 matrices are not computed on the GPU yet")
}
