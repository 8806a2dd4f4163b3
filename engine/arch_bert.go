package engine

import (
	"fmt"
	"slices"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// The encoders: BERT and the models built on it (MiniLM, BGE, E5, GTE,
// BERT cross-encoders that rerank: llama.cpp's LLM_ARCH_BERT) and Nomic's nomic-bert
// (nomic-embed-text: LLM_ARCH_NOMIC_BERT). They embed or rank text; they
// do not generate it. Their block differs from the llama family's
// throughout (encoder.go computes it):
//
//   - the input is the token's embedding plus the first token type's
//     (llama.cpp gives every token type 0) plus, in bert, the learned
//     embedding of its position, normalised by a LayerNorm (mean and
//     variance, a weight and a bias);
//   - every token attends to every other (attention.causal = false);
//     nomic-bert rotates q and k (NeoX pairs), bert does not;
//   - each sub-layer's output is added to its input and the sum
//     normalised by a LayerNorm (post-norm), and the products have biases
//     (bert; nomic-bert's converter writes none);
//   - the feed-forward is GELU(up) → down in bert, SwiGLU in nomic-bert;
//   - there is no output norm and no classifier over the vocabulary: the
//     final states are pooled (pooling_type: mean, the first token's, or
//     a reranker's classification head over the first token's state).
var (
	bert = &architecture{
		name: "bert", keys: bertKeys, tensors: bertTensors(false), encoder: true, configure: configureEncoder,
		layer:   LayerSpec{Norms: NormsResidual, Attention: AttentionSpec{NoPE: true}, FFN: FFNGELU},
		noSplit: "an encoder runs whole in one worker",
		// llama.cpp would also take a fused attn_qkv, and the extra norms
		// of other BERT variants, which bert converters do not write.
		unsupported: []string{"blk.%d.attn_qkv.weight", "blk.%d.attn_q_norm.weight", "blk.%d.attn_norm_2.weight", "blk.%d.ffn_gate.weight", "cls.norm.weight"},
	}
	nomicBert = &architecture{
		name: "nomic-bert", ropeStyle: RopeHalves, keys: bertKeys, tensors: bertTensors(true), encoder: true, configure: configureEncoder,
		layer:   LayerSpec{Norms: NormsResidual, FFN: FFNSwiGLU},
		noSplit: "an encoder runs whole in one worker",
		// Separate q, k and v, biases and mixture-of-experts layers: not
		// what nomic-bert's converter writes.
		unsupported: []string{"blk.%d.attn_q.weight", "blk.%d.attn_qkv.bias", "blk.%d.ffn_up_exps.weight"},
	}
)

// bertKeys are the encoders' hyper-parameters: the llama family's up to
// the rope base (which only nomic-bert uses), then the LayerNorm's epsilon
// instead of RMSNorm's, and no key_length.
var bertKeys = append(slices.Clone(llamaKeys[:7]),
	configKey{key: "attention.layer_norm_epsilon", float: func(p *hyperParams) *float32 { return &p.NormEps }})

// configureEncoder reads what an encoder's file says beyond its keys: the
// token types, which llama.cpp requires (it adds the first type's row to
// every token).
func configureEncoder(f *gguf.File, p *hyperParams) error {
	n, err := uint32Key(f, "tokenizer.ggml.token_type_count", 0)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: an encoder's file must say tokenizer.ggml.token_type_count (llama.cpp too refuses it)", ErrFormat)
	}
	p.TokenTypes = n
	return nil
}

// bertTensors is the table of bert (nomic false) or nomic-bert (nomic
// true), as llama.cpp's loader and converter name them.
func bertTensors(nomic bool) []tensorSpec {
	t := []tensorSpec{
		{name: "token_embd.weight", rows: dimVocab, cols: dimModel, at: slotTokenEmbedding},
		{name: "token_types.weight", rows: dimTokenTypes, cols: dimModel, optional: true, at: slotTokenTypes},
		{name: "token_embd_norm.weight", rows: dimModel, at: slotEmbedNorm},
		{name: "token_embd_norm.bias", rows: dimModel, at: slotEmbedNormBias},
	}
	if !nomic {
		t = append(t, []tensorSpec{
			{name: "position_embd.weight", rows: dimContext, cols: dimModel, at: slotPositionEmbedding},
			// A reranker's classification head (pooling_type rank).
			{name: "cls.weight", rows: dimModel, cols: dimModel, optional: true, at: slotCls},
			{name: "cls.bias", rows: dimModel, optional: true, at: slotClsBias},
			{name: "cls.output.weight", rows: dimClasses, cols: dimModel, optional: true, at: slotClsOut},
			{name: "cls.output.bias", rows: dimClasses, optional: true, at: slotClsOutBias},
			{name: "blk.%d.attn_q.weight", rows: dimQ, cols: dimModel, at: slotWq},
			{name: "blk.%d.attn_k.weight", rows: dimKV, cols: dimModel, at: slotWk},
			{name: "blk.%d.attn_v.weight", rows: dimKV, cols: dimModel, at: slotWv},
			{name: "blk.%d.attn_q.bias", rows: dimQ, optional: true, at: slotBq},
			{name: "blk.%d.attn_k.bias", rows: dimKV, optional: true, at: slotBk},
			{name: "blk.%d.attn_v.bias", rows: dimKV, optional: true, at: slotBv},
		}...)
	} else {
		qkv := []dimension{dimQ, dimKV, dimKV}
		for piece, at := range []slot{slotWq, slotWk, slotWv} {
			t = append(t, tensorSpec{name: "blk.%d.attn_qkv.weight", rows: qkv[piece], cols: dimModel, fused: qkv, piece: piece, at: at})
		}
	}
	t = append(t, []tensorSpec{
		{name: "blk.%d.attn_output.weight", rows: dimModel, cols: dimQ, at: slotWo},
		{name: "blk.%d.attn_output.bias", rows: dimModel, optional: true, at: slotBo},
		{name: "blk.%d.attn_output_norm.weight", rows: dimModel, at: slotAttnOutNorm},
		{name: "blk.%d.attn_output_norm.bias", rows: dimModel, at: slotAttnOutNormBias},
		{name: "blk.%d.ffn_up.weight", rows: dimHidden, cols: dimModel, at: slotWUp},
		{name: "blk.%d.ffn_up.bias", rows: dimHidden, optional: true, at: slotBUp},
		{name: "blk.%d.ffn_down.weight", rows: dimModel, cols: dimHidden, at: slotWDown},
		{name: "blk.%d.ffn_down.bias", rows: dimModel, optional: true, at: slotBDown},
		{name: "blk.%d.layer_output_norm.weight", rows: dimModel, at: slotLayerOutNorm},
		{name: "blk.%d.layer_output_norm.bias", rows: dimModel, at: slotLayerOutNormBias},
	}...)
	if nomic {
		t = append(t, tensorSpec{name: "blk.%d.ffn_gate.weight", rows: dimHidden, cols: dimModel, at: slotWGate})
	}
	return t
}
