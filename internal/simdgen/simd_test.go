package simdgen

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModuleIsCommitted regenerates the module: kernels.wasm must be what
// the emitters write now (go generate ./internal/simdgen updates it).
func TestModuleIsCommitted(t *testing.T) {
	want, err := Module()
	require.NoError(t, err)
	got, err := os.ReadFile("kernels.wasm")
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "kernels.wasm is stale: run go generate ./internal/simdgen")
}

// TestModuleIsDeterministic builds the module twice: the committed bytes
// must not depend on map order or anything else that varies between runs.
func TestModuleIsDeterministic(t *testing.T) {
	a, err := Module()
	require.NoError(t, err)
	b, err := Module()
	require.NoError(t, err)
	require.Equal(t, a, b)
}
