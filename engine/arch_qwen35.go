package engine

import (
	"fmt"
	"slices"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// qwen35 is Qwen3.5's dense models (llama.cpp's LLM_ARCH_QWEN35), a
// hybrid: of every full_attention_interval layers (4 when the file does
// not say) the last is a gated attention layer and the others are Gated
// DeltaNet layers (LayerDeltaNet, deltanet.go). Every layer normalises
// its input (attn_norm), adds its mixer's output to the residual stream,
// normalises that (post_attention_norm, the feed-forward's input norm)
// and adds a SwiGLU feed-forward, as the llama family's layers do. The
// attention layers are qwen3's, with:
//
//   - attn_q projecting to each head's queries followed by its output
//     gate (2·heads·headDim rows); the heads' attention output is
//     multiplied by σ(gate) before attn_output (AttentionSpec.Gated);
//   - partial rotary embeddings: rope.dimension_count of the head's
//     dimensions (a quarter in the real models), in NeoX pairs. llama.cpp
//     rotates them as interleaved M-RoPE over rope.dimension_sections
//     (Qwen3.5's [11, 11, 10, 0]), which for text, whose temporal, height
//     and width positions are all the token's, turns every pair a section
//     covers by the token's position: a file whose sections leave a
//     rotated pair uncovered is refused;
//   - an RMSNorm of each query and key head (attn_q_norm, attn_k_norm).
//
// The converter writes the norms' weights with Qwen3.5's 1 added, so the
// file's weights are used as they are. A file with multi-token prediction
// layers (nextn_predict_layers) counts them in block_count; llama.cpp does
// not run them for generation, and neither does the engine.
var qwen35 = &architecture{
	name: "qwen35", ropeStyle: RopeHalves, partialRope: true,
	keys:    append(slices.Clip(llamaKeys), ssmKeys...),
	tensors: qwen35Tensors(),
	layer:   LayerSpec{QKNorm: QKNormHeads, Attention: AttentionSpec{Gated: true}},
	configure: func(f *gguf.File, p *hyperParams) error {
		return configureQwen35(f, p, "qwen35")
	},
	noSplit: "its Gated DeltaNet layers keep a recurrent state per head, which a part of a split model does not hold",
}

// configureQwen35 reads what the Qwen3.5 families' files say beyond their
// keys: which layers attend, the rotary sections, the prediction layers.
func configureQwen35(f *gguf.File, p *hyperParams, arch string) error {
	key := func(k string) string { return arch + "." + k }
	nextN, err := uint32Key(f, key("nextn_predict_layers"), 0)
	if err != nil {
		return err
	}
	if nextN >= p.Layers {
		return fmt.Errorf("%w: %d of %d layers are multi-token prediction layers (nextn_predict_layers)", ErrFormat, nextN, p.Layers)
	}
	p.Layers -= nextN
	if _, ok := f.Lookup(key("attention.recurrent_layers")); ok {
		return fmt.Errorf("%w: %s: the recurrent layers listed one by one (only full_attention_interval is read)", ErrUnsupported, key("attention.recurrent_layers"))
	}
	interval, err := uint32Key(f, key("full_attention_interval"), 4)
	switch {
	case err != nil:
		return err
	case interval < 1:
		return fmt.Errorf("%w: %s = 0", ErrFormat, key("full_attention_interval"))
	}
	if p.Layers > 0 && p.Layers <= maxDimension {
		p.layers.kinds = make([]LayerKind, p.Layers)
		for l := range p.layers.kinds {
			if (l+1)%interval != 0 {
				p.layers.kinds[l] = LayerDeltaNet
			}
		}
	}
	v, ok := f.Lookup(key("rope.dimension_sections"))
	if !ok {
		return fmt.Errorf("%w: missing key %s", ErrFormat, key("rope.dimension_sections"))
	}
	var sections []int64
	if a, ok := v.Int32s(); ok {
		for _, x := range a {
			sections = append(sections, int64(x))
		}
	} else if a, ok := v.Uint32s(); ok {
		for _, x := range a {
			sections = append(sections, int64(x))
		}
	} else {
		return fmt.Errorf("%w: %s is not an array of integers", ErrFormat, key("rope.dimension_sections"))
	}
	if p.Heads <= 0 || (p.KeyLength == 0 && p.Dim%p.Heads != 0) {
		return nil // validate says what is wrong
	}
	return checkRopeSections(sections, p.RotaryDims())
}

// checkRopeSections checks that interleaved M-RoPE over sections rotates
// each of the rotated pairs by the token's position, as it does for text
// where every pair a section covers (ggml's rope cache, mode IMROPE: pair
// i is in sector i mod Σsections, which the temporal section covers when
// sector ≡ 0 (mod 3) and sector < 3·sections[0], the height's when ≡ 1
// and < 3·sections[1], the width's when ≡ 2 and < 3·sections[2]); a pair
// left to the fourth section would not turn.
func checkRopeSections(sections []int64, ropeDims int) error {
	if len(sections) < 3 || len(sections) > 4 {
		return fmt.Errorf("%w: rope.dimension_sections has %d values, want 4", ErrFormat, len(sections))
	}
	var s [4]int
	sum := 0
	for i, v := range sections {
		if v < 0 || v > maxDimension {
			return fmt.Errorf("%w: rope.dimension_sections %v", ErrFormat, sections)
		}
		s[i] = int(v)
		sum += int(v)
	}
	if sum == 0 {
		return fmt.Errorf("%w: rope.dimension_sections %v are all 0", ErrFormat, sections)
	}
	for pair := range ropeDims / 2 {
		sector := pair % sum
		if sector >= 3*s[sector%3] {
			return fmt.Errorf("%w: rope.dimension_sections %v leave rotated pair %d of %d to the fourth section, which text does not turn", ErrUnsupported, sections, pair, ropeDims/2)
		}
	}
	return nil
}

// qwen35Tensors is the Qwen3.5 families' tensor table: the tensors every
// layer has, the attention layers' and the Gated DeltaNet layers' (the
// feed-forward's are the llama family's, and qwen35moe's its experts).
func qwen35Tensors() []tensorSpec {
	attn, delta := []LayerKind{LayerAttention}, []LayerKind{LayerDeltaNet}
	return []tensorSpec{
		{name: "token_embd.weight", rows: dimVocab, cols: dimModel, at: slotTokenEmbedding},
		{name: "output_norm.weight", rows: dimModel, at: slotOutputNorm},
		{name: nameOutput, rows: dimVocab, cols: dimModel, optional: true, at: slotOutput}, // absent: tied to token_embd

		{name: "blk.%d.attn_norm.weight", rows: dimModel, at: slotAttnNorm},
		{name: "blk.%d.post_attention_norm.weight", rows: dimModel, at: slotFFNNorm},

		{name: "blk.%d.attn_q.weight", rows: dimQGate, cols: dimModel, at: slotWq, kinds: attn},
		{name: "blk.%d.attn_k.weight", rows: dimKV, cols: dimModel, at: slotWk, kinds: attn},
		{name: "blk.%d.attn_v.weight", rows: dimKV, cols: dimModel, at: slotWv, kinds: attn},
		{name: "blk.%d.attn_output.weight", rows: dimModel, cols: dimQ, at: slotWo, kinds: attn},
		{name: "blk.%d.attn_q_norm.weight", rows: dimHead, at: slotQNorm, kinds: attn},
		{name: "blk.%d.attn_k_norm.weight", rows: dimHead, at: slotKNorm, kinds: attn},

		{name: "blk.%d.attn_qkv.weight", rows: dimSSMConv, cols: dimModel, at: slotSSMQKV, kinds: delta},
		{name: "blk.%d.attn_gate.weight", rows: dimSSMInner, cols: dimModel, at: slotSSMGate, kinds: delta},
		{name: "blk.%d.ssm_conv1d.weight", rows: dimSSMConv, cols: dimSSMKernel, at: slotSSMConv, kinds: delta},
		{name: "blk.%d.ssm_dt.bias", rows: dimSSMHeads, at: slotSSMDtBias, kinds: delta},
		{name: "blk.%d.ssm_a", rows: dimSSMHeads, at: slotSSMA, kinds: delta},
		{name: "blk.%d.ssm_beta.weight", rows: dimSSMHeads, cols: dimModel, at: slotSSMBeta, kinds: delta},
		{name: "blk.%d.ssm_alpha.weight", rows: dimSSMHeads, cols: dimModel, at: slotSSMAlpha, kinds: delta},
		{name: "blk.%d.ssm_norm.weight", rows: dimSSMState, at: slotSSMNorm, kinds: delta},
		{name: "blk.%d.ssm_out.weight", rows: dimModel, cols: dimSSMInner, at: slotSSMOut, kinds: delta},

		{name: "blk.%d.ffn_gate.weight", rows: dimHidden, cols: dimModel, at: slotWGate},
		{name: "blk.%d.ffn_up.weight", rows: dimHidden, cols: dimModel, at: slotWUp},
		{name: "blk.%d.ffn_down.weight", rows: dimModel, cols: dimHidden, at: slotWDown},
	}
}

// splitQueryGate separates a gated attention layer's query products: qg
// holds n rows of 2·qDim values, each head's headDim queries followed by
// its headDim gates, and gate holds n rows of qDim. It leaves the queries
// in qg's first n·qDim values, rows of qDim, and the gates in gate.
func splitQueryGate(qg, gate []float32, n, headDim int) {
	qDim := len(gate) / n
	for i := range n {
		for h := range qDim / headDim {
			dst, src := i*qDim+h*headDim, 2*(i*qDim+h*headDim)
			copy(gate[dst:dst+headDim], qg[src+headDim:src+2*headDim])
			copy(qg[dst:dst+headDim], qg[src:src+headDim]) // dst ≤ src: rows already moved are not read again
		}
	}
}

// gateOutput multiplies the heads' attention output by σ(gate), value by
// value.
func gateOutput(attn, gate []float32) {
	for i, g := range gate {
		attn[i] *= sigmoid(g)
	}
}

// gatedAttention reports whether some layer's attention is gated
// (AttentionSpec.Gated).
func (c Config) gatedAttention() bool {
	for _, s := range c.LayerSpecs {
		if s.Kind == LayerAttention && s.Attention.Gated {
			return true
		}
	}
	return false
}
