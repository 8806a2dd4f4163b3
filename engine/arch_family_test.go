package engine

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// The float64 reference's steps for the families beyond llama, qwen2 and
// qwen3 (see naiveModel), from the formulas of each family's paper or
// model card and llama.cpp's graphs, not from the engine's code.

// neox reports whether the family rotates the first half of the rotated
// dimensions with the second (else adjacent pairs).
func (n *naiveModel) neox() bool {
	switch n.sp.Arch {
	case "llama", "smollm3", "granite":
		return false
	}
	return true
}

// ropeDims is how many dimensions of a head rotate.
func (n *naiveModel) ropeDims() int {
	if n.sp.RopeDims > 0 {
		return n.sp.RopeDims
	}
	return n.sp.HeadSize()
}

// ropeFactors are the frequency factors and the attention factor: phi3's
// long LongRoPE factors when the context (the model's, as the test's
// session has it, rounded up to a multiple of 256 as llama.cpp allocates
// contexts) exceeds the original training context, else the short ones.
func (n *naiveModel) ropeFactors() ([]float32, float64) {
	sp := n.sp
	if sp.RopeFactorsLong == nil {
		return sp.RopeFreqFactors, 1
	}
	attn := 1.0
	if sp.RopeAttnFactor != 0 {
		attn = float64(sp.RopeAttnFactor)
	}
	context := (min(sp.ContextLength, DefaultContextLength) + 255) / 256 * 256
	original := sp.RopeOriginalContext
	if original == 0 {
		original = sp.ContextLength
	}
	if context > original {
		return sp.RopeFactorsLong, attn
	}
	return sp.RopeFactorsShort, attn
}

// rotates reports whether layer l has rotary embeddings: SmolLM3's every
// 4th has none.
func (n *naiveModel) rotates(l int) bool {
	return n.sp.Arch != "smollm3" || (l+1)%4 != 0
}

// attentionScale is Granite's attention multiplier, or 1/√headDim.
func (n *naiveModel) attentionScale() float64 {
	if n.sp.AttentionScale != 0 {
		return float64(n.sp.AttentionScale)
	}
	return 1 / math.Sqrt(float64(n.sp.HeadSize()))
}

// scaleBy multiplies x by s, unless s is 0 (no multiplier).
func (n *naiveModel) scaleBy(x []float64, s float64) {
	if s == 0 {
		return
	}
	for i := range x {
		x[i] *= s
	}
}

// preNorm is a sub-layer's input: x normalised by the weights named, or
// x itself for OLMo 2, which has no pre-norms.
func (n *naiveModel) preNorm(x []float64, weight string) []float64 {
	if n.sp.Arch == "olmo2" {
		return append([]float64(nil), x...)
	}
	return n.rms(x, weight)
}

// sublayerOut is what a sub-layer adds to the residual stream: its output
// normalised by OLMo 2's post-norm, or multiplied by Granite's residual
// multiplier.
func (n *naiveModel) sublayerOut(out []float64, postNorm string) []float64 {
	if n.sp.Arch == "olmo2" {
		out = n.rms(out, postNorm)
	}
	n.scaleBy(out, float64(n.sp.ResidualScale))
	return out
}

// qkv projects h to the queries, keys and values: phi3's fused matrix's
// rows are the queries', then the keys', then the values'.
func (n *naiveModel) qkv(l int, h []float64) (q, k, v []float64) {
	name := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
	if n.sp.Arch != "phi3" {
		return n.matVec(name("attn_q.weight"), h), n.matVec(name("attn_k.weight"), h), n.matVec(name("attn_v.weight"), h)
	}
	all := n.matVec(name("attn_qkv.weight"), h)
	qd, kvd := n.sp.QDim(), n.sp.KVDim()
	return all[:qd], all[qd : qd+kvd], all[qd+kvd:]
}

// gateUp is the feed-forward's gate and up projections of h: phi3's
// fused ffn_up holds the gate's rows, then up's.
func (n *naiveModel) gateUp(l int, h []float64) (gate, up []float64) {
	name := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
	if n.sp.Arch != "phi3" {
		return n.matVec(name("ffn_gate.weight"), h), n.matVec(name("ffn_up.weight"), h)
	}
	both := n.matVec(name("ffn_up.weight"), h)
	return both[:n.sp.HiddenDim], both[n.sp.HiddenDim:]
}

