package engine

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// TestLayerRecipesMatchTables: each family's recipe uses the norms and the
// gate its tensor table holds, and no other: a norm the recipe asks for is
// a tensor the loader requires, and a tensor the table lists is one the
// recipe reads.
func TestLayerRecipesMatchTables(t *testing.T) {
	for name, a := range architectures {
		t.Run(name, func(t *testing.T) {
			r := a.layer
			assert.Equal(t, r.Norms.pre(), a.has("blk.%d.attn_norm.weight"), "pre-norms")
			postNorm := false // qwen35's and gpt-oss's post_attention_norm is their feed-forward's pre-norm
			for _, s := range a.tensors {
				postNorm = postNorm || s.at == slotAttnPostNorm
			}
			assert.Equal(t, r.Norms.post(), postNorm, "post-norms")
			assert.Equal(t, r.Norms == NormsResidual, a.has("blk.%d.attn_output_norm.weight"), "the encoders' norms")
			qk := QKNormNone
			for _, s := range a.tensors {
				if s.name == "blk.%d.attn_q_norm.weight" {
					qk = map[dimension]QKNorm{dimHead: QKNormHeads, dimQ: QKNormAll}[s.rows]
				}
			}
			assert.Equal(t, qk, r.QKNorm, "q/k norms")
			gated := false
			for _, s := range a.tensors {
				gated = gated || s.at == slotWGate || s.at == slotWGateExps // phi3's, a piece of its ffn_up; a mixture of experts' stacked gates
			}
			assert.Equal(t, r.FFN != FFNGELU, gated, "a gate")
			assert.Equal(t, a.encoder, r.Norms == NormsResidual, "the encoders' layers")
		})
	}
}

