package engine

import "slices"

// qwen3moe is Qwen3's mixture of experts (llama.cpp's LLM_ARCH_QWEN3MOE;
// Qwen3-30B-A3B, Qwen3-235B-A22B): qwen3's attention (no biases, an
// RMSNorm of each query and key head before the NeoX rotation, heads as
// wide as attention.key_length says), then in every layer a mixture of
// experts (moe.go) in place of the dense feed-forward: a softmax over
// the router's expert_count logits, the expert_used_count most probable
// experts, their weights renormalised to sum 1 (the model's
// norm_topk_prob, which llama.cpp always applies to qwen3moe), each a
// SwiGLU feed-forward of expert_feed_forward_length units; no shared
// expert. A file with a fused q/k/v, q/k/v biases or per-expert weight
// scales, which llama.cpp would compute with, is refused.
var qwen3moe = &architecture{
	name: "qwen3moe", ropeStyle: RopeHalves, keys: slices.Concat(llamaKeys, moeKeys),
	tensors: moeLayerTensors(llamaTensors(biasNone, true), false),
	layer:   LayerSpec{QKNorm: QKNormHeads, FFN: FFNMoE, MoE: MoESpec{Gating: GatingSoftmax, NormTopK: true}},
	unsupported: []string{"blk.%d.attn_qkv.weight", "blk.%d.attn_q.bias", "blk.%d.attn_k.bias", "blk.%d.attn_v.bias",
		"blk.%d.ffn_gate_up_exps.weight", "blk.%d.ffn_gate_exps.scale", "blk.%d.ffn_up_exps.scale", "blk.%d.ffn_down_exps.scale"},
	noSplit: noSplitExperts,
}

// moeLayerTensors is a dense family's tensor table with its feed-forward
// (ffn_gate, ffn_up, ffn_down) replaced by a mixture of experts' tensors
// (moeTensors), after the feed-forward's norm.
func moeLayerTensors(dense []tensorSpec, shared bool) []tensorSpec {
	var t []tensorSpec
	for _, s := range dense {
		switch s.at {
		case slotWGate, slotWUp, slotWDown:
			continue
		}
		t = append(t, s)
		if s.at == slotFFNNorm {
			t = append(t, moeTensors(shared)...)
		}
	}
	return t
}
