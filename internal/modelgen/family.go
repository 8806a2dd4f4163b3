package modelgen

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// The families past the llama/qwen ones, written as llama.cpp's converter
// (convert_hf_to_gguf.py) writes them:
//
//   - phi3 (Phi3MiniModel): q, k and v fused in blk.N.attn_qkv (rows: q,
//     then k, then v), gate and up in blk.N.ffn_up (2·HiddenDim rows: the
//     gate's first), no ffn_gate; rope.dimension_count (RopeDims, the head
//     size by default), rope.scaling.original_context_length and
//     attention.sliding_window always, and with LongRoPE factors
//     rope_factors_long.weight, rope_factors_short.weight and
//     rope.scaling.attn_factor.
//   - smollm3 (SmolLM3Model, a LlamaModel): llama's tensors, vocab_size and
//     rope.dimension_count.
//   - olmo2 (Olmo2Model): no attn_norm or ffn_norm but post_attention_norm
//     and post_ffw_norm, attn_q_norm over all the queries and attn_k_norm
//     over the whole key, an output matrix of its own (SeparateOutput is
//     required).
//   - granite (GraniteModel, a LlamaModel): llama's tensors, vocab_size,
//     rope.dimension_count and the multipliers (embedding_scale,
//     attention.scale, residual_scale, logit_scale) that are not 0;
//     llama.cpp requires logit_scale, so LogitScale is.

// Family holds what phi3, granite, gemma2 and gemma3 files say beyond the
// llama family's keys; every field's zero value writes nothing (or, for
// phi3 and the gemmas, the converter's or the real models' default).
type Family struct {
	// RopeDims is phi3's rope.dimension_count: how many dimensions of a
	// head rotate (partial rotary); 0 means all of them.
	RopeDims int `json:"rope_dims,omitempty"`
	// RopeOriginalContext is phi3's rope.scaling.original_context_length;
	// 0 means ContextLength.
	RopeOriginalContext int `json:"rope_original_context,omitempty"`
	// RopeFactorsLong and RopeFactorsShort, both or neither, are phi3's
	// LongRoPE factors (RopeDims/2 values each), written with
	// RopeAttnFactor as rope.scaling.attn_factor.
	RopeFactorsLong  []float32 `json:"rope_factors_long,omitempty"`
	RopeFactorsShort []float32 `json:"rope_factors_short,omitempty"`
	RopeAttnFactor   float32   `json:"rope_attn_factor,omitempty"`
	// SlidingWindow is attention.sliding_window: phi3's, written as it is
	// (0 as Phi-4-mini's converted files say; llama.cpp ignores it), or
	// the positions a gemma sliding layer attends to, 0 meaning Gemma 2's
	// 4096 (gemma2) or Gemma-3-1B's 512 (gemma3).
	SlidingWindow int `json:"sliding_window,omitempty"`
	// AttnSoftCap is gemma2's attn_logit_softcapping (Gemma 2's 50 when 0).
	AttnSoftCap float32 `json:"attn_softcap,omitempty"`
	// FinalSoftCap is final_logit_softcapping: gemma2's (Gemma 2's 30 when
	// 0); gemma3 writes it only when set.
	FinalSoftCap float32 `json:"final_softcap,omitempty"`
	// Granite's multipliers: granite.embedding_scale, attention.scale,
	// residual_scale and logit_scale.
	EmbeddingScale float32 `json:"embedding_scale,omitempty"`
	AttentionScale float32 `json:"attention_scale,omitempty"`
	ResidualScale  float32 `json:"residual_scale,omitempty"`
	LogitScale     float32 `json:"logit_scale,omitempty"`
	// RopeYaRNFactor, when > 0, writes YaRN rope scaling
	// (rope.scaling.type yarn) with this factor, and
	// rope.scaling.original_context_length: RopeOriginalContext, or
	// ContextLength when 0 (gpt-oss: 32 over 4096). Any family can.
	RopeYaRNFactor float32 `json:"rope_yarn_factor,omitempty"`
	// ShortConvKernel is lfm2's shortconv.l_cache, the positions its
	// short convolutions span (LFM2's 3 when 0); AttentionLayers are the
	// layers that attend, the others being short convolutions (nil: every
	// third, 2, 5, 8, …). See lfm2.go.
	ShortConvKernel int   `json:"short_conv_kernel,omitempty"`
	AttentionLayers []int `json:"attention_layers,omitempty"`
	// RopeSections is qwen35's rope.dimension_sections: its interleaved
	// M-RoPE's pairs per section (qwen35.go; zero: as Qwen3.5's).
	RopeSections [4]int `json:"rope_sections,omitzero"`
	// DenseLayers is lfm2moe's leading_dense_block_count: its first
	// layers' feed-forward is dense, the others' a mixture of experts.
	DenseLayers int `json:"dense_layers,omitempty"`
}

