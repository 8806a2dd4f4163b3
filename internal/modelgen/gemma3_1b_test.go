package modelgen_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestGemma3_1B: the benchmark's Gemma-3-1B shape has Gemma-3-1B's
// parameters, 999,885,952 (its Hugging Face checkpoint's count, the output
// tied to the embedding), read from the header alone; its KV cache at 4096
// positions holds 22 layers of 512 positions and 4 of 4096; its bench
// models are gemma3 files in Q8_0 and Q4_K.
func TestGemma3_1B(t *testing.T) {
	sh, err := modelgen.ShapeByName("gemma3-1b")
	require.NoError(t, err)
	assert.Equal(t, modelgen.Gemma3_1B(), sh)
	h, size := benchHeader(t, "gemma3", sh)
	c := h.Config()
	assert.Equal(t, []int{1152, 1024, 256, 256}, []int{c.Dim, c.QDim(), c.KVDim(), c.HeadDim()})
	assert.EqualValues(t, 999_885_952, h.Info(size).Parameters)
	assert.Equal(t, 512, h.Info(size).SlidingWindow)
	assert.EqualValues(t, 2*(22*512+4*4096)*256*2, c.KVCacheBytes(4096, engine.KVF32)/2)
	requireBenchModels(t, "gemma3-1b", "gemma3", "gemma3-1b-Q8_0", "gemma3-1b-Q4_K")
}
