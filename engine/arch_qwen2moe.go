package engine

import "slices"

// qwen2moe is Qwen1.5-MoE's and Qwen2-MoE's mixture of experts (llama.cpp's
// LLM_ARCH_QWEN2MOE; Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B): qwen2's attention
// (q/k/v biases where the file has them, NeoX rotations), then in every
// layer a mixture of experts (moe.go): a softmax over the router's
// expert_count logits, the expert_used_count most probable experts
// weighted by their probabilities as they are (not renormalised), each a
// SwiGLU feed-forward of expert_feed_forward_length units, and beside them
// a shared expert every token takes (expert_shared_feed_forward_length
// units), gated by sigmoid(x·ffn_gate_inp_shexp) (which llama.cpp
// computes as silu(g)/g: the same within a float32 rounding; qwen35moe's
// ggml_sigmoid is ours exactly). Its output is a matrix
// of its own, as llama.cpp requires.
var qwen2moe = &architecture{
	name: "qwen2moe", ropeStyle: RopeHalves, keys: slices.Concat(llamaKeys, moeKeys, sharedExpertKeys),
	tensors: requireOutput(moeLayerTensors(llamaTensors(biasOptional, false), true)),
	layer:   LayerSpec{FFN: FFNMoE, MoE: MoESpec{Gating: GatingSoftmax, Shared: true}},
	unsupported: []string{"blk.%d.attn_qkv.weight", "blk.%d.ffn_gate_up_exps.weight",
		"blk.%d.ffn_gate_exps.scale", "blk.%d.ffn_up_exps.scale", "blk.%d.ffn_down_exps.scale",
		"blk.%d.ffn_gate_shexp.scale", "blk.%d.ffn_up_shexp.scale", "blk.%d.ffn_down_shexp.scale"},
	noSplit: noSplitExperts,
}

// requireOutput is the table t with its output matrix required, for a
// family whose output llama.cpp never ties to the token embedding.
func requireOutput(t []tensorSpec) []tensorSpec {
	for i := range t {
		if t[i].name == nameOutput {
			t[i].optional = false
		}
	}
	return t
}
