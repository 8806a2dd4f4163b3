package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// granitehybrid is IBM's Granite 4.0 hybrids (llama.cpp's
// LLM_ARCH_GRANITE_HYBRID: granite-4.0-h-micro, -h-1b, -h-350m; the MoE
// ones, -h-tiny and -h-small, are refused with the mixtures of experts):
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
	return append(keys, ssmKeys...)
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
	kvHeads, err := perLayerCounts(f, "granitehybrid.attention.head_count_kv", p.Layers)
	if err != nil {
		return err
	}
	p.layers.kinds = make([]LayerKind, len(kvHeads))
	for l, n := range kvHeads {
		switch {
		case n == 0:
			p.layers.kinds[l] = LayerMamba2
		case p.KVHeads == 0:
			p.KVHeads = n
		case n != p.KVHeads:
			return fmt.Errorf("%w: granitehybrid.attention.head_count_kv: layer %d has %d kv heads, an earlier one %d", ErrUnsupported, l, n, p.KVHeads)
		}
	}
	if p.KVHeads == 0 {
		return fmt.Errorf("%w: granitehybrid.attention.head_count_kv: no layer attends (every one is Mamba-2)", ErrUnsupported)
	}
	return nil
}
