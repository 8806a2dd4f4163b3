package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/race"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// moe is the float64 reference of layer l's mixture of experts of h,
// written from llama.cpp's description of it (build_moe_ffn): a softmax
// over the router's logits, the most probable experts, their
// probabilities renormalised to sum 1 (qwen3moe), the weighted sum of the
// chosen experts' SwiGLU feed-forwards, and qwen2moe's shared expert
// times the sigmoid of its gate. It reads each expert's rows of the
// file's 3-D tensors itself.
func (n *naiveModel) moe(l int, h []float64) []float64 {
	name := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
	logits := n.matVec(name("ffn_gate_inp.weight"), h)
	peak := slices.Max(logits)
	var sum float64
	for i, v := range logits {
		logits[i] = math.Exp(v - peak)
		sum += logits[i]
	}
	order := make([]int, len(logits))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(logits[b], logits[a]) })
	chosen := order[:n.sp.ExpertsUsed]
	total := 1.0 // qwen2moe: the probabilities as they are
	if n.sp.Arch == "qwen3moe" {
		total = 0
		for _, e := range chosen {
			total += logits[e] / sum
		}
	}
	out := make([]float64, n.sp.Dim)
	for _, e := range chosen {
		gate := n.expertMatVec(name("ffn_gate_exps.weight"), e, h)
		up := n.expertMatVec(name("ffn_up_exps.weight"), e, h)
		for i, g := range gate {
			gate[i] = g / (1 + math.Exp(-g)) * up[i]
		}
		w := logits[e] / sum / total
		for i, v := range n.expertMatVec(name("ffn_down_exps.weight"), e, gate) {
			out[i] += w * v
		}
	}
	if n.sp.SharedHiddenDim > 0 {
		var dot float64
		for i, w := range n.vector(name("ffn_gate_inp_shexp.weight")) {
			dot += w * h[i]
		}
		gate, up := n.matVec(name("ffn_gate_shexp.weight"), h), n.matVec(name("ffn_up_shexp.weight"), h)
		for i, g := range gate {
			gate[i] = g / (1 + math.Exp(-g)) * up[i]
		}
		for i, v := range n.matVec(name("ffn_down_shexp.weight"), gate) {
			out[i] += v / (1 + math.Exp(-dot))
		}
	}
	return out
}

// expertMatVec is expert e's matrix of the 3-D tensor name times x.
func (n *naiveModel) expertMatVec(name string, e int, x []float64) []float64 {
	ti, ok := n.f.Tensor(name)
	if !ok || len(ti.Dims) != 3 {
		panic(name + " is not a 3-D tensor")
	}
	rows, cols := int(ti.Dims[1]), int(ti.Dims[0])
	stack, err := tensor.NewMatrix(ti.Type, rows*int(ti.Dims[2]), cols, ti.Data)
	if err != nil {
		panic(err)
	}
	row := make([]float32, cols)
	out := make([]float64, rows)
	for r := range out {
		stack.Row(row, e*rows+r)
		for c, w := range row {
			out[r] += float64(w) * x[c]
		}
	}
	return out
}

// moeSpec is a qwen3moe model of shape sh with experts experts of which
// used are taken, each ff wide.
func moeSpec(sh modelgen.Shape, experts, used, ff int, typ tensor.Type, seed uint64) modelgen.Spec {
	return modelgen.Spec{Arch: "qwen3moe", Shape: sh, MoE: modelgen.MoE{Experts: experts, ExpertsUsed: used, ExpertHiddenDim: ff},
		RopeTheta: 1e6, NormEps: 1e-6, Type: typ, Seed: seed, Std: 0.1, SeparateOutput: true}
}

// moeShape is a small qwen3moe shape: heads twice as wide as dim/heads,
// as Qwen3-30B-A3B's (2048 wide, 32 heads of 128).
var moeShape = modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 300, ContextLength: 128}

// qwen2moe is a qwen2moe model: 8 experts of 32 units of which 2 are
// used, a shared expert of 96, heads of dim/heads.
func qwen2moeSpec(typ tensor.Type, seed uint64) modelgen.Spec {
	sh := moeShape
	sh.HeadDim = 0
	sp := moeSpec(sh, 8, 2, 32, typ, seed)
	sp.Arch, sp.SharedHiddenDim = "qwen2moe", 96
	return sp
}

// moeReferenceCases are the mixtures of experts' models for
// TestArchitecturesMatchNaiveReference.
func moeReferenceCases() []referenceCase {
	return []referenceCase{
		{"qwen3moe 8 experts, 2 used", moeSpec(moeShape, 8, 2, 32, tensor.F32, 15)},
		{"qwen3moe 6 experts, all used", moeSpec(moeShape, 6, 6, 16, tensor.F32, 16)},
		{"qwen3moe 16 experts, 1 used", moeSpec(moeShape, 16, 1, 48, tensor.F32, 17)},
		{"qwen2moe shared expert, biases", qwen2moeSpec(tensor.F32, 18)},
	}
}