// TestLayerSpecs: what each family's files make of its layers, in Config
// and in Info (and its JSON), the same from the header as from the model.
func TestLayerSpecs(t *testing.T) {
	fourLayers := familyShape
	fourLayers.Layers = 4
	gemma3 := gemmaSpec("gemma3", tensor.F32, 16)
	gemma3.RopeLinearScale = 4
	// 1/√32, as configureGemma derives it in float32.
	gemmaScale := AttentionSpec{ScaleQueries: true, Scale: 0.17677669}
	gemmaSliding := gemmaScale
	gemmaSliding.Window, gemmaSliding.RopeTheta, gemmaSliding.RopeScale = 16, 10000, 1
	gemma3Layer := LayerSpec{Norms: NormsPreAndPost, QKNorm: QKNormHeads, FFN: FFNGeGLU, Attention: gemmaSliding}
	gemma3Full := gemma3Layer
	gemma3Full.Attention = gemmaScale
	granite := modelgen.Spec{Arch: "granite", Shape: familyShape, Family: modelgen.Family{EmbeddingScale: 12, AttentionScale: 0.0625, ResidualScale: 0.22, LogitScale: 8}, Seed: 1, Std: 0.1}
	graniteLayer := LayerSpec{ResidualScale: 0.22, Attention: AttentionSpec{Scale: 0.0625}}
	for _, tt := range []struct {
		name string
		spec modelgen.Spec
		want []LayerSpec
		json string // the first layer's, in Info
	}{
		{"llama", modelgen.Spec{Shape: familyShape, Seed: 1, Std: 0.1}, []LayerSpec{{}, {}},
			`{"kind":"attention","norms":"pre","attention":{},"ffn":"swiglu"}`},
		{"smollm3: every 4th layer unrotated", modelgen.Spec{Arch: "smollm3", Shape: fourLayers, Seed: 1, Std: 0.1},
			[]LayerSpec{{}, {}, {}, {Attention: AttentionSpec{NoPE: true}}}, ""},
		{"olmo2: post-norms, q/k norms over all heads", modelgen.Spec{Arch: "olmo2", Shape: familyShape, Seed: 1, Std: 0.1, SeparateOutput: true},
			[]LayerSpec{{Norms: NormsPost, QKNorm: QKNormAll}, {Norms: NormsPost, QKNorm: QKNormAll}},
			`{"kind":"attention","norms":"post","qk_norm":"all","attention":{},"ffn":"swiglu"}`},
		{"granite: attention and residual scales", granite, []LayerSpec{graniteLayer, graniteLayer},
			`{"kind":"attention","norms":"pre","attention":{"scale":0.0625},"ffn":"swiglu","residual_scale":0.22}`},
		{"gemma3: 5 of 6 layers slide, rotating by their own base, unscaled", gemma3,
			[]LayerSpec{gemma3Layer, gemma3Layer, gemma3Layer, gemma3Layer, gemma3Layer, gemma3Full, gemma3Layer},
			`{"kind":"attention","norms":"pre+post","qk_norm":"heads","attention":{"window":16,"rope_freq_base":10000,"rope_scale":1,"scale":0.17677669,"scale_queries":true},"ffn":"geglu"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := testmodel.GGUF(t, tt.spec)
			m, err := Load(data, LoadOptions{})
			require.NoError(t, err)
			assert.Equal(t, tt.want, m.Config().LayerSpecs)
			info := m.Info()
			assert.Equal(t, tt.want, info.LayerSpecs)
			f, err := gguf.Parse(data)
			require.NoError(t, err)
			h, err := ReadHeader(f)
			require.NoError(t, err)
			assert.Equal(t, tt.want, h.Info(len(data)).LayerSpecs)
			if tt.json != "" {
				raw, err := json.Marshal(info.LayerSpecs[0])
				require.NoError(t, err)
				assert.JSONEq(t, tt.json, string(raw))
			}
		})
	}
}

// TestLayerSpecsValidate: a recipe out of range is refused, naming the
// layer.
func TestLayerSpecsValidate(t *testing.T) {
	base := Config{Dim: 8, HiddenDim: 8, Layers: 2, Heads: 2, KVHeads: 1, VocabSize: 10, ContextLength: 8, RopeTheta: 10000, RopeScale: 1, NormEps: 1e-5}
	for _, tt := range []struct {
		name  string
		specs []LayerSpec
		want  string
	}{
		{"fewer recipes than layers", []LayerSpec{{}}, "1 layer recipes for 2 layers"},
		{"an unknown kind", []LayerSpec{{}, {Kind: 7}}, "layer 1: kind 7"},
		{"a negative window", []LayerSpec{{Attention: AttentionSpec{Window: -1}}, {}}, "layer 0: sliding window -1"},
		{"a negative rope base", []LayerSpec{{}, {Attention: AttentionSpec{RopeTheta: -1}}}, "layer 1: rope base -1"},
		{"queries scaled by 0", []LayerSpec{{Attention: AttentionSpec{ScaleQueries: true}}, {}}, "layer 0: query scale 0"},
		{"an infinite soft-cap", []LayerSpec{{}, {Attention: AttentionSpec{SoftCap: float32(math.Inf(1))}}}, "layer 1: attention soft-cap"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			c.LayerSpecs = tt.specs
			err := c.validate()
			assert.ErrorContains(t, err, tt.want)
		})
	}
	assert.NoError(t, base.validate(), "no recipes: every layer the llama family's")
}

// TestSlots: every slot names a field of its kind (matrix or vector), a
// field no other slot names, and some family's table fills it.
func TestSlots(t *testing.T) {
	w := &modelWeights{Layers: make([]layerWeights, 1)}
	used := map[slot]bool{}
	for _, a := range architectures {
		for _, s := range a.tensors {
			used[s.at] = true
		}
	}
	last := slot(0) // the last slot that names a field: the slots' list is appended to
	for s := range slot(255) {
		if w.matrixAt(s, 0) != nil || w.vectorAt(s, 0) != nil {
			last = s
		}
	}
	seen := map[any]slot{}
	for s := slot(0); s <= last; s++ {
		var field any
		if s.isMatrix() {
			field = w.matrixAt(s, 0)
			assert.Nil(t, w.vectorAt(s, 0), "slot %d holds a matrix", s)
		} else {
			field = w.vectorAt(s, 0)
			assert.Nil(t, w.matrixAt(s, 0), "slot %d holds a vector", s)
		}
		require.NotNil(t, field, "slot %d", s)
		other, named := seen[field]
		assert.False(t, named, "slot %d names slot %d's field", s, other)
		seen[field] = s
		assert.True(t, used[s], "slot %d is in no table", s)
	}
}