// familyReferenceCases are the families' models for
// TestArchitecturesMatchNaiveReference, on tinyShape (heads of 8).
func familyReferenceCases() []referenceCase {
	phi3 := specOf("phi3", tinyShape, 9, 0.1)
	phi3.SeparateOutput = true
	// Partial rotary (6 of 8 dimensions) with LongRoPE: the long factors,
	// as the session's 32 positions (256 in llama.cpp's rounding) exceed
	// the original 16.
	phi3.Family = modelgen.Family{RopeDims: 6, RopeOriginalContext: 16, RopeAttnFactor: 1.2,
		RopeFactorsLong: []float32{1, 3, 9}, RopeFactorsShort: []float32{1, 1.1, 1.3}}
	phi3Short := phi3
	phi3Short.SeparateOutput = false // Phi-4-mini ties its output
	phi3Short.Family = modelgen.Family{RopeOriginalContext: 256, RopeAttnFactor: 1.2,
		RopeFactorsLong: []float32{1, 3, 9, 27}, RopeFactorsShort: []float32{1, 1.1, 1.3, 1.6}}
	phi3Plain := specOf("phi3", tinyShape, 10, 0.1) // Phi-3-mini-4k: no LongRoPE
	fourLayers := tinyShape
	fourLayers.Layers = 4
	smollm3 := specOf("smollm3", fourLayers, 11, 0.1)
	olmo2 := specOf("olmo2", tinyShape, 12, 0.1)
	olmo2.SeparateOutput = true
	granite := specOf("granite", tinyShape, 13, 0.1)
	granite.Family = modelgen.Family{EmbeddingScale: 12, AttentionScale: 0.125, ResidualScale: 0.22, LogitScale: 8}
	graniteLogits := specOf("granite", tinyShape, 14, 0.1)
	graniteLogits.Family = modelgen.Family{LogitScale: 3}
	return []referenceCase{
		{"phi3 fused q/k/v and gate/up, partial rotary, LongRoPE long factors", phi3},
		{"phi3 LongRoPE short factors, tied output", phi3Short},
		{"phi3 without LongRoPE", phi3Plain},
		{"smollm3 every 4th layer without rope", smollm3},
		{"olmo2 post-norms, q/k norms over all heads", olmo2},
		{"granite multipliers", granite},
		{"granite logit scale alone", graniteLogits},
	}
}

// familyShape is a small shape for the families' models in the tests of
// the forward pass (heads of 16, 128 positions).
var familyShape = modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 128}

// withLayers is s with n layers.
func withLayers(s modelgen.Shape, n int) modelgen.Shape {
	s.Layers = n
	return s
}

// TestFamilyInfo: Info shows what each family's file says beyond the
// llama family's keys, the same from the header alone as from the loaded
// model, which counts a fused tensor (phi3's attn_qkv, ffn_up) once.
func TestFamilyInfo(t *testing.T) {
	cases := familyReferenceCases()
	want := map[string]Info{
		cases[0].name: {RopeDims: 6, RopeFactors: "long/short", RopeAttnFactor: 1.2, RopeOriginalContext: 16},
		cases[1].name: {RopeFactors: "long/short", RopeAttnFactor: 1.2, RopeOriginalContext: 256},
		cases[2].name: {RopeOriginalContext: 32},
		cases[3].name: {NoRopeInterval: 4},
		cases[4].name: {},
		cases[5].name: {EmbeddingScale: 12, AttentionScale: 0.125, ResidualScale: 0.22, LogitScale: 8},
		cases[6].name: {LogitScale: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := testmodel.GGUF(t, c.spec)
			m, err := Load(data, LoadOptions{})
			require.NoError(t, err)
			f, err := gguf.Parse(data)
			require.NoError(t, err)
			h, err := ReadHeader(f)
			require.NoError(t, err)
			info := m.Info()
			assert.Equal(t, info, h.Info(len(data)))
			w := want[c.name]
			if c.spec.Arch == "olmo2" {
				assert.Contains(t, info.SplitError, "olmo2 normalises all the queries")
			} else {
				assert.Empty(t, info.SplitError)
			}
			got := Info{RopeDims: info.RopeDims, RopeFactors: info.RopeFactors, RopeAttnFactor: info.RopeAttnFactor,
				RopeOriginalContext: info.RopeOriginalContext, NoRopeInterval: info.NoRopeInterval, EmbeddingScale: info.EmbeddingScale,
				AttentionScale: info.AttentionScale, ResidualScale: info.ResidualScale, LogitScale: info.LogitScale}
			assert.Equal(t, w, got)
			var params int64
			for _, ti := range f.Tensors() {
				params += ti.Elements()
			}
			assert.Equal(t, params, info.Parameters, "every tensor of the file, once")
			assert.Equal(t, len(f.Tensors()), info.TensorTypes["F32"], "the tensors' types, each once")
		})
	}
}

