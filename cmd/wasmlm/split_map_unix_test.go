//go:build unix

package main

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestJoinSplitAllocatesTheModelOnce: the parts are mapped, so joining them
// allocates the joined file and a little more (the parts' headers), not the
// model twice.
func TestJoinSplitAllocatesTheModelOnce(t *testing.T) {
	sp := modelgen.Spec{Shape: modelgen.Shape{Dim: 256, HiddenDim: 512, Layers: 4, Heads: 4, KVHeads: 4, VocabSize: 1000, ContextLength: 64},
		Type: tensor.Q8_0, Seed: 1}
	parts, err := modelgen.BuildSplit(sp, 4)
	require.NoError(t, err)
	prefix := filepath.Join(t.TempDir(), "m")
	for i, p := range parts {
		require.NoError(t, os.WriteFile(gguf.SplitPath(prefix, i+1, len(parts)), p, 0o644))
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	joined, err := readModel(gguf.SplitPath(prefix, 1, len(parts)))
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("joined %d bytes, allocated %d", len(joined), allocated)
	assert.Less(t, allocated, uint64(len(joined))*11/10, "the weights once, the headers (here 1000 tokens of vocabulary) besides")
}
