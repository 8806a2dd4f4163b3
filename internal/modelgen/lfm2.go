package modelgen

import (
	"fmt"
	"slices"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// LFM2 files (lfm2), as llama.cpp's converter (conversion/lfm2.py:
// LFM2Model) writes them: attention.head_count_kv is an array of one count
// per layer, 0 for a short-convolution layer; vocab_size and
// shortconv.l_cache, the convolution's span. Every layer has attn_norm (the
// "operator norm"), then either attention with a norm of each query and
// key head (attn_q_norm, attn_k_norm) or a short convolution
// (shortconv.conv, a (dim, l_cache) F32 kernel that llama-quantize leaves
// as it is; shortconv.in_proj, 3·dim rows; shortconv.out_proj), then
// llama's feed-forward; the final norm is token_embd_norm.

// lfm2Kernel is LFM2's shortconv.l_cache, for a Spec's zero ShortConvKernel.
const lfm2Kernel = 3

// attends reports whether layer l of an lfm2 spec is an attention layer:
// one of AttentionLayers, or, when that is nil, every third (2, 5, 8, …),
// about LFM2's proportion.
func (s Spec) attends(l int) bool {
	if s.AttentionLayers == nil {
		return l%3 == 2
	}
	return slices.Contains(s.AttentionLayers, l)
}

// validateLFM2 checks the lfm2 fields (defaults filled in).
func (s Spec) validateLFM2() error {
	lfm2 := s.Arch == "lfm2" || s.Arch == "lfm2moe"
	switch {
	case !lfm2 && (s.ShortConvKernel != 0 || s.AttentionLayers != nil):
		return fmt.Errorf("%w: short convolutions and attention layers are lfm2's", ErrSpec)
	case s.Arch != "lfm2moe" && s.DenseLayers != 0:
		return fmt.Errorf("%w: leading dense layers are lfm2moe's", ErrSpec)
	case !lfm2:
		return nil
	case s.DenseLayers < 0 || s.DenseLayers > s.Layers:
		return fmt.Errorf("%w: DenseLayers is %d of %d layers", ErrSpec, s.DenseLayers, s.Layers)
	case s.ShortConvKernel < 2 || s.ShortConvKernel > 64:
		return fmt.Errorf("%w: ShortConvKernel is %d, want 2..64", ErrSpec, s.ShortConvKernel)
	}
	for _, l := range s.AttentionLayers {
		if l < 0 || l >= s.Layers {
			return fmt.Errorf("%w: attention layer %d of %d", ErrSpec, l, s.Layers)
		}
	}
	return nil
}

// lfm2Metadata writes lfm2's own keys.
func (g *generator) lfm2Metadata() {
	sp, b := g.sp, g.b
	if sp.Arch != "lfm2" && sp.Arch != "lfm2moe" {
		return
	}
	key := func(k string) string { return sp.Arch + "." + k }
	counts := make([]int32, sp.Layers)
	for l := range counts {
		if sp.attends(l) {
			counts[l] = int32(sp.KVHeads)
		}
	}
	b.Set(key("attention.head_count_kv"), gguf.ArrayOf(counts))
	if sp.Arch == "lfm2moe" { // LFM2MoeModel's: before vocab_size
		b.Set(key("leading_dense_block_count"), gguf.ValueOf(uint32(sp.DenseLayers)))
		b.Set(key("expert_gating_func"), gguf.ValueOf(uint32(2))) // sigmoid
	}
	b.Set(key("vocab_size"), gguf.ValueOf(uint32(sp.VocabSize)))
	b.Set(key("shortconv.l_cache"), gguf.ValueOf(uint32(sp.ShortConvKernel)))
}

// lfm2Tensors draws and adds an lfm2 model's tensors.
func (g *generator) lfm2Tensors() {
	sp := g.sp
	q, kv := sp.QDim(), sp.KVDim()
	layer := func(i int, name string) string { return fmt.Sprintf("blk.%d.%s", i, name) }
	g.matrix("token_embd.weight", sp.VocabSize, sp.Dim, !sp.SeparateOutput)
	for i := range sp.Layers {
		g.vector(layer(i, "attn_norm.weight"), sp.Dim, 1)
		if sp.attends(i) {
			g.matrix(layer(i, "attn_q.weight"), q, sp.Dim, false)
			g.matrix(layer(i, "attn_k.weight"), kv, sp.Dim, false)
			g.matrix(layer(i, "attn_v.weight"), kv, sp.Dim, false)
			g.vector(layer(i, "attn_q_norm.weight"), sp.HeadSize(), 1)
			g.vector(layer(i, "attn_k_norm.weight"), sp.HeadSize(), 1)
			g.matrix(layer(i, "attn_output.weight"), sp.Dim, q, false)
		} else {
			g.storedMatrix(layer(i, "shortconv.conv.weight"), sp.Dim, sp.ShortConvKernel, tensor.F32, sp.Std)
			g.matrix(layer(i, "shortconv.in_proj.weight"), 3*sp.Dim, sp.Dim, false)
			g.matrix(layer(i, "shortconv.out_proj.weight"), sp.Dim, sp.Dim, false)
		}
		g.vector(layer(i, "ffn_norm.weight"), sp.Dim, 1)
		if sp.Arch == "lfm2moe" && i >= sp.DenseLayers {
			g.moeFFN(i)
			g.storedVector(layer(i, "exp_probs_b.bias"), sp.Experts, expertBiasStd) // F32, as llama-quantize leaves it
			continue
		}
		g.matrix(layer(i, "ffn_gate.weight"), sp.HiddenDim, sp.Dim, false)
		g.matrix(layer(i, "ffn_down.weight"), sp.Dim, sp.HiddenDim, false)
		g.matrix(layer(i, "ffn_up.weight"), sp.HiddenDim, sp.Dim, false)
	}
	g.vector("token_embd_norm.weight", sp.Dim, 1)
	if sp.SeparateOutput {
		g.matrix("output.weight", sp.VocabSize, sp.Dim, true)
	}
}

// expertBiasStd is the standard deviation of lfm2moe's selection biases:
// a few times the experts' sigmoids' spread, so that they move the choice
// (as a trained model's load-balancing biases do) and keep the chosen
// experts apart from the others by more than rounding moves them.
const expertBiasStd = 0.3

// storedVector adds an F32 vector of n values drawn from N(0, std²).
func (g *generator) storedVector(name string, n int, std float64) {
	if g.headerOnly {
		g.emit(name, tensor.F32, []uint64{uint64(n)}, nil)
		return
	}
	g.emit(name, tensor.F32, []uint64{uint64(n)}, f32Bytes(g.random(n, 0, std)))
}
