package modelgen

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// gpt-oss files, as llama.cpp's converter (conversion/gpt_oss.py:
// GptOssModel) writes them: attention.key_length and value_length (its
// heads are wider than dim/heads), attention.sliding_window (every other
// layer slides, the first of each pair), expert_count, expert_used_count
// and expert_feed_forward_length beside feed_forward_length (the same
// width), and, with RopeYaRNFactor, YaRN rope scaling (the real models':
// 32 over 4096). Every layer has attn_norm, post_attention_norm (the
// feed-forward's norm), q, k and v with their biases, attn_output with
// its bias, attn_sinks (a logit per head), the router ffn_gate_inp with
// its bias, and the experts' stacked gate, up and down matrices
// (ffn_*_exps.weight, GGUF dims [cols, rows, experts]), each with its
// biases ([rows, experts]). The output matrix is always the file's own.
//
// The Spec's Type is the experts' storage type; the other matrices are
// stored as llama-quantize's MXFP4_MOE file type stores them: Q8_0 when
// the experts are MXFP4 (the real models' files), else the Spec's type.
// The routers, biases, sinks and norms are F32.

// gptOSSArch is gpt-oss's general.architecture.
const gptOSSArch = "gpt-oss"

// validateGptOSS checks what a gpt-oss spec needs.
func (s Spec) validateGptOSS() error {
	switch {
	case s.Arch != gptOSSArch:
		return nil
	case !s.SeparateOutput:
		return fmt.Errorf("%w: gpt-oss has an output matrix of its own (SeparateOutput): llama.cpp requires output.weight", ErrSpec)
	case s.SlidingWindow < 1:
		return fmt.Errorf("%w: gpt-oss needs SlidingWindow (llama.cpp requires attention.sliding_window)", ErrSpec)
	}
	return nil
}

// gptOSSMetadata writes gpt-oss's own keys.
func (g *generator) gptOSSMetadata() {
	if g.sp.Arch == gptOSSArch {
		g.b.Set(gptOSSArch+".attention.sliding_window", gguf.ValueOf(uint32(g.sp.SlidingWindow)))
	}
}

// gptOSSDenseType is the storage type of a gpt-oss file's matrices but the
// experts': Q8_0 beside MXFP4 experts (llama-quantize's MXFP4_MOE), else
// the Spec's.
func (s Spec) gptOSSDenseType() tensor.Type {
	if s.Type == tensor.MXFP4 {
		return tensor.Q8_0
	}
	return s.Type
}

// gptOSSTensors draws and adds a gpt-oss model's tensors.
func (g *generator) gptOSSTensors() {
	sp := g.sp
	q, kv, ff := sp.QDim(), sp.KVDim(), sp.ExpertHiddenDim
	layer := func(i int, name string) string { return fmt.Sprintf("blk.%d.%s", i, name) }
	dense := func(f func()) { // the matrices but the experts, in their type
		expertType := g.sp.Type
		g.sp.Type = sp.gptOSSDenseType()
		f()
		g.sp.Type = expertType
	}
	dense(func() { g.matrix("token_embd.weight", sp.VocabSize, sp.Dim, false) })
	for i := range sp.Layers {
		g.vector(layer(i, "attn_norm.weight"), sp.Dim, 1)
		dense(func() {
			g.matrix(layer(i, "attn_q.weight"), q, sp.Dim, false)
			g.matrix(layer(i, "attn_k.weight"), kv, sp.Dim, false)
			g.matrix(layer(i, "attn_v.weight"), kv, sp.Dim, false)
			g.matrix(layer(i, "attn_output.weight"), sp.Dim, q, false)
		})
		g.vector(layer(i, "attn_q.bias"), q, 0)
		g.vector(layer(i, "attn_k.bias"), kv, 0)
		g.vector(layer(i, "attn_v.bias"), kv, 0)
		g.vector(layer(i, "attn_output.bias"), sp.Dim, 0)
		g.vector(layer(i, "attn_sinks.weight"), sp.Heads, 0)
		g.vector(layer(i, "post_attention_norm.weight"), sp.Dim, 1)
		g.storedMatrix(layer(i, "ffn_gate_inp.weight"), sp.Experts, sp.Dim, tensor.F32, sp.Std) // llama-quantize leaves routers F32
		g.vector(layer(i, "ffn_gate_inp.bias"), sp.Experts, 0)
		g.experts(layer(i, "ffn_gate_exps.weight"), ff, sp.Dim)
		g.experts(layer(i, "ffn_down_exps.weight"), sp.Dim, ff)
		g.experts(layer(i, "ffn_up_exps.weight"), ff, sp.Dim)
		g.storedMatrix(layer(i, "ffn_gate_exps.bias"), sp.Experts, ff, tensor.F32, sp.Std)
		g.storedMatrix(layer(i, "ffn_down_exps.bias"), sp.Experts, sp.Dim, tensor.F32, sp.Std)
		g.storedMatrix(layer(i, "ffn_up_exps.bias"), sp.Experts, ff, tensor.F32, sp.Std)
	}
	g.vector("output_norm.weight", sp.Dim, 1)
	dense(func() { g.matrix("output.weight", sp.VocabSize, sp.Dim, true) })
}
