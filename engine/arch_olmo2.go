package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/gguf"
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
	layer:       LayerSpec{Norms: NormsPost, QKNorm: QKNormAll},
	configure:   configureOLMo2,
	unsupported: []string{"blk.%d.attn_qkv.weight"},
	noSplit: "olmo2 normalises all the queries and the whole key of a position at once (attn_q_norm, attn_k_norm), " +
		"so a part holding some heads cannot normalise its own",
}

// olmo2Tensors is olmo2's tensor table (llama.cpp's): the llama family's
// without pre-norms or rope frequency factors, its output never tied,
// with whole-vector q/k norms and the post-norms.
func olmo2Tensors() []tensorSpec {
	var t []tensorSpec
	for _, s := range llamaTensors(biasNone, false) {
		switch s.name {
		case "rope_freqs.weight", "blk.%d.attn_norm.weight", "blk.%d.ffn_norm.weight":
			continue
		case nameOutput:
			s.optional = false
		}
		t = append(t, s)
	}
	return append(append(t,
		tensorSpec{name: "blk.%d.attn_q_norm.weight", rows: dimQ, at: slotQNorm},
		tensorSpec{name: "blk.%d.attn_k_norm.weight", rows: dimKV, at: slotKNorm}),
		postNormTensors()...)
}

// configureOLMo2 refuses OLMo 3's sliding-window layers.
func configureOLMo2(f *gguf.File, _ *hyperParams) error {
	window, err := f.Uint32Or("olmo2.attention.sliding_window", 0)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if window > 0 {
		return fmt.Errorf("%w: olmo2.attention.sliding_window = %d: sliding-window attention layers (OLMo 3)", ErrUnsupported, window)
	}
	return nil
}
