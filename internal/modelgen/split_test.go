package modelgen_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestBuildSplit: the parts hold Build's tensors in order, the first its
// metadata, and each says which part it is.
func TestBuildSplit(t *testing.T) {
	sp := modelgen.Spec{Shape: tiny, Type: tensor.Q8_0, Seed: 5}
	whole, err := modelgen.Build(sp)
	require.NoError(t, err)
	wf, err := gguf.Parse(whole)
	require.NoError(t, err)
	parts, err := modelgen.BuildSplit(sp, 3)
	require.NoError(t, err)
	require.Len(t, parts, 3)

	var tensors []gguf.TensorInfo
	for i, p := range parts {
		f, err := gguf.Parse(p)
		require.NoError(t, err)
		s, ok, err := f.Split()
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, gguf.SplitInfo{Index: i, Count: 3, Tensors: len(wf.Tensors())}, s)
		if i == 0 {
			assert.Len(t, f.KVs(), len(wf.KVs())+3)
		}
		tensors = append(tensors, f.Tensors()...)
	}
	require.Len(t, tensors, len(wf.Tensors()))
	for i, want := range wf.Tensors() {
		assert.Equal(t, want.Name, tensors[i].Name)
		assert.True(t, bytes.Equal(want.Data, tensors[i].Data), want.Name)
	}
}

func TestBuildSplitErrors(t *testing.T) {
	sp := modelgen.Spec{Shape: tiny, Seed: 5} // 20 tensors
	for _, parts := range []int{0, -1, 21, 6 /* at most 4 a part: 5 parts */} {
		_, err := modelgen.BuildSplit(sp, parts)
		require.ErrorIs(t, err, modelgen.ErrSpec, "%d parts", parts)
		t.Log(err)
	}
	one, err := modelgen.BuildSplit(sp, 1)
	require.NoError(t, err)
	require.Len(t, one, 1)
	_, err = modelgen.BuildSplit(modelgen.Spec{}, 2)
	require.ErrorIs(t, err, modelgen.ErrSpec)
}
