package engine

import (
	"fmt"
	"slices"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// qwen35moe is Qwen3.5's mixtures of experts (llama.cpp's
// LLM_ARCH_QWEN35MOE; Qwen3.5-35B-A3B and larger): qwen35's layers (Gated
// DeltaNet layers and, every full_attention_interval-th, gated attention;
// arch_qwen35.go) with the dense feed-forward replaced in every layer by a
// mixture of experts (moe.go): a softmax over the router's expert_count
// logits, the expert_used_count most probable experts with their weights
// renormalised to sum 1 (llama.cpp's norm_w, always on for it), each a
// SwiGLU feed-forward of expert_feed_forward_length units, and beside
// them a shared expert every token takes (expert_shared_feed_forward_length
// units) gated by σ(x·ffn_gate_inp_shexp). llama.cpp reads no
// expert_weights_scale for it: the weights are not scaled.
// feed_forward_length, which llama.cpp reads but this family's layers do
// not use, may be absent: it is then the widest of the experts' and the
// shared expert's (the engine sizes its scratch by it).
var qwen35moe = &architecture{
	name: "qwen35moe", ropeStyle: RopeHalves, partialRope: true,
	keys:    slices.Concat(qwen35moeKeys(), ssmKeys, moeKeys, sharedExpertKeys),
	tensors: moeLayerTensors(qwen35Tensors(), true),
	layer: LayerSpec{QKNorm: QKNormHeads, Attention: AttentionSpec{Gated: true},
		FFN: FFNMoE, MoE: MoESpec{Gating: GatingSoftmax, NormTopK: true, Shared: true}},
	configure: configureQwen35MoE,
	// A fused gate and up of the experts, and the per-expert scales of
	// NVFP4 files, which llama.cpp would compute with.
	unsupported: []string{"blk.%d.ffn_gate_up_exps.weight", "blk.%d.ffn_gate_exps.scale", "blk.%d.ffn_up_exps.scale", "blk.%d.ffn_down_exps.scale",
		"blk.%d.ffn_gate_shexp.scale", "blk.%d.ffn_up_shexp.scale", "blk.%d.ffn_down_shexp.scale"},
	noSplit: "its Gated DeltaNet layers keep a recurrent state per head, which a part of a split model does not hold, and " + noSplitExperts,
}

// qwen35moeKeys are the llama family's keys with feed_forward_length
// optional (0 when absent: configureQwen35MoE derives it).
func qwen35moeKeys() []configKey {
	keys := slices.Clone(llamaKeys)
	for i, k := range keys {
		if k.key == "feed_forward_length" {
			keys[i].defaultInt = func(Config) int { return 0 }
		}
	}
	return keys
}

// configureQwen35MoE reads what qwen35's configure reads, and makes an
// absent feed_forward_length the widest feed-forward the layers have.
func configureQwen35MoE(f *gguf.File, p *hyperParams) error {
	if p.HiddenDim == 0 {
		if p.ExpertHiddenDim <= 0 || p.SharedHiddenDim <= 0 {
			return fmt.Errorf("%w: without feed_forward_length, expert_feed_forward_length and expert_shared_feed_forward_length are required", ErrFormat)
		}
		p.HiddenDim = max(p.ExpertHiddenDim, p.SharedHiddenDim)
	}
	return configureQwen35(f, p, "qwen35moe")
}