// ropeDims is how many dimensions of a head rotate.
func (s Spec) ropeDims() int {
	if s.RopeDims > 0 {
		return s.RopeDims
	}
	return s.HeadSize()
}

// validateFamily checks the Family fields against the architecture.
func (s Spec) validateFamily() error {
	f := s.Family
	phi3 := s.Arch == "phi3"
	switch {
	case !phi3 && !qwen35Archs[s.Arch] && f.RopeDims != 0:
		return fmt.Errorf("%w: partial rotary is phi3's and qwen35's (llama.cpp refuses the others')", ErrSpec)
	case !phi3 && ((f.RopeOriginalContext != 0 && f.RopeYaRNFactor == 0) || f.RopeFactorsLong != nil || f.RopeFactorsShort != nil || f.RopeAttnFactor != 0):
		return fmt.Errorf("%w: LongRoPE is phi3's, and an original context YaRN's or phi3's", ErrSpec)
	case !(f.RopeYaRNFactor >= 0) || (f.RopeYaRNFactor > 0 && s.RopeLinearScale > 0):
		return fmt.Errorf("%w: RopeYaRNFactor %v must be positive, and not beside linear scaling", ErrSpec, f.RopeYaRNFactor)
	case s.Arch != "granite" && s.Arch != "granitehybrid" && (f.EmbeddingScale != 0 || f.AttentionScale != 0 || f.ResidualScale != 0 || f.LogitScale != 0):
		return fmt.Errorf("%w: the multipliers are granite's and granitehybrid's", ErrSpec)
	case s.Arch == "granite" && !(f.LogitScale > 0):
		return fmt.Errorf("%w: a granite model needs LogitScale (llama.cpp requires granite.logit_scale)", ErrSpec)
	case s.Arch == "olmo2" && !s.SeparateOutput:
		return fmt.Errorf("%w: olmo2 has an output matrix of its own (SeparateOutput)", ErrSpec)
	case f.RopeDims < 0 || f.RopeDims%2 != 0 || f.RopeDims > s.HeadSize() || f.RopeOriginalContext < 0 || f.SlidingWindow < 0:
		return fmt.Errorf("%w: RopeDims %d (even, at most the head size %d), RopeOriginalContext %d, SlidingWindow %d",
			ErrSpec, f.RopeDims, s.HeadSize(), f.RopeOriginalContext, f.SlidingWindow)
	case (f.RopeFactorsLong == nil) != (f.RopeFactorsShort == nil):
		return fmt.Errorf("%w: LongRoPE needs both the long and the short factors", ErrSpec)
	case f.RopeFactorsLong != nil && (len(f.RopeFactorsLong) != s.ropeDims()/2 || len(f.RopeFactorsShort) != s.ropeDims()/2):
		return fmt.Errorf("%w: LongRoPE factors of %d and %d values, want %d", ErrSpec, len(f.RopeFactorsLong), len(f.RopeFactorsShort), s.ropeDims()/2)
	}
	return nil
}