// TestFamilyFileErrors: what a family's file may say and the engine does
// not compute is an error naming it (unsupported), as is a file that lacks
// what llama.cpp requires (malformed); granite's switch for no rope turns
// it off in every layer.
func TestFamilyFileErrors(t *testing.T) {
	// edit rebuilds the file of sp with its metadata changed by kvs (a nil
	// value deletes the key) and, when extra is set, one more tensor.
	edit := func(sp modelgen.Spec, kvs map[string]any, extra string) []byte {
		var more []gguf.TensorInfo
		if extra != "" {
			more = append(more, gguf.TensorInfo{Name: extra, Type: tensor.F32, Dims: []uint64{64}, Data: make([]byte, 64*4)})
		}
		return rebuilt(t, testmodel.GGUF(t, sp), kvs, nil, more...)
	}
	cases := familyReferenceCases()
	phi3, olmo2, granite := cases[0].spec, cases[4].spec, cases[5].spec
	llama := specOf("llama", tinyShape, 1, 0.1)
	tests := []struct {
		name string
		data []byte
		want string
		kind error
	}{
		{"phi3 with separate q", edit(phi3, nil, "blk.1.attn_q.weight"), "tensor blk.1.attn_q.weight", ErrUnsupported},
		{"granite with an FFN bias", edit(granite, nil, "blk.0.ffn_down.bias"), "tensor blk.0.ffn_down.bias", ErrUnsupported},
		{"granite without logit_scale", edit(granite, map[string]any{"granite.logit_scale": nil}, ""), "granite.logit_scale", ErrFormat},
		{"granite vision", edit(granite, map[string]any{"granite.deepstack_mapping": uint32(1)}, ""), "deepstack", ErrUnsupported},
		{"olmo3 sliding window", edit(olmo2, map[string]any{"olmo2.attention.sliding_window": uint32(4096)}, ""), "sliding-window", ErrUnsupported},
		{"llama partial rotary", edit(llama, map[string]any{"llama.rope.dimension_count": uint32(4)}, ""), "rotary embeddings over 4 of 8", ErrUnsupported},
		{"phi3 odd rotary", edit(phi3, map[string]any{"phi3.rope.dimension_count": uint32(5)}, ""), "rotary embeddings over 5 of 8", ErrFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.data, LoadOptions{})
			assert.ErrorIs(t, err, tt.kind)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	m, err := Load(edit(granite, map[string]any{"granite.rope.scaling.finetuned": false}, ""), LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, m.Info().NoRopeInterval)
	assert.True(t, m.Config().Layer(0).Attention.NoPE)
}

// TestFamilyFingerprint: models that differ only in a family's
// hyper-parameter (Granite's multipliers) have different fingerprints, so
// parts of the one do not work with parts of the other.
func TestFamilyFingerprint(t *testing.T) {
	seen := map[uint64]string{}
	for name, f := range map[string]modelgen.Family{
		"logit 8":          {LogitScale: 8},
		"logit 4":          {LogitScale: 4},
		"logit 8, embed 2": {LogitScale: 8, EmbeddingScale: 2},
		"logit 8, resid 2": {LogitScale: 8, ResidualScale: 2},
	} {
		sp := specOf("granite", tinyShape, 1, 0.1)
		sp.Family = f
		m, err := Load(testmodel.GGUF(t, sp), LoadOptions{})
		require.NoError(t, err)
		fp := m.Fingerprint()
		assert.NotContains(t, seen, fp, "%s has %s's fingerprint", name, seen[fp])
		seen[fp] = name
	}
}
