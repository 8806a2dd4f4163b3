package simdgen

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModuleIsCommitted regenerates the modules: kernels.wasm and
// kernels-relaxed.wasm must be what the emitters write now (go generate
// ./internal/simdgen updates them).
func TestModuleIsCommitted(t *testing.T) {
	for file, module := range map[string]func() ([]byte, error){"kernels.wasm": Module, "kernels-relaxed.wasm": RelaxedModule} {
		want, err := module()
		require.NoError(t, err)
		got, err := os.ReadFile(file)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "%s is stale: run go generate ./internal/simdgen", file)
	}
}

// TestModuleIsDeterministic builds the module twice: the committed bytes
// must not depend on map order or anything else that varies between runs.
func TestModuleIsDeterministic(t *testing.T) {
	for _, module := range []func() ([]byte, error){Module, RelaxedModule} {
		a, err := module()
		require.NoError(t, err)
		b, err := module()
		require.NoError(t, err)
		require.Equal(t, a, b)
	}
}
