package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// olmo2 is Ai2's OLMo 2 (llama.cpp's LLM_ARCH_OLMO2): a llama block
// without pre-norms, whose sub-layers read the residual stream as it is
// and normalise their outputs instead (blk.N.post_attention_norm,
// blk.N.post_ffw_norm) before adding them to it; an RMSNorm of all the
// queries at once and of the whole key (attn_q_norm over heads·headDim
// values, attn_k_norm over kvDim: not per head, as qwen3's), before NeoX
// rope; and an output matrix of its own (never tied).
//
// A file that says attention.sliding_window (OLMo 3, which llama.cpp runs
// as olmo2 with sliding-window layers) is refused.
var olmo2 = &architecture{
	name: "olmo2", ropeStyle: RopeHalves, keys: llamaKeys, tensors: olmo2Tensors(),
	configure:   configureOLMo2,
	unsupported: []string{"blk.%d.attn_qkv.weight"},
	noSplit: "olmo2 normalises all the queries and the whole key of a position at once (attn_q_norm, attn_k_norm), " +
		"so a part holding some heads cannot normalise its own",
}

// olmo2Tensors is olmo2's tensor table (llama.cpp's).
func olmo2Tensors() []tensorSpec {
	return []tensorSpec{
		{name: "token_embd.weight", rows: dimVocab, cols: dimModel, split: true,
			matrix: func(w *modelWeights, _ int) **tensor.Matrix { return &w.TokenEmbedding }},
		{name: "output_norm.weight", rows: dimModel,
			vector: func(w *modelWeights, _ int) *[]float32 { return &w.OutputNorm }},
		{name: nameOutput, rows: dimVocab, cols: dimModel, split: true,
			matrix: func(w *modelWeights, _ int) **tensor.Matrix { return &w.Output }},

		{name: "blk.%d.attn_q.weight", rows: dimQ, cols: dimModel, split: true,
			matrix: func(w *modelWeights, l int) **tensor.Matrix { return &w.Layers[l].Wq }},
		{name: "blk.%d.attn_k.weight", rows: dimKV, cols: dimModel, split: true,
			matrix: func(w *modelWeights, l int) **tensor.Matrix { return &w.Layers[l].Wk }},
		{name: "blk.%d.attn_v.weight", rows: dimKV, cols: dimModel, split: true,
			matrix: func(w *modelWeights, l int) **tensor.Matrix { return &w.Layers[l].Wv }},
		{name: "blk.%d.attn_output.weight", rows: dimModel, cols: dimQ,
			matrix: func(w *modelWeights, l int) **tensor.Matrix { return &w.Layers[l].Wo }},
		{name: "blk.%d.attn_q_norm.weight", rows: dimQ,
			vector: func(w *modelWeights, l int) *[]float32 { return &w.Layers[l].QNorm }},
		{name: "blk.%d.attn_k_norm.weight", rows: dimKV,
			vector: func(w *modelWeights, l int) *[]float32 { return &w.Layers[l].KNorm }},
		{name: "blk.%d.post_attention_norm.weight", rows: dimModel,
			vector: func(w *modelWeights, l int) *[]float32 { return &w.Layers[l].AttnPostNorm }},
		{name: "blk.%d.ffn_gate.weight", rows: dimHidden, cols: dimModel, split: true,
			matrix: func(w *modelWeights, l int) **tensor.Matrix { return &w.Layers[l].WGate }},
		{name: "blk.%d.ffn_down.weight", rows: dimModel, cols: dimHidden, split: true,
			matrix: func(w *modelWeights, l int) **tensor.Matrix { return &w.Layers[l].WDown }},
		{name: "blk.%d.ffn_up.weight", rows: dimHidden, cols: dimModel, split: true,
			matrix: func(w *modelWeights, l int) **tensor.Matrix { return &w.Layers[l].WUp }},
		{name: "blk.%d.post_ffw_norm.weight", rows: dimModel,
			vector: func(w *modelWeights, l int) *[]float32 { return &w.Layers[l].FFNPostNorm }},
	}
}

// configureOLMo2 refuses OLMo 3's sliding-window layers.
func configureOLMo2(f *gguf.File, _ *Config) error {
	window, err := f.Uint32Or("olmo2.attention.sliding_window", 0)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if window > 0 {
		return fmt.Errorf("%w: olmo2.attention.sliding_window = %d: sliding-window attention layers (OLMo 3)", ErrUnsupported, window)
	}
	return nil
}
