package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// gptOSSModel is a small gpt-oss model (4 layers, 2 of them sliding over
// 16 positions; 4 experts, 2 used) whose experts are stored as typ; its
// prompt blocks (TestPromptBlocksAreBitIdentical) and its decode step
// (TestDecodeStepAllocatesNothing) are tested with the other families'.
func gptOSSModel(t testing.TB, typ tensor.Type) *Model {
	t.Helper()
	m, err := Load(testmodel.GGUF(t, modelgen.Spec{Arch: "gpt-oss",
		Shape:  modelgen.Shape{Dim: 64, HiddenDim: 64, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 300, ContextLength: 128},
		Family: modelgen.Family{SlidingWindow: 16, RopeYaRNFactor: 4, RopeOriginalContext: 32},
		MoE:    modelgen.MoE{Experts: 4, ExpertsUsed: 2, ExpertHiddenDim: 64},
		Type:   typ, Seed: 11, Std: 0.1, SeparateOutput: true}), LoadOptions{})
	require.NoError(t, err)
	return m
}

// TestGptOSSRefusals: a gpt-oss model does not split across workers and
// does not run on a device, each saying why.
func TestGptOSSRefusals(t *testing.T) {
	m := gptOSSModel(t, tensor.F32)
	err := m.SplitError()
	require.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), noSplitExperts)
	_, err = m.Cut(Part{})
	require.ErrorIs(t, err, ErrUnsupported)
	err = m.DeviceSupports()
	require.ErrorIs(t, err, ErrUnsupported)
	assert.Contains(t, err.Error(), "layer 0")
}
