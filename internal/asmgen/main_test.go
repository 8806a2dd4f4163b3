//go:build !js

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAssemblyIsCommitted runs the generator into a temporary directory:
// engine/tensor's native_amd64.s, its stubs and native_arm64.s must be
// what it writes now
// (go generate ./engine/tensor updates them).
func TestAssemblyIsCommitted(t *testing.T) {
	dir := t.TempDir()
	out, stubs, arm64 := filepath.Join(dir, "native_amd64.s"), filepath.Join(dir, "native_stubs_amd64.go"), filepath.Join(dir, "native_arm64.s")
	cmd := exec.Command("go", "run", ".", "-out", out, "-stubs", stubs, "-pkg", "tensor", "-arm64", arm64)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	for _, f := range []string{out, stubs, arm64} {
		want, err := os.ReadFile(f)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join("..", "..", "engine", "tensor", filepath.Base(f)))
		require.NoError(t, err)
		// The first line names the command, with its paths.
		require.Equal(t, afterLine(string(want)), afterLine(string(got)), "%s is stale: run go generate ./engine/tensor", filepath.Base(f))
	}
}

// afterLine is s from its second line on.
func afterLine(s string) string {
	_, rest, _ := strings.Cut(s, "\n")
	return rest
}
