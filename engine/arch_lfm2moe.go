package engine

import (
	"fmt"
	"slices"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// lfm2moe is LiquidAI's LFM2 mixture of experts (llama.cpp's
// LLM_ARCH_LFM2MOE, computed by its lfm2 graph; LFM2-8B-A1B): lfm2's
// layers, short convolutions beside attention, whose feed-forward is,
// after the first leading_dense_block_count layers (dense SwiGLU of
// feed_forward_length units), a mixture of experts (moe.go): each
// expert's sigmoid of the router's logit, the expert_used_count experts
// whose sigmoid plus the layer's selection bias (exp_probs_b) is largest,
// weighted by their sigmoids renormalised to sum 1 (llama.cpp always
// normalises lfm2moe's), each a SwiGLU of expert_feed_forward_length
// units; no shared expert. expert_gating_func must say sigmoid (2), as
// LFM2's converter writes it.
var lfm2moe = &architecture{
	name: "lfm2moe", ropeStyle: RopeHalves, keys: slices.Concat(lfm2Keys, moeKeys, lfm2moeKeys),
	tensors:   lfm2moeTensors(),
	layer:     LayerSpec{QKNorm: QKNormHeads, FFN: FFNMoE, MoE: MoESpec{Gating: GatingSigmoid, NormTopK: true}},
	configure: configureLFM2MoE,
	noSplit:   lfm2.noSplit,
	unsupported: slices.Concat(lfm2.unsupported, []string{"blk.%d.ffn_gate_up_exps.weight",
		"blk.%d.ffn_gate_exps.scale", "blk.%d.ffn_up_exps.scale", "blk.%d.ffn_down_exps.scale"}),
}

// lfm2moeKeys are the leading dense layers' count.
var lfm2moeKeys = []configKey{
	{key: "leading_dense_block_count", int: func(p *hyperParams) *int { return &p.layers.denseLead },
		defaultInt: func(Config) int { return 0 }},
}

// lfm2moeTensors is lfm2's table, its dense feed-forward in the leading
// layers only, and a mixture of experts with its selection bias in the
// others.
func lfm2moeTensors() []tensorSpec {
	dense, moe := []FFN{FFNSwiGLU}, []FFN{FFNMoE}
	var t []tensorSpec
	for _, s := range lfm2Tensors() {
		switch s.at {
		case slotWGate, slotWUp, slotWDown:
			s.ffns = dense
		}
		t = append(t, s)
		if s.at == slotFFNNorm {
			for _, e := range moeTensors(false) {
				e.ffns = moe
				t = append(t, e)
			}
			t = append(t, tensorSpec{name: "blk.%d.exp_probs_b.bias", rows: dimExperts, at: slotExpertBias, ffns: moe})
		}
	}
	return t
}

// configureLFM2MoE reads what lfm2 files say (configureShortConv) and
// refuses a gating other than the sigmoid llama.cpp's LFM2 converter
// writes.
func configureLFM2MoE(f *gguf.File, p *hyperParams) error {
	if err := configureLFM2(f, p, "lfm2moe"); err != nil {
		return err
	}
	const sigmoidGating = 2 // llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID
	g, err := f.Uint32("lfm2moe.expert_gating_func")
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrFormat, err)
	case g != sigmoidGating:
		return fmt.Errorf("%w: lfm2moe.expert_gating_func %d: LFM2's experts are gated by a sigmoid (2)", ErrUnsupported, g)
	}
	if p.layers.denseLead > p.Layers {
		return fmt.Errorf("%w: lfm2moe.leading_dense_block_count %d of %d layers", ErrFormat, p.layers.denseLead, p.Layers)
	}
	return nil
}
