package engine

import (
	"fmt"
	"math"
	"slices"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// Google's Gemma 4 (text), as llama.cpp's converter writes it
// (convert_hf_to_gguf.py's Gemma4Model) and llama.cpp runs it
// (LLM_ARCH_GEMMA4, src/models/gemma4.cpp). Its layers are gemma3's —
// pre- and post-norms, GeGLU, an RMSNorm of each query and key head, NeoX
// rotations, the embeddings scaled by √dim, the output tied to them unless
// the file has output.weight — with:
//
//   - the queries and scores not scaled at all (llama.cpp's
//     f_attention_scale = 1), and each value head normalised (RMSNorm
//     without weights) before it is cached; a layer without attn_v uses
//     its keys, before their norm and rotation, as values;
//   - the norm weights used as the file has them (the converter adds
//     nothing to Gemma 4's);
//   - which layers slide listed layer by layer
//     (attention.sliding_window_pattern, an array of booleans), the
//     sliding layers with heads of their own width
//     (attention.key_length_swa; the full layers' is key_length, 512
//     against 256 in Gemma-4-E2B), their own rope base
//     (rope.freq_base_swa, 10000 when absent), unscaled, and without the
//     rope_freqs factors, which only the full layers rotate by (the
//     converter writes 1 for the pairs that turn and 1e30, which stops
//     them, for the others: Gemma 4's "proportional" partial rotation);
//   - key/value heads and feed-forward widths that may differ by layer
//     (attention.head_count_kv and feed_forward_length as arrays);
//   - the last attention.shared_kv_layers layers computing no keys or
//     values: each attends over the cache of the last earlier layer of
//     its kind (a sliding layer over layer first−2's, a full one over
//     first−1's, first being the first sharing layer, as llama.cpp's
//     cache reuses them), and keeps none of its own;
//   - per-layer embeddings (embedding_length_per_layer_input > 0:
//     per_layer.go), added after each layer's feed-forward, and a scale
//     of each layer's output (blk.N.layer_output_scale) where the file has one;
//   - the logits soft-capped at final_logit_softcapping, 30 when the file
//     does not say (llama.cpp's default: TestGemma4KeysAsLlamaCpp).
//
// A layer with a router (blk.N.ffn_gate_inp: Gemma-4-26B-A4B's every
// layer) is a mixture of expert_count experts (moe.go, moe_dense.go),
// expert_used_count of them chosen for each token by a softmax over the
// router's logits and weighted by their probabilities renormalised to
// sum 1, each a GeGLU of expert_feed_forward_length units; beside them
// the layer's dense GeGLU, each branch with norms of its own, the router
// reading the residual stream normalised and scaled (MoESpec.Dense and
// RouterNorm). A file may mix layers with and without experts, as
// llama.cpp decides by the router's presence.
var gemma4 = &architecture{
	name: "gemma4", ropeStyle: RopeHalves, tensors: gemma4Tensors(),
	layer: LayerSpec{Norms: NormsPreAndPost, QKNorm: QKNormHeads, FFN: FFNGeGLU, Attention: AttentionSpec{ValueNorm: true}},
	// feed_forward_length and head_count_kv may be arrays: configureGemma4 reads them.
	keys: append(slices.DeleteFunc(slices.Clone(llamaKeys), func(k configKey) bool {
		return k.key == "feed_forward_length" || k.key == "attention.head_count_kv"
	}), configKey{key: "final_logit_softcapping", float: func(p *hyperParams) *float32 { return &p.FinalSoftCap },
		defaultFloat: func(Config) float32 { return 30 }}, // llama.cpp's default, which gemma4 does not reset
		// The experts' (absent: a dense model).
		configKey{key: keyExpertCount, int: func(p *hyperParams) *int { return &p.Experts }, defaultInt: zeroInt},
		configKey{key: "expert_used_count", int: func(p *hyperParams) *int { return &p.ExpertsUsed }, defaultInt: zeroInt},
		configKey{key: "expert_feed_forward_length", int: func(p *hyperParams) *int { return &p.ExpertHiddenDim }, defaultInt: zeroInt}),
	configure: configureGemma4,
	// The per-tensor scales of NVFP4 and FP8 files, which llama.cpp
	// multiplies the products by, and the per-expert scales of separate
	// gate and up stacks (Gemma 4's converter folds its one per-expert
	// scale into ffn_down_exps.scale, which the engine computes with).
	unsupported: []string{"blk.%d.attn_q.scale", "blk.%d.attn_k.scale", "blk.%d.attn_v.scale", "blk.%d.attn_output.scale",
		"blk.%d.ffn_gate.scale", "blk.%d.ffn_up.scale", "blk.%d.ffn_down.scale", "blk.%d.ffn_gate_exps.scale", "blk.%d.ffn_up_exps.scale"},
	noSplit: "its layers differ in shape, its last layers attend over earlier layers' caches and every layer reads the per-layer embeddings whole, " +
		"while a split divides every layer's heads alike; and where it has experts (Gemma-4-26B-A4B), " + noSplitExperts,
}

// zeroInt is 0: the default of a key whose absence means none.
func zeroInt(Config) int { return 0 }

// gemma4Tensors is gemma4's tensor table (llama.cpp's llama_model_gemma4::load_arch_tensors).
func gemma4Tensors() []tensorSpec {
	ownKV := func(c Config, l int) bool { return !c.Layer(l).Attention.SharedKV }
	perLayer := func(c Config, _ int) bool { return c.PerLayerDim > 0 }
	moe := []FFN{FFNMoE}
	fullLayer := func(c Config, _ int) bool {
		for l := range c.Layers {
			if !c.Sliding(l) {
				return true
			}
		}
		return false
	}
	return []tensorSpec{
		{name: "token_embd.weight", rows: dimVocab, cols: dimModel, at: slotTokenEmbedding},
		{name: "per_layer_token_embd.weight", rows: dimVocab, cols: dimPerLayers, needed: perLayer, at: slotPerLayerTokenEmbedding},
		{name: "per_layer_model_proj.weight", rows: dimPerLayers, cols: dimModel, needed: perLayer, at: slotPerLayerModelProj},
		{name: "per_layer_proj_norm.weight", rows: dimPerLayer, needed: perLayer, at: slotPerLayerProjNorm},
		{name: "output_norm.weight", rows: dimModel, at: slotOutputNorm},
		{name: nameOutput, rows: dimVocab, cols: dimModel, optional: true, at: slotOutput},
		// The full layers' rotations (their head width's pairs); llama.cpp
		// requires it of a model with a full layer.
		{name: "rope_freqs.weight", rows: dimRopePairs, needed: fullLayer, at: slotRopeFreqFactors},

		{name: "blk.%d.attn_norm.weight", rows: dimModel, at: slotAttnNorm},
		{name: "blk.%d.attn_q.weight", rows: dimQ, cols: dimModel, at: slotWq},
		{name: "blk.%d.attn_k.weight", rows: dimKV, cols: dimModel, needed: ownKV, at: slotWk},
		{name: "blk.%d.attn_v.weight", rows: dimKV, cols: dimModel, optional: true, at: slotWv},
		{name: "blk.%d.attn_output.weight", rows: dimModel, cols: dimQ, at: slotWo},
		{name: "blk.%d.attn_q_norm.weight", rows: dimHead, at: slotQNorm},
		{name: "blk.%d.attn_k_norm.weight", rows: dimHead, needed: ownKV, at: slotKNorm},
		{name: "blk.%d.post_attention_norm.weight", rows: dimModel, at: slotAttnPostNorm},
		{name: "blk.%d.layer_output_scale.weight", rows: dimScalar, optional: true, at: slotOutScale},
		{name: "blk.%d.ffn_norm.weight", rows: dimModel, at: slotFFNNorm},
		{name: "blk.%d.ffn_gate.weight", rows: dimHidden, cols: dimModel, at: slotWGate},
		{name: "blk.%d.ffn_up.weight", rows: dimHidden, cols: dimModel, at: slotWUp},
		{name: "blk.%d.ffn_down.weight", rows: dimModel, cols: dimHidden, at: slotWDown},
		{name: "blk.%d.post_ffw_norm.weight", rows: dimModel, at: slotFFNPostNorm},
		// A layer with experts (moe_dense.go): the router and its input
		// scale, the experts' norms, their gate and up stacked in one
		// tensor (or two), their down and its scales.
		{name: "blk.%d.ffn_gate_inp.weight", rows: dimExperts, cols: dimModel, ffns: moe, at: slotRouter},
		{name: "blk.%d.ffn_gate_inp.scale", rows: dimModel, ffns: moe, at: slotRouterScale},
		{name: "blk.%d.pre_ffw_norm_2.weight", rows: dimModel, ffns: moe, at: slotFFNPreNorm2},
		{name: "blk.%d.post_ffw_norm_1.weight", rows: dimModel, ffns: moe, at: slotFFNPostNorm1},
		{name: "blk.%d.post_ffw_norm_2.weight", rows: dimModel, ffns: moe, at: slotFFNPostNorm2},
		{name: "blk.%d.ffn_gate_up_exps.weight", rows: dimExpertGateUp, cols: dimModel, experts: true, optional: true, ffns: moe, at: slotWGateUpExps},
		{name: "blk.%d.ffn_gate_exps.weight", rows: dimExpertFF, cols: dimModel, experts: true, optional: true, together: "experts' gate and up", ffns: moe, at: slotWGateExps},
		{name: "blk.%d.ffn_up_exps.weight", rows: dimExpertFF, cols: dimModel, experts: true, optional: true, together: "experts' gate and up", ffns: moe, at: slotWUpExps},
		{name: "blk.%d.ffn_down_exps.weight", rows: dimModel, cols: dimExpertFF, experts: true, ffns: moe, at: slotWDownExps},
		{name: "blk.%d.ffn_down_exps.scale", rows: dimExperts, optional: true, ffns: moe, at: slotDownExpsScale},
		{name: "blk.%d.inp_gate.weight", rows: dimPerLayer, cols: dimModel, needed: perLayer, at: slotPerLayerGate},
		{name: "blk.%d.proj.weight", rows: dimModel, cols: dimPerLayer, needed: perLayer, at: slotPerLayerProj},
		{name: "blk.%d.post_norm.weight", rows: dimModel, needed: perLayer, at: slotPerLayerPostNorm},
	}
}

// configureGemma4 reads what gemma4's keys say layer by layer, and the
// keys its table's scalars do not cover.
func configureGemma4(f *gguf.File, p *hyperParams) error {
	c := &p.Config
	if c.Layers <= 0 || c.Layers > maxDimension || c.Heads <= 0 {
		return nil // validate says what is wrong
	}
	key := func(k string) string { return "gemma4." + k }
	hidden, err := perLayerInts(f, key("feed_forward_length"), c.Layers, -1)
	if err != nil {
		return err
	}
	kvHeads, err := perLayerInts(f, key("attention.head_count_kv"), c.Layers, c.Heads)
	if err != nil {
		return err
	}
	sliding, err := perLayerInts(f, key("attention.sliding_window_pattern"), c.Layers, -1)
	if err != nil {
		return err
	}
	window, err := uint32Key(f, key("attention.sliding_window"), -1)
	if err != nil {
		return err
	}
	shared, err := uint32Key(f, key("attention.shared_kv_layers"), 0)
	if err != nil {
		return err
	}
	if c.PerLayerDim, err = uint32Key(f, key("embedding_length_per_layer_input"), -1); err != nil {
		return err
	}
	headFull := c.HeadDim()
	headSWA, err := uint32Key(f, key("attention.key_length_swa"), -1)
	if err != nil {
		return err
	}
	valueSWA, err := uint32Key(f, key("attention.value_length_swa"), -1)
	if err != nil {
		return err
	}
	rotFull, err := uint32Key(f, key("rope.dimension_count"), headFull)
	if err != nil {
		return err
	}
	rotSWA, err := uint32Key(f, key("rope.dimension_count_swa"), rotFull)
	if err != nil {
		return err
	}
	thetaSWA, err := f.Float32Or(key("rope.freq_base_swa"), 10000)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	firstShared := c.Layers - shared
	switch {
	case window < 0 || headSWA < 0 || valueSWA < 0 || c.PerLayerDim < 0 || hidden == nil || sliding == nil:
		return fmt.Errorf("%w: gemma4 needs attention.sliding_window, attention.sliding_window_pattern, attention.key_length_swa, "+
			"attention.value_length_swa, feed_forward_length and embedding_length_per_layer_input", ErrFormat)
	case valueSWA != headSWA:
		return fmt.Errorf("%w: the sliding layers' values of %d per head, keys of %d", ErrUnsupported, valueSWA, headSWA)
	case rotSWA != headSWA:
		return fmt.Errorf("%w: the sliding layers rotate %d of their heads' %d dimensions", ErrUnsupported, rotSWA, headSWA)
	case shared > c.Layers || firstShared < 2:
		// llama.cpp's cache asserts that two layers keep theirs.
		return fmt.Errorf("%w: %d of %d layers share the caches of earlier ones, leaving fewer than 2 with their own", ErrFormat, shared, c.Layers)
	case !validRope(thetaSWA):
		return fmt.Errorf("%w: the sliding layers' rope base %v must be positive and finite", ErrFormat, thetaSWA)
	case window == 0 && count(sliding) > 0:
		return fmt.Errorf("%w: sliding layers with a window of 0 positions", ErrFormat)
	}
	experts, err := gemma4Experts(f, c)
	if err != nil {
		return err
	}
	c.HiddenDim, c.KVHeads = hidden[0], kvHeads[0]
	c.EmbeddingScale = float32(math.Sqrt(float64(float32(c.Dim)))) // sqrtf(n_embd)
	p.layers.attnScale = 1
	perLayer := c.PerLayerDim > 0
	p.layers.each = func(l int, s *LayerSpec) {
		if sliding[l] != 0 {
			s.Attention.Window, s.Attention.NoRopeFactors = window, true
			if thetaSWA != c.RopeTheta {
				s.Attention.RopeTheta = thetaSWA
			}
			if c.RopeScale != 1 {
				s.Attention.RopeScale = 1
			}
			if headSWA != headFull {
				s.HeadDim = headSWA
			}
		}
		if kvHeads[l] != c.KVHeads {
			s.KVHeads = kvHeads[l]
		}
		if hidden[l] != c.HiddenDim {
			s.HiddenDim = hidden[l]
		}
		if l >= firstShared {
			s.Attention.SharedKV, s.Attention.KVLayer = true, firstShared-1
			if sliding[l] != 0 {
				s.Attention.KVLayer = firstShared - 2
			}
		}
		s.PerLayerInput = perLayer
		if experts[l] {
			s.FFN, s.MoE = FFNMoE, MoESpec{Gating: GatingSoftmax, NormTopK: true, Activation: FFNGeGLU, Dense: true, RouterNorm: true}
		}
	}
	return nil
}

// gemma4Experts reports which layers of c have experts: those with a
// router (blk.N.ffn_gate_inp), as llama.cpp decides, each with its
// experts' gate and up in one stack (ffn_gate_up_exps, as the converter
// writes them) or in two (ffn_gate_exps and ffn_up_exps), not both.
func gemma4Experts(f *gguf.File, c *Config) ([]bool, error) {
	experts := make([]bool, c.Layers)
	for l := range c.Layers {
		has := func(name string) bool { return hasTensor(f, fmt.Sprintf("blk.%d.%s", l, name)) }
		if experts[l] = has("ffn_gate_inp.weight"); !experts[l] {
			continue
		}
		fused, separate := has("ffn_gate_up_exps.weight"), has("ffn_gate_exps.weight") || has("ffn_up_exps.weight")
		switch {
		case c.Experts == 0:
			return nil, fmt.Errorf("%w: blk.%d.ffn_gate_inp.weight in a model without expert_count", ErrFormat, l)
		case fused && separate:
			return nil, fmt.Errorf("%w: blk.%d has its experts' gate and up both stacked together (ffn_gate_up_exps) and apart", ErrFormat, l)
		case !fused && !separate:
			return nil, fmt.Errorf("%w: missing tensor blk.%d.ffn_gate_up_exps.weight (or ffn_gate_exps and ffn_up_exps)", ErrFormat, l)
		}
	}
	return experts, nil
}

// count is how many of xs are not 0.
func count(xs []int) int {
	n := 0
	for _, x := range xs {
		if x != 0 {
			n++
		}
	}
	return n
}

// perLayerInts reads key, one unsigned integer (or boolean) for every
// layer or one for all of them, as llama.cpp's get_key_or_arr reads it:
// def for each when the key is absent, an error wrapping ErrFormat naming
// the key when it is required (def < 0) or not such a value.
func perLayerInts(f *gguf.File, key string, layers, def int) ([]int, error) {
	v, ok := f.Lookup(key)
	out := make([]int, layers)
	switch {
	case !ok && def < 0:
		return nil, nil
	case !ok:
		for i := range out {
			out[i] = def
		}
		return out, nil
	}
	if _, isArray := v.ElemType(); !isArray {
		x, ok := v.AsUint64()
		if b, isBool := v.AsBool(); isBool {
			x, ok = uint64(btoi(b)), true
		}
		if !ok || x > maxDimension {
			return nil, fmt.Errorf("%w: %s is %v, want an unsigned integer or one for each of %d layers", ErrFormat, key, v.Any(), layers)
		}
		for i := range out {
			out[i] = int(x)
		}
		return out, nil
	}
	if v.Len() != layers {
		return nil, fmt.Errorf("%w: %s has %d values for %d layers", ErrFormat, key, v.Len(), layers)
	}
	var err error
	each := func(i int, x int64) {
		if x < 0 || x > maxDimension {
			err = fmt.Errorf("%w: %s's value %d for layer %d is out of range (0..%d)", ErrFormat, key, x, i, maxDimension)
		}
		out[i] = int(x)
	}
	switch a := v.Any().(type) {
	case []bool:
		for i, x := range a {
			each(i, int64(btoi(x)))
		}
	case []uint8:
		ints(a, each)
	case []int8:
		ints(a, each)
	case []uint16:
		ints(a, each)
	case []int16:
		ints(a, each)
	case []uint32:
		ints(a, each)
	case []int32:
		ints(a, each)
	case []int64:
		ints(a, each)
	case []uint64:
		for i, x := range a {
			each(i, int64(min(x, maxDimension+1)))
		}
	default:
		return nil, fmt.Errorf("%w: %s is an array of %T, want integers", ErrFormat, key, a)
	}
	return out, err
}

// ints calls each with every value of a.
func ints[T int8 | uint8 | int16 | uint16 | int32 | uint32 | int64](a []T, each func(i int, x int64)) {
	for i, x := range a {
		each(i, int64(x))
	}
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// deviceRefusal is why a device does not compute layer l of c yet
// ("" when it does): gemma4's steps.
func (c Config) deviceRefusal(l int) string {
	s := c.Layer(l)
	switch {
	case s.AltUp || s.GateSparsity != 0:
		return "its residual stream is AltUp's streams, beside a LAuReL branch, with a sparse gate (gemma3n)"
	case s.HeadDim != 0 || s.KVHeads != 0 || s.HiddenDim != 0:
		return "its heads or feed-forward differ in width from the model's (gemma4's sliding layers)"
	case s.Attention.SharedKV:
		return "it attends over another layer's cache (gemma4's shared key/value layers)"
	case s.Attention.ValueNorm || s.Attention.NoRopeFactors:
		return "its values are normalised, or it rotates without the model's rope factors (gemma4)"
	case s.PerLayerInput || c.PerLayerDim > 0:
		return "it adds per-layer embeddings (gemma4)"
	}
	return ""
}
