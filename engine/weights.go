package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Weights are a model's parameters. Matrices are (rows = outputs, cols =
// inputs) views into the model bytes; vectors are float32 views where the file
// stores float32, else decoded once at load (they are small).
type Weights struct {
	TokenEmbedding *tensor.Matrix // (vocab, dim)
	Layers         []LayerWeights
	OutputNorm     []float32      // (dim)
	Output         *tensor.Matrix // (vocab, dim); the embedding itself when shared
	// RopeFreqFactors, when present, divide each rotary pair's frequency
	// (headDim/2 values; llama-3.1-style rope scaling stores them as rope_freqs.weight).
	RopeFreqFactors []float32
}

// LayerWeights are one transformer block's parameters.
type LayerWeights struct {
	AttnNorm []float32      // (dim)
	Wq       *tensor.Matrix // (dim, dim): query projection
	Wk       *tensor.Matrix // (kvDim, dim)
	Wv       *tensor.Matrix // (kvDim, dim)
	Wo       *tensor.Matrix // (dim, dim): attention output projection
	Bq       []float32      // (dim) or nil: query bias (qwen2)
	Bk       []float32      // (kvDim) or nil
	Bv       []float32      // (kvDim) or nil
	FFNNorm  []float32      // (dim)
	WGate    *tensor.Matrix // (hidden, dim): w1 in llama2.c
	WDown    *tensor.Matrix // (dim, hidden): w2
	WUp      *tensor.Matrix // (hidden, dim): w3
}

// checkShapes verifies every weight against the config and the rows shard
// plan p computes (all of them for a whole model), so the forward pass can
// index without checks.
func (w *Weights) checkShapes(c Config, p shardPlan) error {
	mat := func(name string, m *tensor.Matrix, rows, cols int) error {
		if m == nil {
			return fmt.Errorf("%w: missing tensor %s", ErrFormat, name)
		}
		if m.Rows != rows || m.Cols != cols {
			return fmt.Errorf("%w: tensor %s is %d×%d, want %d×%d", ErrFormat, name, m.Rows, m.Cols, rows, cols)
		}
		return nil
	}
	vec := func(name string, v []float32, n int, optional bool) error {
		if v == nil && optional {
			return nil
		}
		if len(v) != n {
			return fmt.Errorf("%w: tensor %s has %d elements, want %d", ErrFormat, name, len(v), n)
		}
		return nil
	}
	headDim := c.HeadDim()
	q, kv := p.heads.len()*headDim, p.kvHeads.len()*headDim
	errs := []error{
		mat("token_embd", w.TokenEmbedding, p.vocab.len(), c.Dim),
		mat("output", w.Output, p.vocab.len(), c.Dim),
		vec("output_norm", w.OutputNorm, c.Dim, false),
	}
	if w.RopeFreqFactors != nil && len(w.RopeFreqFactors) != c.HeadDim()/2 {
		return fmt.Errorf("%w: rope_freqs has %d factors, want head_dim/2 = %d", ErrFormat, len(w.RopeFreqFactors), c.HeadDim()/2)
	}
	if len(w.Layers) != c.Layers {
		return fmt.Errorf("%w: %d layers of weights, config says %d", ErrFormat, len(w.Layers), c.Layers)
	}
	for i, l := range w.Layers {
		pre := fmt.Sprintf("blk.%d.", i)
		errs = append(errs,
			vec(pre+"attn_norm", l.AttnNorm, c.Dim, false),
			mat(pre+"attn_q", l.Wq, q, c.Dim),
			mat(pre+"attn_k", l.Wk, kv, c.Dim),
			mat(pre+"attn_v", l.Wv, kv, c.Dim),
			mat(pre+"attn_output", l.Wo, c.Dim, c.Dim),
			vec(pre+"attn_q.bias", l.Bq, q, true),
			vec(pre+"attn_k.bias", l.Bk, kv, true),
			vec(pre+"attn_v.bias", l.Bv, kv, true),
			vec(pre+"ffn_norm", l.FFNNorm, c.Dim, false),
			mat(pre+"ffn_gate", l.WGate, p.hidden.len(), c.Dim),
			mat(pre+"ffn_down", l.WDown, p.dim.len(), c.HiddenDim),
			mat(pre+"ffn_up", l.WUp, p.hidden.len(), c.Dim),
		)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
