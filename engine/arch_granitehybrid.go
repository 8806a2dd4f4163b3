package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// granitehybrid is IBM's Granite 4.0 hybrids (llama.cpp's
// LLM_ARCH_GRANITE_HYBRID: granite-4.0-h-micro, -h-1b, -h-350m, and with
// a mixture of experts for every feed-forward -h-tiny and -h-small):
// most layers are Mamba-2 (mamba2.go), some attention, each followed by a
// SwiGLU feed-forward, with Granite's multipliers (arch_granite.go; all
// optional here, as in llama.cpp). The file's attention.head_count_kv is
// an array, one per layer: 0 makes the layer Mamba-2. Granite 4's
// attention rotates nothing (rope.scaling.finetuned is false: "nope"),
// as the key says.
var granitehybrid = &architecture{
	name: "granitehybrid", ropeStyle: RopeInterleaved, keys: graniteHybridKeys, tensors: graniteHybridTensors(),
	configure: configureGraniteHybrid,
	noSplit:   "granitehybrid's Mamba-2 layers keep a recurrent state that a split model does not divide",
	// Biases llama.cpp adds where a file has them (Granite 4 files have
	// none).
	unsupported: []string{"blk.%d.attn_output.bias", "blk.%d.ffn_gate.bias", "blk.%d.ffn_up.bias", "blk.%d.ffn_down.bias"},
}

// graniteHybridKeys are granite's (but head_count_kv, an array here,
// which configureGraniteHybrid reads, and logit_scale optional, as every
// multiplier is here) and the Mamba-2 layers' shape (ssm.*).
var graniteHybridKeys = func() []configKey {
	var keys []configKey
	for _, k := range graniteKeys {
		switch k.key {
		case "attention.head_count_kv":
			continue
		case "logit_scale":
			k.defaultFloat = noScale
		}
		keys = append(keys, k)
	}
	keys = append(keys, ssmKeys...)
	// The MoE hybrids' experts (absent: a dense model); each expert is
	// feed_forward_length wide (configureGraniteHybrid), as llama.cpp
	// reads it, and the shared expert is optional.
	zero := func(Config) int { return 0 }
	return append(keys,
		configKey{key: keyExpertCount, int: func(p *hyperParams) *int { return &p.Experts }, defaultInt: zero},
		configKey{key: "expert_used_count", int: func(p *hyperParams) *int { return &p.ExpertsUsed }, defaultInt: zero},
		configKey{key: "expert_shared_feed_forward_length", int: func(p *hyperParams) *int { return &p.SharedHiddenDim }, defaultInt: zero},
	)
}()

// graniteHybridTensors are llama's tensors, the attention ones held by the
// attention layers only, and the Mamba-2 layers' (llama.cpp's names).
func graniteHybridTensors() []tensorSpec {
	attention := []LayerKind{LayerAttention}
	mamba := []LayerKind{LayerMamba2}
	var t []tensorSpec
	for _, s := range llamaTensors(biasOptional, false) {
		switch s.at {
		case slotWq, slotWk, slotWv, slotWo, slotBq, slotBk, slotBv:
			s.kinds = attention
		case slotWGate, slotWUp, slotWDown: // a dense model's (configureGraniteHybrid)
			s.optional, s.together = true, "dense feed-forward"
		}
		t = append(t, s)
	}
	for _, s := range moeTensors(true) { // a MoE model's, its shared expert's not gated
		switch s.at {
		case slotSharedGate:
			continue
		case slotWGateShared, slotWUpShared, slotWDownShared:
			s.optional, s.together = true, "shared expert"
		default:
			s.optional, s.together = true, "experts"
		}
		t = append(t, s)
	}
	return append(t,
		tensorSpec{name: "blk.%d.ssm_in.weight", rows: dimMamba2InProj, cols: dimModel, kinds: mamba, at: slotSSMIn},
		tensorSpec{name: "blk.%d.ssm_conv1d.weight", rows: dimMamba2Conv, cols: dimSSMKernel, kinds: mamba, at: slotSSMConv},
		tensorSpec{name: "blk.%d.ssm_conv1d.bias", rows: dimMamba2Conv, optional: true, kinds: mamba, at: slotSSMConvBias},
		tensorSpec{name: "blk.%d.ssm_dt.bias", rows: dimSSMHeads, kinds: mamba, at: slotSSMDtBias},
		tensorSpec{name: "blk.%d.ssm_a", rows: dimSSMHeads, cols: dimScalar, kinds: mamba, at: slotSSMA},
		tensorSpec{name: "blk.%d.ssm_d", rows: dimSSMHeads, cols: dimScalar, kinds: mamba, at: slotSSMD},
		tensorSpec{name: "blk.%d.ssm_norm.weight", rows: dimMamba2Groups, cols: dimMamba2GroupWidth, kinds: mamba, at: slotSSMNorm},
		tensorSpec{name: "blk.%d.ssm_out.weight", rows: dimModel, cols: dimSSMInner, kinds: mamba, at: slotSSMOut},
	)
}

