package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// tinySpec is a small model for fuzzing: 2 kv heads, Q8_0 matrices.
var tinySpec = modelgen.Spec{
	Shape: modelgen.Shape{Dim: 32, HiddenDim: 64, Layers: 1, Heads: 4, KVHeads: 2, VocabSize: modelgen.MinVocabSize, ContextLength: 8},
	Type:  tensor.Q8_0, Seed: 5,
}

// FuzzShardGGUF: ShardGGUF never panics on any bytes or split, and what it
// writes always loads as the shard that Model.Shard cuts from the same file.
// The seed corpus (testdata/fuzz/FuzzShardGGUF) holds a tiny model and one
// of its shards.
func FuzzShardGGUF(f *testing.F) {
	data, err := modelgen.Build(tinySpec)
	require.NoError(f, err)
	f.Add(data, 1, 2)
	f.Fuzz(func(t *testing.T, data []byte, index, count int) {
		out, err := ShardGGUF(data, index, count)
		if err != nil {
			return
		}
		shard, err := LoadGGUF(out)
		require.NoError(t, err, "a shard file always loads")
		i, n := shard.Shards()
		require.Equal(t, []int{index, count}, []int{i, n})
		whole, err := LoadGGUF(data)
		require.NoError(t, err)
		view, err := whole.Shard(index, count)
		require.NoError(t, err)
		assertSameWeights(t, view.Weights, shard.Weights)
		require.Equal(t, *view.shard, *shard.shard)
	})
}
