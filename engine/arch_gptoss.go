package engine

import (
	"slices"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// OpenAI's gpt-oss (gpt-oss-20b, gpt-oss-120b), as llama.cpp's converter
// (conversion/gpt_oss.py) writes it and llama.cpp runs it
// (LLM_ARCH_OPENAI_MOE, "gpt-oss"). Its layers are pre-norm layers (the
// feed-forward's norm is the file's post_attention_norm) with:
//
//   - q, k and v biases (optional, all or none, as llama's) and a bias of
//     the attention's output (attn_output.bias), NeoX rotations, the
//     scores scaled by 1/√headDim (its heads, key_length, are wider than
//     dim/heads: 64 heads of 64 over gpt-oss-20b's 2880);
//   - an attention sink per head (blk.N.attn_sinks: AttentionSpec.Sinks,
//     sinks.go);
//   - alternating sliding-window and full layers: of every
//     attention.sliding_window_pattern layers (2 when absent, as in the
//     real models) all but the last attend to the latest
//     attention.sliding_window positions (128), which llama.cpp requires
//     the file to say; the layers keep a ring of their window
//     (kv_window.go). The sliding layers rotate with rope.freq_base_swa
//     (the model's base when absent) and the model's scaling;
//   - YaRN rope scaling (the real models: factor 32 over an original
//     context of 4096; yarn.go);
//   - a mixture of experts (moe.go) in place of the dense feed-forward:
//     the router's logits plus its bias (ffn_gate_inp.bias), the
//     expert_used_count largest chosen and their weights a softmax over
//     the chosen logits only (GatingSoftmaxTopK); each expert's gate, up
//     and down products with biases of their own (ffn_*_exps.bias) and
//     gpt-oss's clamped SwiGLU between (swiglu_oai.go).
//
// The output matrix is always the file's own (output.weight). A file
// with a fused q/k/v, which llama.cpp would compute with, is refused.
var gptOSS = &architecture{
	name: "gpt-oss", ropeStyle: RopeHalves,
	keys:    slices.Concat(llamaKeys, moeKeys, gptOSSKeys),
	tensors: gptOSSTensors(),
	layer: LayerSpec{Attention: AttentionSpec{Sinks: true}, FFN: FFNMoE,
		MoE: MoESpec{Gating: GatingSoftmaxTopK, Activation: FFNSwiGLUOAI}},
	configure: func(_ *gguf.File, p *hyperParams) error {
		p.layers.windowScale = p.RopeScale // llama.cpp: rope_freq_scale_train_swa = rope_freq_scale_train
		return nil
	},
	unsupported: []string{"blk.%d.attn_qkv.weight"},
	noSplit:     noSplitExperts,
}

// gptOSSKeys are gpt-oss's keys beyond the llama family's and a mixture
// of experts': its sliding window (required, as llama.cpp reads it), the
// pattern of sliding and full layers (2 when absent) and the sliding
// layers' rope base (the model's when absent).
var gptOSSKeys = []configKey{
	{key: "attention.sliding_window", int: func(p *hyperParams) *int { return &p.layers.window }},
	{key: "attention.sliding_window_pattern", int: func(p *hyperParams) *int { return &p.layers.windowPeriod },
		defaultInt: func(Config) int { return 2 }},
	{key: "rope.freq_base_swa", float: func(p *hyperParams) *float32 { return &p.layers.windowTheta },
		defaultFloat: func(c Config) float32 { return c.RopeTheta }},
}

// gptOSSTensors is gpt-oss's tensor table (llama.cpp's
// llama_model_openai_moe::load_arch_tensors).
func gptOSSTensors() []tensorSpec {
	t := []tensorSpec{
		{name: "token_embd.weight", rows: dimVocab, cols: dimModel, at: slotTokenEmbedding},
		{name: "output_norm.weight", rows: dimModel, at: slotOutputNorm},
		{name: nameOutput, rows: dimVocab, cols: dimModel, at: slotOutput},

		{name: "blk.%d.attn_norm.weight", rows: dimModel, at: slotAttnNorm},
		{name: "blk.%d.post_attention_norm.weight", rows: dimModel, at: slotFFNNorm}, // the feed-forward's pre-norm
		{name: "blk.%d.attn_q.weight", rows: dimQ, cols: dimModel, at: slotWq},
		{name: "blk.%d.attn_k.weight", rows: dimKV, cols: dimModel, at: slotWk},
		{name: "blk.%d.attn_v.weight", rows: dimKV, cols: dimModel, at: slotWv},
		{name: "blk.%d.attn_q.bias", rows: dimQ, optional: true, together: "qkv bias", at: slotBq},
		{name: "blk.%d.attn_k.bias", rows: dimKV, optional: true, together: "qkv bias", at: slotBk},
		{name: "blk.%d.attn_v.bias", rows: dimKV, optional: true, together: "qkv bias", at: slotBv},
		{name: "blk.%d.attn_output.weight", rows: dimModel, cols: dimQ, at: slotWo},
		{name: "blk.%d.attn_output.bias", rows: dimModel, at: slotBo},
		{name: "blk.%d.attn_sinks.weight", rows: dimHeads, at: slotAttnSinks},
	}
	t = append(t, moeTensors(false)...)
	return append(t, moeBiasTensors()...)
}
