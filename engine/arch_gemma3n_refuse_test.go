//go:build !js

package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// TestGemma3nRefusals: what the engine does not run of gemma3n is refused
// with the reason: a split, the GPU, AltUp's streams other than
// llama.cpp's, a list of sliding layers other than its pattern.
func TestGemma3nRefusals(t *testing.T) {
	data := loadedWholeOnCPU(t, gemma3nSpec(tensor.F32), "AltUp")
	sliding := make([]bool, 22)
	for l := range sliding {
		sliding[l] = l%4 != 3
	}
	for _, tt := range []struct {
		name string
		set  map[string]gguf.Value
		want string
	}{
		{"three streams", map[string]gguf.Value{"gemma3n.altup.num_inputs": gguf.ValueOf(uint32(3))}, "3 AltUp streams"},
		{"another active stream", map[string]gguf.Value{"gemma3n.altup.active_idx": gguf.ValueOf(uint32(1))}, "stream 1 active"},
		{"another sliding pattern", map[string]gguf.Value{"gemma3n.attention.sliding_window_pattern": gguf.ArrayOf(sliding)}, "layer 3 slides"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(withKeys(t, data, tt.set, ""), LoadOptions{})
			assert.ErrorIs(t, err, ErrUnsupported)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// loadedWholeOnCPU builds the model of spec, which must load, refuse a
// split (Model.Cut, before the part is looked at) and a device, saying
// why (the device's reason containing device), and returns its file.
func loadedWholeOnCPU(t *testing.T, spec modelgen.Spec, device string) []byte {
	t.Helper()
	data := testmodel.GGUF(t, spec)
	m, err := Load(data, LoadOptions{})
	require.NoError(t, err)
	assert.ErrorIs(t, m.SplitError(), ErrUnsupported)
	_, err = m.Cut(Part{})
	assert.ErrorContains(t, err, spec.Arch+" models cannot be split")
	assert.ErrorContains(t, m.DeviceSupports(), device)
	return data
}
