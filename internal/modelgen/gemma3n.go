package modelgen

import (
	"cmp"
	"fmt"
	"math"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Gemma 3n (text) files, as llama.cpp's converter (conversion/gemma.py's
// Gemma3NModel, a Gemma3Model) writes them: gemma3's keys (Family's
// SlidingWindow and FinalSoftCap) with altup.active_idx (0),
// altup.num_inputs (4), embedding_length_per_layer_input (256),
// attention.shared_kv_layers (the layers from the 21st on),
// activation_sparsity_scale (the normal's 95th percentile for the first 10
// layers, −∞ for the others, as the converter computes icdf(0.95) and
// icdf(0)) and attention.sliding_window_pattern as a list of booleans
// (every 5th layer full) — the values llama.cpp fixes rather than reads.
// Its tensors are gemma3's without anything added to the norm weights
// (drawn around 1), every layer with its own attn_k and attn_v, plus the
// per-layer embeddings (as gemma4's), altup_proj and altup_unembd_proj
// (three dim×dim matrices stacked, in the Spec's type), and in every layer
// AltUp's router, its norm and coefficients (the small matrices in F32),
// altup_correct_scale, and LAuReL's laurel_l, laurel_r and laurel_post_norm.

// What llama.cpp's gemma3n fixes, which a file must match.
const (
	gemma3nAltUp        = 4
	gemma3nLaurelRank   = 64
	gemma3nPerLayerDim  = 256
	gemma3nSparseLayers = 10
	gemma3nFirstShared  = 20
	gemma3nPeriod       = 5
)

// validateGemma3n checks what a gemma3n file's matrices need.
func (s Spec) validateGemma3n() error {
	if s.Arch != "gemma3n" {
		return nil
	}
	for _, cols := range []int{s.Dim, gemma3nPerLayerDim * s.Layers, gemma3nPerLayerDim, gemma3nLaurelRank, s.QDim(), s.HiddenDim} {
		if _, err := s.MatrixType(cols); err != nil {
			return err
		}
	}
	return nil
}

// gemma3nMetadata writes gemma3n's keys beyond gemma3's.
func (g *generator) gemma3nMetadata() {
	sp, b := g.sp, g.b
	if sp.Arch != "gemma3n" {
		return
	}
	key := func(k string) string { return "gemma3n." + k }
	sliding, sparsity := make([]bool, sp.Layers), make([]float32, sp.Layers)
	for l := range sliding {
		sliding[l] = l%gemma3nPeriod < gemma3nPeriod-1
		sparsity[l] = float32(math.Inf(-1))
		if l < gemma3nSparseLayers {
			sparsity[l] = 1.6448533535003662
		}
	}
	b.Set(key("altup.active_idx"), gguf.ValueOf(uint32(0)))
	b.Set(key("altup.num_inputs"), gguf.ValueOf(uint32(gemma3nAltUp)))
	b.Set(key("embedding_length_per_layer_input"), gguf.ValueOf(uint32(gemma3nPerLayerDim)))
	b.Set(key("attention.shared_kv_layers"), gguf.ValueOf(uint32(max(sp.Layers-gemma3nFirstShared, 0))))
	b.Set(key("activation_sparsity_scale"), gguf.ArrayOf(sparsity))
	b.Set(key("attention.sliding_window_pattern"), gguf.ArrayOf(sliding))
}

// gemma3nTensors draws and adds gemma3n's tensors.
func (g *generator) gemma3nTensors() {
	sp := g.sp
	pl := gemma3nPerLayerDim
	layer := func(i int, name string) string { return fmt.Sprintf("blk.%d.%s", i, name) }
	g.matrix("token_embd.weight", sp.VocabSize, sp.Dim, !sp.SeparateOutput)
	g.stack("altup_proj.weight", gemma3nAltUp-1, sp.Dim, sp.Dim)
	g.stack("altup_unembd_proj.weight", gemma3nAltUp-1, sp.Dim, sp.Dim)
	g.matrix("per_layer_token_embd.weight", sp.VocabSize, pl*sp.Layers, false)
	g.matrix("per_layer_model_proj.weight", pl*sp.Layers, sp.Dim, false)
	g.vector("per_layer_proj_norm.weight", pl, 1)
	g.vector("output_norm.weight", sp.Dim, 1)
	if sp.SeparateOutput {
		g.matrix("output.weight", sp.VocabSize, sp.Dim, true)
	}
	q, kv := sp.QDim(), sp.KVDim()
	for i := range sp.Layers {
		g.vector(layer(i, "attn_norm.weight"), sp.Dim, 1)
		g.matrix(layer(i, "attn_q.weight"), q, sp.Dim, false)
		g.matrix(layer(i, "attn_k.weight"), kv, sp.Dim, false)
		g.matrix(layer(i, "attn_v.weight"), kv, sp.Dim, false)
		g.matrix(layer(i, "attn_output.weight"), sp.Dim, q, false)
		g.vector(layer(i, "attn_q_norm.weight"), sp.HeadSize(), 1)
		g.vector(layer(i, "attn_k_norm.weight"), sp.HeadSize(), 1)
		g.vector(layer(i, "post_attention_norm.weight"), sp.Dim, 1)
		g.vector(layer(i, "ffn_norm.weight"), sp.Dim, 1)
		g.matrix(layer(i, "ffn_gate.weight"), sp.HiddenDim, sp.Dim, false)
		g.matrix(layer(i, "ffn_up.weight"), sp.HiddenDim, sp.Dim, false)
		g.matrix(layer(i, "ffn_down.weight"), sp.Dim, sp.HiddenDim, false)
		g.vector(layer(i, "post_ffw_norm.weight"), sp.Dim, 1)
		g.matrix(layer(i, "inp_gate.weight"), pl, sp.Dim, false)
		g.matrix(layer(i, "proj.weight"), sp.Dim, pl, false)
		g.vector(layer(i, "post_norm.weight"), sp.Dim, 1)
		g.storedMatrix(layer(i, "altup_correct_coef.weight"), gemma3nAltUp, gemma3nAltUp, tensor.F32, sp.Std)
		g.vector(layer(i, "altup_correct_scale.weight"), sp.Dim, 1)
		g.storedMatrix(layer(i, "altup_predict_coef.weight"), gemma3nAltUp*gemma3nAltUp, gemma3nAltUp, tensor.F32, sp.Std)
		g.storedMatrix(layer(i, "altup_router.weight"), gemma3nAltUp, sp.Dim, tensor.F32, sp.Std)
		g.vector(layer(i, "altup_router_norm.weight"), sp.Dim, 1)
		g.matrix(layer(i, "laurel_l.weight"), gemma3nLaurelRank, sp.Dim, false)
		g.matrix(layer(i, "laurel_r.weight"), sp.Dim, gemma3nLaurelRank, false)
		g.vector(layer(i, "laurel_post_norm.weight"), sp.Dim, 1)
	}
}

// stack adds n rows×cols matrices as one tensor (GGUF dims [cols, rows,
// n]) in the Spec's type.
func (g *generator) stack(name string, n, rows, cols int) {
	t, err := g.sp.MatrixType(cols)
	if err != nil {
		g.err = cmp.Or(g.err, fmt.Errorf("%s: %w", name, err))
		return
	}
	dims := []uint64{uint64(cols), uint64(rows), uint64(n)}
	if g.headerOnly {
		g.emit(name, t, dims, nil)
		return
	}
	data, err := encode(t, n*rows, cols, g.random(n*rows*cols, 0, g.sp.Std))
	if err != nil {
		g.err = cmp.Or(g.err, fmt.Errorf("%s: %w", name, err))
		return
	}
	g.emit(name, t, dims, data)
}
