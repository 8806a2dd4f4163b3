package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// gemma4MoESpec is a small Gemma 4 mixture of experts with
// Gemma-4-26B-A4B's parts (llamacpp_parity_gemma4moe_test.go's): 5
// layers, sliding at 0, 1 and 3 (heads of 16, two key/value heads), full
// at 2 and 4 (heads of 32, one key/value head, their values their keys),
// an output scale in every layer, and in every layer but 1 (which keeps
// its dense feed-forward alone) 8 experts of which each token takes 2,
// beside the dense GeGLU, their gate and up stacked in one tensor as the
// converter writes them.
func gemma4MoESpec() modelgen.Spec {
	return modelgen.Spec{Arch: "gemma4", Seed: 3, Std: 0.1, OutputStd: 0.1, MuteSpecial: true,
		Shape:  modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 5, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 384, ContextLength: 128},
		Family: modelgen.Family{SlidingWindow: 16, FinalSoftCap: 30},
		MoE:    modelgen.MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 32},
		Gemma4: &modelgen.Gemma4{Sliding: []bool{true, true, false, true, false}, SlidingHeadDim: 16, FullKVHeads: 1,
			FullKeysAsValues: true, OutputScale: true, DenseLayers: []int{1}}}
}

// TestGemma4MoELayers: a layer with a router is a mixture of experts
// with the dense feed-forward beside it and the router's own input; the
// layer without one is dense; the model refuses to split or to run on a
// device, saying why.
func TestGemma4MoELayers(t *testing.T) {
	m, err := Load(testmodel.GGUF(t, gemma4MoESpec()), LoadOptions{})
	require.NoError(t, err)
	c := m.config
	assert.Equal(t, []int{8, 2, 32}, []int{c.Experts, c.ExpertsUsed, c.ExpertHiddenDim})
	for l := range c.Layers {
		s := c.Layer(l)
		if l == 1 {
			assert.Equal(t, FFNGeGLU, s.FFN, "layer 1 is dense")
			assert.Zero(t, s.MoE)
			continue
		}
		assert.Equal(t, MoESpec{Experts: 8, Used: 2, Gating: GatingSoftmax, NormTopK: true, Activation: FFNGeGLU, Dense: true, RouterNorm: true}, s.MoE, "layer %d", l)
		lw := &m.weights.Layers[l]
		assert.NotNil(t, lw.WGateUpExps)
		assert.Nil(t, lw.WGateExps)
		assert.Len(t, lw.DownExpsScale, 8)
		assert.Len(t, lw.experts, 8)
	}
	assert.ErrorContains(t, m.SplitError(), noSplitExperts)
	assert.ErrorContains(t, m.DeviceSupports(), "mixture of 8 experts, which runs on the CPU only")
}

// TestGemma4MoEGateUpStacks: the experts' gate and up stacked in one
// tensor (the converter's) or in two (which llama.cpp reads too) give the
// same logits, bit for bit; a file with both, or with neither, is refused.
func TestGemma4MoEGateUpStacks(t *testing.T) {
	sp := gemma4MoESpec()
	sp.Type = tensor.Q8_0
	fused := testmodel.GGUF(t, sp)
	// Each expert's 64 rows of the stack: its gate's 32, then its up's 32.
	separate := rebuiltGGUF(t, fused, func(b *gguf.Builder, ti gguf.TensorInfo) bool {
		prefix, ok := strings.CutSuffix(ti.Name, "ffn_gate_up_exps.weight")
		if !ok {
			return false
		}
		require.Equal(t, uint64(64), ti.Dims[1])
		rowBytes, err := tensor.RowBytes(ti.Type, int(ti.Dims[0]))
		require.NoError(t, err)
		var gate, up []byte
		for e := range int(ti.Dims[2]) {
			at := e * 64 * rowBytes
			gate = append(gate, ti.Data[at:at+32*rowBytes]...)
			up = append(up, ti.Data[at+32*rowBytes:at+64*rowBytes]...)
		}
		dims := []uint64{ti.Dims[0], 32, ti.Dims[2]}
		b.AddTensor(prefix+"ffn_gate_exps.weight", ti.Type, dims, gate)
		b.AddTensor(prefix+"ffn_up_exps.weight", ti.Type, dims, up)
		return true
	})
	logits := func(data []byte) []float32 {
		m, err := Load(data, LoadOptions{})
		require.NoError(t, err)
		s := newSession(t, m)
		for pos, tok := range []int{5, 17, 300, 42, 9} {
			require.NoError(t, s.forward(tok, pos, pos == 4))
		}
		return s.logits
	}
	requireSameBits(t, logits(fused), logits(separate), "two stacks against one")

	both := rebuiltGGUF(t, separate, func(b *gguf.Builder, ti gguf.TensorInfo) bool {
		b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
		if ti.Name == "blk.0.ffn_up_exps.weight" {
			f, err := gguf.Parse(fused)
			require.NoError(t, err)
			whole, ok := f.Tensor("blk.0.ffn_gate_up_exps.weight")
			require.True(t, ok)
			b.AddTensor(whole.Name, whole.Type, whole.Dims, whole.Data)
		}
		return true
	})
	_, err := Load(both, LoadOptions{})
	assert.ErrorIs(t, err, ErrFormat)
	assert.ErrorContains(t, err, "blk.0 has its experts' gate and up both stacked together")

	neither := rebuiltGGUF(t, fused, func(b *gguf.Builder, ti gguf.TensorInfo) bool {
		if ti.Name != "blk.2.ffn_gate_up_exps.weight" {
			b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
		}
		return true
	})
	_, err = Load(neither, LoadOptions{})
	assert.ErrorIs(t, err, ErrFormat)
	assert.ErrorContains(t, err, "missing tensor blk.2.ffn_gate_up_exps.weight")
}
