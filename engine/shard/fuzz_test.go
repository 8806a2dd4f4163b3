package shard

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// tinySpec is a small model for fuzzing: 2 kv heads, Q8_0 matrices.
var tinySpec = modelgen.Spec{
	Shape: modelgen.Shape{Dim: 32, HiddenDim: 64, Layers: 1, Heads: 4, KVHeads: 2, VocabSize: modelgen.MinVocabSize, ContextLength: 8},
	Type:  tensor.Q8_0, Seed: 5,
}

// FuzzFile: File never panics on any bytes or split, and what it writes
// always loads as the shard that Cut makes from the same file. The seed
// corpus (testdata/fuzz/FuzzFile) holds a tiny model and one of its shards.
func FuzzFile(f *testing.F) {
	data, err := modelgen.Build(tinySpec)
	require.NoError(f, err)
	f.Add(data, 1, 2)
	f.Fuzz(func(t *testing.T, data []byte, index, count int) {
		out, err := File(data, index, count)
		if err != nil {
			return
		}
		part, err := Load(out)
		require.NoError(t, err, "a shard's file always loads")
		require.Equal(t, []int{index, count}, []int{part.Index, part.Count})
		whole, err := engine.LoadGGUF(data)
		require.NoError(t, err)
		cut, err := Cut(whole, index, count)
		require.NoError(t, err)
		require.Equal(t, cut.plan, part.plan)
		require.Equal(t, cut.source, part.source)
		require.Equal(t, cut.Model.Fingerprint(), part.Model.Fingerprint())
	})
}
