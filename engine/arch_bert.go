package engine

import (
	"fmt"
	"slices"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
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
	vec := func(name string, rows dimension, optional bool, at func(*modelWeights, int) *[]float32) tensorSpec {
		return tensorSpec{name: name, rows: rows, optional: optional, vector: at}
	}
	mat := func(name string, rows, cols dimension, optional bool, at func(*modelWeights, int) **tensor.Matrix) tensorSpec {
		return tensorSpec{name: name, rows: rows, cols: cols, optional: optional, matrix: at}
	}
	layer := func(l int, w *modelWeights) *layerWeights { return &w.Layers[l] }
	t := []tensorSpec{
		mat("token_embd.weight", dimVocab, dimModel, false, func(w *modelWeights, _ int) **tensor.Matrix { return &w.TokenEmbedding }),
		mat("token_types.weight", dimTokenTypes, dimModel, true, func(w *modelWeights, _ int) **tensor.Matrix { return &w.TokenTypes }),
		vec("token_embd_norm.weight", dimModel, false, func(w *modelWeights, _ int) *[]float32 { return &w.EmbedNorm }),
		vec("token_embd_norm.bias", dimModel, false, func(w *modelWeights, _ int) *[]float32 { return &w.EmbedNormBias }),
	}
	if !nomic {
		t = append(t,
			mat("position_embd.weight", dimContext, dimModel, false, func(w *modelWeights, _ int) **tensor.Matrix { return &w.PositionEmbedding }),
			// A reranker's classification head (pooling_type rank).
			mat("cls.weight", dimModel, dimModel, true, func(w *modelWeights, _ int) **tensor.Matrix { return &w.Cls }),
			vec("cls.bias", dimModel, true, func(w *modelWeights, _ int) *[]float32 { return &w.ClsBias }),
			mat("cls.output.weight", dimClasses, dimModel, true, func(w *modelWeights, _ int) **tensor.Matrix { return &w.ClsOut }),
			vec("cls.output.bias", dimClasses, true, func(w *modelWeights, _ int) *[]float32 { return &w.ClsOutBias }),
			mat("blk.%d.attn_q.weight", dimQ, dimModel, false, func(w *modelWeights, l int) **tensor.Matrix { return &layer(l, w).Wq }),
			mat("blk.%d.attn_k.weight", dimKV, dimModel, false, func(w *modelWeights, l int) **tensor.Matrix { return &layer(l, w).Wk }),
			mat("blk.%d.attn_v.weight", dimKV, dimModel, false, func(w *modelWeights, l int) **tensor.Matrix { return &layer(l, w).Wv }),
			vec("blk.%d.attn_q.bias", dimQ, true, func(w *modelWeights, l int) *[]float32 { return &layer(l, w).Bq }),
			vec("blk.%d.attn_k.bias", dimKV, true, func(w *modelWeights, l int) *[]float32 { return &layer(l, w).Bk }),
			vec("blk.%d.attn_v.bias", dimKV, true, func(w *modelWeights, l int) *[]float32 { return &layer(l, w).Bv }))
	} else {
		qkv := []dimension{dimQ, dimKV, dimKV}
		for piece, at := range []func(*layerWeights) **tensor.Matrix{
			func(l *layerWeights) **tensor.Matrix { return &l.Wq },
			func(l *layerWeights) **tensor.Matrix { return &l.Wk },
			func(l *layerWeights) **tensor.Matrix { return &l.Wv },
		} {
			t = append(t, tensorSpec{name: "blk.%d.attn_qkv.weight", rows: qkv[piece], cols: dimModel, fused: qkv, piece: piece,
				matrix: func(w *modelWeights, l int) **tensor.Matrix { return at(layer(l, w)) }})
		}
	}
	t = append(t,
		mat("blk.%d.attn_output.weight", dimModel, dimQ, false, func(w *modelWeights, l int) **tensor.Matrix { return &layer(l, w).Wo }),
		vec("blk.%d.attn_output.bias", dimModel, true, func(w *modelWeights, l int) *[]float32 { return &layer(l, w).Bo }),
		vec("blk.%d.attn_output_norm.weight", dimModel, false, func(w *modelWeights, l int) *[]float32 { return &layer(l, w).AttnOutNorm }),
		vec("blk.%d.attn_output_norm.bias", dimModel, false, func(w *modelWeights, l int) *[]float32 { return &layer(l, w).AttnOutNormBias }),
		mat("blk.%d.ffn_up.weight", dimHidden, dimModel, false, func(w *modelWeights, l int) **tensor.Matrix { return &layer(l, w).WUp }),
		vec("blk.%d.ffn_up.bias", dimHidden, true, func(w *modelWeights, l int) *[]float32 { return &layer(l, w).BUp }),
		mat("blk.%d.ffn_down.weight", dimModel, dimHidden, false, func(w *modelWeights, l int) **tensor.Matrix { return &layer(l, w).WDown }),
		vec("blk.%d.ffn_down.bias", dimModel, true, func(w *modelWeights, l int) *[]float32 { return &layer(l, w).BDown }),
		vec("blk.%d.layer_output_norm.weight", dimModel, false, func(w *modelWeights, l int) *[]float32 { return &layer(l, w).LayerOutNorm }),
		vec("blk.%d.layer_output_norm.bias", dimModel, false, func(w *modelWeights, l int) *[]float32 { return &layer(l, w).LayerOutNormBias }))
	if nomic {
		t = append(t, mat("blk.%d.ffn_gate.weight", dimHidden, dimModel, false, func(w *modelWeights, l int) **tensor.Matrix { return &layer(l, w).WGate }))
	}
	return t
}