// familyMetadata writes the families' own keys.
func (g *generator) familyMetadata() {
	sp, b := g.sp, g.b
	key := func(k string) string { return sp.Arch + "." + k }
	switch sp.Arch {
	case "phi3":
		b.Set(key("rope.dimension_count"), gguf.ValueOf(uint32(sp.ropeDims())))
		orig := sp.RopeOriginalContext
		if orig == 0 {
			orig = sp.ContextLength
		}
		b.Set(key("rope.scaling.original_context_length"), gguf.ValueOf(uint32(orig)))
		b.Set(key("attention.sliding_window"), gguf.ValueOf(uint32(sp.SlidingWindow)))
		if sp.RopeFactorsLong != nil {
			attn := sp.RopeAttnFactor
			if attn == 0 {
				attn = 1
			}
			b.Set(key("rope.scaling.attn_factor"), gguf.ValueOf(attn))
		}
	case "smollm3", "granite": // LlamaModel's
		b.Set(key("vocab_size"), gguf.ValueOf(uint32(sp.VocabSize)))
		b.Set(key("rope.dimension_count"), gguf.ValueOf(uint32(sp.HeadSize())))
	}
	if sp.Arch != "granite" {
		return
	}
	for _, m := range []struct {
		key string
		v   float32
	}{{"attention.scale", sp.AttentionScale}, {"embedding_scale", sp.EmbeddingScale},
		{"residual_scale", sp.ResidualScale}, {"logit_scale", sp.LogitScale}} {
		if m.v != 0 {
			b.Set(key(m.key), gguf.ValueOf(m.v))
		}
	}
}

// familyTensors draws and adds the tensors of phi3 and olmo2, whose
// layers are not llama's.
func (g *generator) familyTensors() {
	sp := g.sp
	q, kv := sp.QDim(), sp.KVDim()
	layer := func(i int, name string) string { return fmt.Sprintf("blk.%d.%s", i, name) }
	if sp.RopeFactorsLong != nil {
		g.emit("rope_factors_long.weight", tensor.F32, []uint64{uint64(len(sp.RopeFactorsLong))}, f32Bytes(sp.RopeFactorsLong))
		g.emit("rope_factors_short.weight", tensor.F32, []uint64{uint64(len(sp.RopeFactorsShort))}, f32Bytes(sp.RopeFactorsShort))
	}
	g.matrix("token_embd.weight", sp.VocabSize, sp.Dim, !sp.SeparateOutput)
	for i := range sp.Layers {
		if sp.Arch == "phi3" {
			g.vector(layer(i, "attn_norm.weight"), sp.Dim, 1)
			g.matrix(layer(i, "attn_qkv.weight"), q+2*kv, sp.Dim, false)
			g.matrix(layer(i, "attn_output.weight"), sp.Dim, q, false)
			g.vector(layer(i, "ffn_norm.weight"), sp.Dim, 1)
			g.matrix(layer(i, "ffn_up.weight"), 2*sp.HiddenDim, sp.Dim, false)
			g.matrix(layer(i, "ffn_down.weight"), sp.Dim, sp.HiddenDim, false)
			continue
		}
		g.matrix(layer(i, "attn_q.weight"), q, sp.Dim, false)
		g.matrix(layer(i, "attn_k.weight"), kv, sp.Dim, false)
		g.matrix(layer(i, "attn_v.weight"), kv, sp.Dim, false)
		g.matrix(layer(i, "attn_output.weight"), sp.Dim, q, false)
		g.vector(layer(i, "attn_q_norm.weight"), q, 1)
		g.vector(layer(i, "attn_k_norm.weight"), kv, 1)
		g.vector(layer(i, "post_attention_norm.weight"), sp.Dim, 1)
		g.matrix(layer(i, "ffn_gate.weight"), sp.HiddenDim, sp.Dim, false)
		g.matrix(layer(i, "ffn_down.weight"), sp.Dim, sp.HiddenDim, false)
		g.matrix(layer(i, "ffn_up.weight"), sp.HiddenDim, sp.Dim, false)
		g.vector(layer(i, "post_ffw_norm.weight"), sp.Dim, 1)
	}
	g.vector("output_norm.weight", sp.Dim, 1)
	if sp.SeparateOutput {
		g.matrix("output.weight", sp.VocabSize, sp.Dim, true)
	}
}