// moeModels are mixtures of experts for the tests of the forward pass: in
// F32 and in Q8_0, whose stacks the SIMD and native kernels pack (experts
// of whole groups of eight rows), and in Q4_K (rows of 256).
func moeModels(t testing.TB) map[string]*Model {
	wide := modelgen.Shape{Dim: 256, HiddenDim: 512, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 128}
	models := map[string]*Model{}
	for _, sp := range []modelgen.Spec{
		moeSpec(moeShape, 8, 2, 32, tensor.F32, 21),
		moeSpec(moeShape, 8, 3, 64, tensor.Q8_0, 22),
		moeSpec(wide, 16, 4, 256, tensor.Q4_K, 23),
		qwen2moeSpec(tensor.Q8_0, 24),
	} {
		m, err := Load(testmodel.GGUF(t, sp), LoadOptions{})
		require.NoError(t, err)
		models[fmt.Sprintf("%s %d of %d experts %v", sp.Arch, sp.ExpertsUsed, sp.Experts, sp.Type)] = m
	}
	// gemma4's: a dense feed-forward beside the experts, the router's own
	// input, the experts' gate and up in one stack, their output scales.
	g4 := gemma4MoESpec()
	g4.Type = tensor.Q8_0
	m, err := Load(testmodel.GGUF(t, g4), LoadOptions{})
	require.NoError(t, err)
	models["gemma4 2 of 8 experts Q8_0"] = m
	return models
}

