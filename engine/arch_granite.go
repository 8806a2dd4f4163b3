package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// granite is IBM's Granite 3.x (llama.cpp's LLM_ARCH_GRANITE): the llama
// block (llama's rope, adjacent pairs) with four multipliers from the
// Hugging Face config, which the converter writes as
//
//   - granite.embedding_scale: the token embedding is multiplied by it;
//   - granite.attention.scale: the attention scores q·k are multiplied by it
//     instead of 1/√headDim;
//   - granite.residual_scale: the attention's and the feed-forward's
//     outputs are multiplied by it before they are added to the residual
//     stream;
//   - granite.logit_scale (required, as llama.cpp requires it): the logits
//     are divided by it.
//
// The others are optional (absent: none), as in llama.cpp. A file whose
// rope.scaling.finetuned is false (Granite's switch for no rotary
// embeddings at all) rotates no layer, as llama.cpp.
var granite = &architecture{
	name: "granite", ropeStyle: RopeInterleaved, keys: graniteKeys, tensors: llamaTensors(biasOptional, false),
	configure: configureGranite,
	// Biases llama.cpp adds where a file has them (Granite 3.x files have
	// none), and a fused q/k/v.
	unsupported: []string{"blk.%d.attn_qkv.weight", "blk.%d.attn_output.bias",
		"blk.%d.ffn_gate.bias", "blk.%d.ffn_up.bias", "blk.%d.ffn_down.bias"},
}

// graniteKeys are llama's and Granite's multipliers.
var graniteKeys = append(append([]configKey(nil), llamaKeys...),
	configKey{key: "logit_scale", float: func(p *hyperParams) *float32 { return &p.LogitScale }},
	configKey{key: "embedding_scale", float: func(p *hyperParams) *float32 { return &p.EmbeddingScale }, defaultFloat: noScale},
	configKey{key: "attention.scale", float: func(p *hyperParams) *float32 { return &p.layers.attnScale }, defaultFloat: noScale},
	configKey{key: "residual_scale", float: func(p *hyperParams) *float32 { return &p.layers.residualScale }, defaultFloat: noScale},
)

// noScale is an absent multiplier's value: none.
func noScale(Config) float32 { return 0 }

// configureGranite reads rope.scaling.finetuned, and refuses the
// deepstack inputs of Granite Vision, whose embeddings of image features
// are added to chosen layers' inputs.
func configureGranite(f *gguf.File, p *hyperParams) error {
	rope, err := f.BoolOr("granite.rope.scaling.finetuned", true)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if !rope {
		p.layers.noRopeInterval = 1
	}
	if _, ok := f.Lookup("granite.deepstack_mapping"); ok {
		return fmt.Errorf("%w: granite.deepstack_mapping: Granite Vision's deepstack inputs (a vision model)", ErrUnsupported)
	}
	return nil
}
