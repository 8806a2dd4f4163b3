package engine

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestParityModelsCoverEveryArchitecture: `wasmlm bench -gen DIR -shapes
// parity` writes a model of every architecture the engine runs, and only
// of those, and the engine loads each.
func TestParityModelsCoverEveryArchitecture(t *testing.T) {
	var archs []string
	for name := range architectures {
		archs = append(archs, name)
	}
	slices.Sort(archs)
	assert.Equal(t, archs, modelgen.ParityArchitectures(),
		"every architecture in architectures needs a parity model in internal/modelgen/parity.go's parityArchs, and every parity model an architecture")
	for _, pm := range modelgen.ParityModels() {
		if pm.Spec.Type != tensor.F32 { // the quantized ones are the F32 ones' bytes in another type
			continue
		}
		data, err := modelgen.Build(pm.Spec)
		require.NoError(t, err, pm.Name)
		m, err := Load(data, LoadOptions{})
		require.NoError(t, err, pm.Name)
		assert.Equal(t, pm.Spec.Arch, m.Info().Architecture)
	}
}
