package engine

import "github.com/wasmlm/wasmlm/engine/tensor"

// Info describes a model for display (wasmlm info, the JS lm.info, the HTTP
// model list). Field names in JSON are snake_case.
type Info struct {
	Format          Format         `json:"format"`
	Architecture    string         `json:"architecture"`
	VocabSize       int            `json:"vocab_size"`
	ContextLength   int            `json:"context_length"`
	Dim             int            `json:"embedding_length"`
	HiddenDim       int            `json:"feed_forward_length"`
	Layers          int            `json:"block_count"`
	Heads           int            `json:"head_count"`
	KVHeads         int            `json:"head_count_kv"`
	RopeTheta       float32        `json:"rope_freq_base"`
	NormEps         float32        `json:"rms_norm_eps"`
	SharedOutput    bool           `json:"shared_output"`
	Parameters      int64          `json:"parameters"`
	TensorTypes     map[string]int `json:"tensor_types"`
	FileSize        int            `json:"file_size"`
	BOS             int            `json:"bos_token_id"`
	EOS             int            `json:"eos_token_id"`
	Metadata        map[string]any `json:"metadata,omitempty"`
	TokenizerFamily string         `json:"tokenizer,omitempty"`
}

// Info summarises the model.
func (m *Model) Info() Info {
	c, w := m.Config, m.Weights
	sp := m.Tokenizer.Special()
	info := Info{
		Format: m.Format, Architecture: m.Architecture,
		VocabSize: c.VocabSize, ContextLength: c.ContextLength, Dim: c.Dim, HiddenDim: c.HiddenDim,
		Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads, RopeTheta: c.RopeTheta, NormEps: c.NormEps,
		SharedOutput: w.Output == w.TokenEmbedding, TensorTypes: map[string]int{},
		FileSize: m.FileSize, BOS: sp.BOS, EOS: sp.EOS, Metadata: m.metadata,
	}
	count := func(mat *tensor.Matrix) {
		if mat != nil {
			info.TensorTypes[mat.Type.String()]++
			info.Parameters += int64(mat.Rows) * int64(mat.Cols)
		}
	}
	vec := func(v []float32) {
		if v != nil {
			info.TensorTypes["F32"]++
			info.Parameters += int64(len(v))
		}
	}
	count(w.TokenEmbedding)
	for _, l := range w.Layers {
		vec(l.AttnNorm)
		vec(l.FFNNorm)
		vec(l.Bq)
		vec(l.Bk)
		vec(l.Bv)
		for _, mat := range []*tensor.Matrix{l.Wq, l.Wk, l.Wv, l.Wo, l.WGate, l.WDown, l.WUp} {
			count(mat)
		}
	}
	vec(w.OutputNorm)
	if !info.SharedOutput {
		count(w.Output)
	}
	return info
}