// TestMoEDecodeStepAllocatesNothing: a mixture of experts' decoding step
// and prompt block allocate nothing once the session's scratch exists.
func TestMoEDecodeStepAllocatesNothing(t *testing.T) {
	race.SkipAllocationCount(t)
	for name, m := range moeModels(t) {
		s := newSessionKV(t, m, KVF32)
		pos := 0
		allocs := testing.AllocsPerRun(20, func() {
			if err := s.forward(1+pos%250, pos%s.context, true); err != nil {
				t.Fatal(err)
			}
			pos++
		})
		assert.Zero(t, allocs, "%s: a token", name)
		block := []int{5, 9, 200, 7, 7, 3, 100}
		allocs = testing.AllocsPerRun(5, func() {
			if err := s.forwardBlock(block, 0, true); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, allocs, "%s: a block", name)
	}
}

// TestRouteChoosesAndWeighs: the router's choice and weights, against
// values worked out by hand: the most probable experts first, ties to the
// lower expert, weights renormalised (NormTopK) or scaled (WeightsScale).
func TestRouteChoosesAndWeighs(t *testing.T) {
	logits := func() []float32 {
		return []float32{0, float32(math.Log(3)), float32(math.Log(2)), float32(math.Log(3)), 0}
	} // e^: 1, 3, 2, 3, 1 of 10
	tests := []struct {
		name    string
		moe     MoESpec
		chosen  []int32
		weights []float32
	}{
		{"softmax, top 3", MoESpec{Experts: 5, Used: 3}, []int32{1, 3, 2}, []float32{0.3, 0.3, 0.2}},
		{"renormalised", MoESpec{Experts: 5, Used: 2, NormTopK: true}, []int32{1, 3}, []float32{0.5, 0.5}},
		{"renormalised, scaled", MoESpec{Experts: 5, Used: 3, NormTopK: true, WeightsScale: 2}, []int32{1, 3, 2}, []float32{0.75, 0.75, 0.5}},
		{"all, ties in order", MoESpec{Experts: 5, Used: 5}, []int32{1, 3, 2, 0, 4}, []float32{0.3, 0.3, 0.2, 0.1, 0.1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chosen, weights := make([]int32, tt.moe.Used), make([]float32, tt.moe.Used)
			route(&tt.moe, nil, logits(), chosen, weights)
			assert.Equal(t, tt.chosen, chosen)
			assert.InDeltaSlice(t, tt.weights, weights, 1e-6)
		})
	}
}

// TestMoEFileErrors: a mixture of experts' file that llama.cpp would not
// run as the engine does is refused, naming what is wrong.
func TestMoEFileErrors(t *testing.T) {
	data := testmodel.GGUF(t, moeSpec(moeShape, 8, 2, 32, tensor.F32, 15))
	tensorEdit := func(name string, fn func(*gguf.TensorInfo)) func(gguf.TensorInfo) (gguf.TensorInfo, bool) {
		return func(ti gguf.TensorInfo) (gguf.TensorInfo, bool) {
			if ti.Name == name {
				fn(&ti)
			}
			return ti, true
		}
	}
	// llama.cpp multiplies an expert's outputs by its scale where a file has one.
	scale := gguf.TensorInfo{Name: "blk.0.ffn_up_exps.scale", Type: tensor.F32, Dims: []uint64{8}, Data: make([]byte, 8*4)}
	tests := []struct {
		name string
		data []byte
		want string
		kind error
	}{
		{"more experts used than there are", rebuilt(t, data, map[string]any{"qwen3moe.expert_used_count": uint32(9)}, nil), "expert_used_count = 9", ErrFormat},
		{"no expert_used_count", rebuilt(t, data, map[string]any{"qwen3moe.expert_used_count": nil}, nil), "qwen3moe.expert_used_count", ErrFormat},
		{"no experts", rebuilt(t, data, map[string]any{"qwen3moe.expert_count": uint32(0), "qwen3moe.expert_used_count": uint32(0)}, nil), "experts", ErrFormat},
		{"a stack of 4 experts", rebuilt(t, data, nil, tensorEdit("blk.1.ffn_up_exps.weight", func(ti *gguf.TensorInfo) {
			ti.Dims = []uint64{64, 64, 4}
		})), "tensor blk.1.ffn_up_exps.weight holds 4 experts, expert_count says 8", ErrFormat},
		{"experts as a matrix", rebuilt(t, data, nil, tensorEdit("blk.0.ffn_gate_exps.weight", func(ti *gguf.TensorInfo) {
			ti.Dims = []uint64{64, 256}
		})), "blk.0.ffn_gate_exps.weight has 2 dimensions, want 3", ErrFormat},
		{"narrower experts", rebuilt(t, data, nil, tensorEdit("blk.0.ffn_down_exps.weight", func(ti *gguf.TensorInfo) {
			ti.Dims, ti.Data = []uint64{16, 64, 8}, ti.Data[:16*64*8*4]
		})), "tensor blk.0.ffn_down_exps.weight is 512×16, want 512×32", ErrFormat},
		{"without a router", rebuilt(t, data, nil, func(ti gguf.TensorInfo) (gguf.TensorInfo, bool) {
			return ti, ti.Name != "blk.1.ffn_gate_inp.weight"
		}), "missing tensor blk.1.ffn_gate_inp.weight", ErrFormat},
		{"per-expert scales", rebuilt(t, data, nil, nil, scale), "tensor blk.0.ffn_up_exps.scale", ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.data, LoadOptions{})
			assert.ErrorIs(t, err, tt.kind)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// TestMoERefusesSplitAndDevice: a mixture of experts neither splits
// across workers nor runs on a Device (under device 'auto' it runs on
// the CPU), each refusal saying why.
func TestMoERefusesSplitAndDevice(t *testing.T) {
	m, err := Load(testmodel.GGUF(t, moeSpec(moeShape, 8, 2, 32, tensor.F32, 15)), LoadOptions{})
	require.NoError(t, err)
	err = m.SplitError()
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "qwen3moe models cannot be split across workers: its layers' mixtures of experts")
	_, err = m.Cut(Part{})
	assert.ErrorIs(t, err, ErrUnsupported)
	err = m.DeviceSupports()
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "layer 0's feed-forward is a mixture of 8 experts, which runs on the CPU only")
}

// TestMoEInfo: Info, from the model and from its header alone, says the
// experts and each layer's mixture of experts.
func TestMoEInfo(t *testing.T) {
	data := testmodel.GGUF(t, moeSpec(moeShape, 8, 2, 32, tensor.F32, 15))
	m, err := Load(data, LoadOptions{})
	require.NoError(t, err)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	h, err := ReadHeader(f)
	require.NoError(t, err)
	for _, info := range []Info{m.Info(), h.Info(len(data))} {
		assert.Equal(t, []int{8, 2, 32, 0}, []int{info.Experts, info.ExpertsUsed, info.ExpertHiddenDim, info.SharedHiddenDim})
		require.Len(t, info.LayerSpecs, 2)
		assert.Equal(t, LayerSpec{QKNorm: QKNormHeads, FFN: FFNMoE, MoE: MoESpec{Experts: 8, Used: 2, NormTopK: true}}, info.LayerSpecs[1])
		js, err := json.Marshal(info.LayerSpecs[0])
		require.NoError(t, err)
		assert.Contains(t, string(js), `"ffn":"moe","moe":{"experts":8,"used":2,"gating":"softmax","norm_top_k":true,"activation":"swiglu"}`)
	}
}

// TestMoENonFiniteWeightsFailGeneration: a NaN in a router or in an
// expert a token takes fails the generation as in a dense layer (see
// TestNonFiniteWeightsFailGeneration), naming the tensor and the row of
// the stack of experts that holds it.
func TestMoENonFiniteWeightsFailGeneration(t *testing.T) {
	all := testmodel.GGUF(t, moeSpec(moeShape, 4, 4, 32, tensor.Q8_0, 19)) // every expert is taken
	tests := []struct {
		name, tensor string
		row, col     int
		want         string
	}{
		{"router", "blk.0.ffn_gate_inp.weight", 2, 7, "tensor blk.0.ffn_gate_inp.weight holds NaN at row 2, column 7"},
		{"an expert's down projection", "blk.1.ffn_down_exps.weight", 2*64 + 5, 0, "tensor blk.1.ffn_down_exps.weight holds NaN at row 133, column 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Load(editedGGUF(t, all, tt.tensor, setValue(tt.row, tt.col, 0, nan)), LoadOptions{})
			require.NoError(t, err)
			_, err = newSession(t, m).GenerateTokens(context.Background(), []int{1, 5, 42}, GenerateOptions{MaxTokens: 4}, nil)
			assert.ErrorIs(t, err, ErrFormat)
			assert.ErrorContains(t, err, tt.want)
			assert.ErrorContains(t, err, "feed-forward activations at position 0")
		})
	}
}