// configureGraniteHybrid reads which layers are Mamba-2 (a layer whose
// attention.head_count_kv is 0; the others must agree on theirs, the
// model's KVHeads) and rope.scaling.finetuned as Granite does (false: no
// layer rotates). validateRecurrent checks the Mamba-2 shape.
func configureGraniteHybrid(f *gguf.File, p *hyperParams) error {
	rope, err := f.BoolOr("granitehybrid.rope.scaling.finetuned", true)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if !rope {
		p.layers.noRopeInterval = 1
	}
	if err := readLayerKinds(f, p, "granitehybrid.attention.head_count_kv", LayerMamba2); err != nil {
		return err
	}
	if p.KVHeads == 0 {
		return fmt.Errorf("%w: granitehybrid.attention.head_count_kv: no layer attends (every one is Mamba-2)", ErrUnsupported)
	}
	return graniteHybridFFN(f, p)
}

// graniteHybridFFN makes every layer's feed-forward a mixture of experts
// where the file says expert_count (granite-4.0-h-tiny, -h-small), as
// llama.cpp builds it: a softmax router, the chosen experts' weights
// renormalised, each expert feed_forward_length wide, and a shared expert
// beside them, not gated, where expert_shared_feed_forward_length says.
// Each layer must hold the tensors of its kind of feed-forward: the
// experts' (and the shared expert's where there is one), or the dense
// one's.
func graniteHybridFFN(f *gguf.File, p *hyperParams) error {
	moe := p.Experts > 0
	if moe {
		p.ExpertHiddenDim = p.HiddenDim
		shared := p.SharedHiddenDim > 0
		p.layers.each = func(_ int, s *LayerSpec) {
			s.FFN, s.MoE = FFNMoE, MoESpec{Gating: GatingSoftmax, NormTopK: true, Shared: shared}
		}
	}
	for l := range p.Layers {
		has := func(name string) bool { return hasTensor(f, fmt.Sprintf("blk.%d.%s", l, name)) }
		switch {
		case moe && has("ffn_up.weight"):
			return fmt.Errorf("%w: blk.%d.ffn_up.weight: a model of %d experts has no dense feed-forward", ErrFormat, l, p.Experts)
		case moe && !has("ffn_up_exps.weight"):
			return fmt.Errorf("%w: missing tensor blk.%d.ffn_up_exps.weight (expert_count %d)", ErrFormat, l, p.Experts)
		case moe && has("ffn_up_shexp.weight") != (p.SharedHiddenDim > 0):
			return fmt.Errorf("%w: blk.%d.ffn_up_shexp.weight present: %v, expert_shared_feed_forward_length %d", ErrFormat, l, has("ffn_up_shexp.weight"), p.SharedHiddenDim)
		case !moe && !has("ffn_up.weight"):
			return fmt.Errorf("%w: missing tensor blk.%d.ffn_up.weight", ErrFormat, l)
		case !moe && (has("ffn_up_exps.weight") || has("ffn_up_shexp.weight")):
			return fmt.Errorf("%w: blk.%d: experts' tensors in a model without expert_count", ErrFormat, l)
		}
	}
	return nil
}
