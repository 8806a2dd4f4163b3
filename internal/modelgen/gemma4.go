package modelgen

import (
	"fmt"
	"slices"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Gemma 4 (text) files, as llama.cpp's converter (convert_hf_to_gguf.py's
// Gemma4Model, a Gemma3Model) writes them: gemma3's keys (Family's
// SlidingWindow and FinalSoftCap; key_length and value_length the full
// layers' head width, Shape.HeadDim) with the list of sliding layers
// (attention.sliding_window_pattern, booleans), the sliding layers' head
// width (key_length_swa, value_length_swa) and rotation
// (rope.dimension_count_swa, rope.freq_base_swa), rope.dimension_count,
// attention.shared_kv_layers, embedding_length_per_layer_input, and
// head_count_kv and feed_forward_length as arrays where the layers
// differ. Its tensors are gemma3's without anything added to the norm
// weights (drawn around 1), plus rope_freqs.weight (the full layers'
// partial rotation: 1 for each pair that turns, 1e30 for the others), the
// per-layer embeddings (per_layer_token_embd, per_layer_model_proj,
// per_layer_proj_norm; blk.N.inp_gate, proj, post_norm) and
// blk.N.layer_output_scale; a layer that shares an earlier layer's cache
// has no attn_k, attn_v or attn_k_norm. A mixture of experts
// (Gemma-4-26B-A4B: Spec.MoE) adds expert_count, expert_used_count and
// expert_feed_forward_length, and to each layer with experts, after its
// dense feed-forward (which stays), the router ffn_gate_inp (F32) and its
// input scale ffn_gate_inp.scale (router.scale), the norms pre_ffw_norm_2,
// post_ffw_norm_1 and post_ffw_norm_2, the experts' gate and up stacked
// in one tensor (ffn_gate_up_exps: each expert's gate rows, then its up
// rows, as the converter maps experts.gate_up_proj), ffn_down_exps and
// its scale per expert (ffn_down_exps.scale: router.per_expert_scale).

// Gemma4 is what a gemma4 file says beyond gemma3's keys; its zero value
// is a model whose layers all slide but the last of every
// gemma4Period, as wide as Shape says, with nothing shared and no
// per-layer embeddings.
type Gemma4 struct {
	// Sliding lists which layers slide (Layers values); nil: all but the
	// last of every gemma4Period.
	Sliding []bool `json:"sliding,omitempty"`
	// SlidingHeadDim is the sliding layers' head width; 0: the full
	// layers' (Shape.HeadSize).
	SlidingHeadDim int `json:"sliding_head_dim,omitempty"`
	// FullKVHeads is the full layers' key/value heads; 0: KVHeads.
	FullKVHeads int `json:"full_kv_heads,omitempty"`
	// SharedKVLayers is how many last layers share earlier layers'
	// caches, and their feed-forward is twice as wide with DoubleWide
	// (Gemma-4-E2B's use_double_wide_mlp).
	SharedKVLayers int  `json:"shared_kv_layers,omitempty"`
	DoubleWide     bool `json:"double_wide,omitempty"`
	// PerLayerDim is embedding_length_per_layer_input: 0 writes no
	// per-layer embeddings.
	PerLayerDim int `json:"per_layer_dim,omitempty"`
	// RotaryFraction is the fraction of a full layer's head that rotates
	// (partial_rotary_factor: Gemma 4's 0.25 when 0).
	RotaryFraction float64 `json:"rotary_fraction,omitempty"`
	// SlidingRopeTheta is rope.freq_base_swa, written when not 0.
	SlidingRopeTheta float32 `json:"sliding_rope_theta,omitempty"`
	// FullKeysAsValues leaves out the full layers' attn_v (their values
	// are their keys: the larger Gemma 4 models' attention_k_eq_v).
	FullKeysAsValues bool `json:"full_keys_as_values,omitempty"`
	// OutputScale writes each layer's layer_output_scale.
	OutputScale bool `json:"output_scale,omitempty"`
	// DenseLayers, in a model with experts (Spec.MoE), are the layers
	// written without them (llama.cpp gives experts to the layers with a
	// router).
	DenseLayers []int `json:"dense_layers,omitempty"`
	// SeparateGateUp writes the experts' gate and up as two stacks
	// (ffn_gate_exps, ffn_up_exps), which llama.cpp also reads, rather
	// than the converter's one.
	SeparateGateUp bool `json:"separate_gate_up,omitempty"`
}

// g4 is the spec's Gemma4, its zero value when nil.
func (s Spec) g4() Gemma4 {
	if s.Gemma4 != nil {
		return *s.Gemma4
	}
	return Gemma4{}
}

// gemma4Period is the pattern of the sliding layers of a Gemma4 whose
// Sliding is nil: of every 5 layers, the last attends to every position
// (Gemma-4-E2B's).
const gemma4Period = 5

// sliding reports whether layer l slides.
func (s Spec) sliding(l int) bool {
	if s.g4().Sliding != nil {
		return s.g4().Sliding[l]
	}
	return l%gemma4Period < gemma4Period-1
}

// gemma4Head is layer l's head width.
func (s Spec) gemma4Head(l int) int {
	if s.sliding(l) && s.g4().SlidingHeadDim > 0 {
		return s.g4().SlidingHeadDim
	}
	return s.HeadSize()
}

// gemma4KVHeads is layer l's key/value heads.
func (s Spec) gemma4KVHeads(l int) int {
	if !s.sliding(l) && s.g4().FullKVHeads > 0 {
		return s.g4().FullKVHeads
	}
	return s.KVHeads
}

// firstShared is the first layer that shares an earlier layer's cache.
func (s Spec) firstShared() int { return s.Layers - s.g4().SharedKVLayers }

// gemma4Hidden is layer l's feed-forward width.
func (s Spec) gemma4Hidden(l int) int {
	if s.g4().DoubleWide && l >= s.firstShared() {
		return 2 * s.HiddenDim
	}
	return s.HiddenDim
}

// validateGemma4 checks the Gemma4 fields.
func (s Spec) validateGemma4() error {
	g := s.g4()
	if s.Arch != "gemma4" {
		if s.Gemma4 != nil {
			return fmt.Errorf("%w: Gemma4 is gemma4's", ErrSpec)
		}
		return nil
	}
	first := s.firstShared()
	switch {
	case g.Sliding != nil && len(g.Sliding) != s.Layers:
		return fmt.Errorf("%w: Sliding lists %d layers of %d", ErrSpec, len(g.Sliding), s.Layers)
	case g.SlidingHeadDim < 0 || g.SlidingHeadDim%2 != 0 || g.FullKVHeads < 0 || (g.FullKVHeads > 0 && s.Heads%g.FullKVHeads != 0):
		return fmt.Errorf("%w: SlidingHeadDim %d (even) or FullKVHeads %d (dividing Heads %d)", ErrSpec, g.SlidingHeadDim, g.FullKVHeads, s.Heads)
	case g.PerLayerDim < 0 || g.RotaryFraction < 0 || g.RotaryFraction > 1:
		return fmt.Errorf("%w: PerLayerDim %d, RotaryFraction %v (0..1)", ErrSpec, g.PerLayerDim, g.RotaryFraction)
	case g.SharedKVLayers < 0 || first < 2:
		return fmt.Errorf("%w: %d shared layers of %d leave fewer than 2 with caches of their own", ErrSpec, g.SharedKVLayers, s.Layers)
	case (g.DenseLayers != nil || g.SeparateGateUp) && !s.hasExperts():
		return fmt.Errorf("%w: DenseLayers and SeparateGateUp are a mixture of experts' (MoE)", ErrSpec)
	case slices.ContainsFunc(g.DenseLayers, func(l int) bool { return l < 0 || l >= s.Layers }):
		return fmt.Errorf("%w: DenseLayers %v of %d layers", ErrSpec, g.DenseLayers, s.Layers)
	case g.SharedKVLayers > 0 && (s.sliding(first-1) || !s.sliding(first-2)):
		// llama.cpp's sliding layers read layer first-2's cache, its full ones first-1's.
		return fmt.Errorf("%w: the shared layers read layers %d (full) and %d (sliding), which are not", ErrSpec, first-1, first-2)
	}
	for _, cols := range []int{s.Dim, g.PerLayerDim * s.Layers, g.PerLayerDim, s.Heads * s.gemma4Head(0), 2 * s.HiddenDim} {
		if cols == 0 {
			continue
		}
		if _, err := s.MatrixType(cols); err != nil {
			return err
		}
	}
	return nil
}

// gemma4Metadata writes gemma4's keys beyond gemma3's.
func (g *generator) gemma4Metadata() {
	sp, b := g.sp, g.b
	if sp.Arch != "gemma4" {
		return
	}
	key := func(k string) string { return "gemma4." + k }
	sliding := make([]bool, sp.Layers)
	kvHeads, hidden := make([]uint32, sp.Layers), make([]uint32, sp.Layers)
	for l := range sliding {
		sliding[l], kvHeads[l], hidden[l] = sp.sliding(l), uint32(sp.gemma4KVHeads(l)), uint32(sp.gemma4Hidden(l))
	}
	b.Set(key("attention.sliding_window_pattern"), gguf.ArrayOf(sliding))
	if sp.g4().FullKVHeads > 0 {
		b.Set(key("attention.head_count_kv"), gguf.ArrayOf(kvHeads))
	}
	if sp.g4().DoubleWide {
		b.Set(key("feed_forward_length"), gguf.ArrayOf(hidden))
	}
	swa := sp.HeadSize()
	if sp.g4().SlidingHeadDim > 0 {
		swa = sp.g4().SlidingHeadDim
	}
	b.Set(key("attention.shared_kv_layers"), gguf.ValueOf(uint32(sp.g4().SharedKVLayers)))
	b.Set(key("embedding_length_per_layer_input"), gguf.ValueOf(uint32(sp.g4().PerLayerDim)))
	b.Set(key("attention.key_length_swa"), gguf.ValueOf(uint32(swa)))
	b.Set(key("attention.value_length_swa"), gguf.ValueOf(uint32(swa)))
	b.Set(key("rope.dimension_count"), gguf.ValueOf(uint32(sp.HeadSize())))
	b.Set(key("rope.dimension_count_swa"), gguf.ValueOf(uint32(swa)))
	if sp.g4().SlidingRopeTheta != 0 {
		b.Set(key("rope.freq_base_swa"), gguf.ValueOf(sp.g4().SlidingRopeTheta))
	}
}

// gemma4Tensors draws and adds gemma4's tensors.
func (g *generator) gemma4Tensors() {
	sp := g.sp
	pl := sp.g4().PerLayerDim
	layer := func(i int, name string) string { return fmt.Sprintf("blk.%d.%s", i, name) }
	g.matrix("token_embd.weight", sp.VocabSize, sp.Dim, !sp.SeparateOutput)
	if pl > 0 {
		g.matrix("per_layer_token_embd.weight", sp.VocabSize, pl*sp.Layers, false)
		g.matrix("per_layer_model_proj.weight", pl*sp.Layers, sp.Dim, false)
		g.vector("per_layer_proj_norm.weight", pl, 1)
	}
	g.vector("output_norm.weight", sp.Dim, 1)
	if sp.SeparateOutput {
		g.matrix("output.weight", sp.VocabSize, sp.Dim, true)
	}
	fraction := sp.g4().RotaryFraction
	if fraction == 0 {
		fraction = 0.25
	}
	factors := make([]float32, sp.HeadSize()/2)
	for i := range factors {
		factors[i] = 1
		if i >= int(float64(sp.HeadSize())*fraction/2) {
			factors[i] = 1e30
		}
	}
	g.emit("rope_freqs.weight", tensor.F32, []uint64{uint64(len(factors))}, f32Bytes(factors))
	for i := range sp.Layers {
		head := sp.gemma4Head(i)
		q, kv, own := sp.Heads*head, sp.gemma4KVHeads(i)*head, i < sp.firstShared()
		g.vector(layer(i, "attn_norm.weight"), sp.Dim, 1)
		g.matrix(layer(i, "attn_q.weight"), q, sp.Dim, false)
		if own {
			g.matrix(layer(i, "attn_k.weight"), kv, sp.Dim, false)
			if sp.sliding(i) || !sp.g4().FullKeysAsValues {
				g.matrix(layer(i, "attn_v.weight"), kv, sp.Dim, false)
			}
		}
		g.matrix(layer(i, "attn_output.weight"), sp.Dim, q, false)
		g.vector(layer(i, "attn_q_norm.weight"), head, 1)
		if own {
			g.vector(layer(i, "attn_k_norm.weight"), head, 1)
		}
		g.vector(layer(i, "post_attention_norm.weight"), sp.Dim, 1)
		if sp.g4().OutputScale {
			g.vector(layer(i, "layer_output_scale.weight"), 1, 1)
		}
		hidden := sp.gemma4Hidden(i)
		g.vector(layer(i, "ffn_norm.weight"), sp.Dim, 1)
		g.matrix(layer(i, "ffn_gate.weight"), hidden, sp.Dim, false)
		g.matrix(layer(i, "ffn_up.weight"), hidden, sp.Dim, false)
		g.matrix(layer(i, "ffn_down.weight"), sp.Dim, hidden, false)
		g.vector(layer(i, "post_ffw_norm.weight"), sp.Dim, 1)
		if sp.hasExperts() && !slices.Contains(sp.g4().DenseLayers, i) {
			g.gemma4Experts(i)
		}
		if pl > 0 {
			g.matrix(layer(i, "inp_gate.weight"), pl, sp.Dim, false)
			g.matrix(layer(i, "proj.weight"), sp.Dim, pl, false)
			g.vector(layer(i, "post_norm.weight"), sp.Dim, 1)
		}
	}
}

// gemma4Experts draws and adds layer i's mixture of experts, in
// llama.cpp's order.
func (g *generator) gemma4Experts(i int) {
	sp := g.sp
	name := func(n string) string { return fmt.Sprintf("blk.%d.%s", i, n) }
	g.storedMatrix(name("ffn_gate_inp.weight"), sp.Experts, sp.Dim, tensor.F32, sp.Std) // llama-quantize leaves routers F32
	g.vector(name("ffn_gate_inp.scale"), sp.Dim, 1)
	g.vector(name("pre_ffw_norm_2.weight"), sp.Dim, 1)
	g.vector(name("post_ffw_norm_1.weight"), sp.Dim, 1)
	g.vector(name("post_ffw_norm_2.weight"), sp.Dim, 1)
	if sp.g4().SeparateGateUp {
		g.experts(name("ffn_gate_exps.weight"), sp.ExpertHiddenDim, sp.Dim)
		g.experts(name("ffn_up_exps.weight"), sp.ExpertHiddenDim, sp.Dim)
	} else {
		g.experts(name("ffn_gate_up_exps.weight"), 2*sp.ExpertHiddenDim, sp.Dim)
	}
	g.experts(name("ffn_down_exps.weight"), sp.Dim, sp.ExpertHiddenDim)
	g.vector(name("ffn_down_exps.scale"), sp.Experts, 1)
}
