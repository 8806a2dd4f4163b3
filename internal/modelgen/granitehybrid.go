package modelgen

import (
	"fmt"
	"math"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Granite 4.0 hybrid files (granitehybrid), as llama.cpp's converter
// (GraniteHybridModel: Mamba2Model and GraniteMoeModel) writes a dense
// one: Granite's multipliers (the Family fields that are not 0; none is
// required), attention.head_count_kv as an array with 0 for each Mamba-2
// layer, the ssm.* keys (conv_kernel, inner_size = 2·Dim, state_size,
// time_step_rank = the Mamba-2 heads, group_count) and
// rope.scaling.finetuned false unless Rope (Granite 4 rotates nothing).
// Every layer has attn_norm and the SwiGLU feed-forward; an attention
// layer llama's q, k, v and output, a Mamba-2 layer ssm_in, ssm_conv1d
// (weight and bias), ssm_dt.bias, ssm_a (A = −exp(A_log), drawn over
// −1..−8), ssm_d, ssm_norm (by groups) and ssm_out, all but ssm_in and
// ssm_out F32 as the converter and llama-quantize keep them. The time
// steps' biases are drawn so that softplus gives steps of about 0.02 to
// 0.5, as Mamba-2's initialisation does, so that the state both decays
// and carries several tokens.
//
// With MoE (granite-4.0-h-tiny's kind), every layer's feed-forward is a
// mixture of experts instead, as GraniteMoeModel writes it: expert_count,
// expert_used_count, each expert HiddenDim wide (feed_forward_length:
// MoE.ExpertHiddenDim must be 0 or HiddenDim) and, with
// MoE.SharedHiddenDim, expert_shared_feed_forward_length; in each layer
// the router ffn_gate_inp (F32), the stacked ffn_gate_exps, ffn_down_exps
// and ffn_up_exps, and a shared expert's ffn_gate_shexp, ffn_down_shexp
// and ffn_up_shexp, which nothing gates.

// GraniteHybrid is a granitehybrid model's Mamba-2 shape and layout.
type GraniteHybrid struct {
	// Attention lists the layers that attend; the others are Mamba-2.
	Attention []int `json:"attention"`
	// ConvKernel, StateSize, Groups and Heads are ssm.conv_kernel,
	// ssm.state_size, ssm.group_count and ssm.time_step_rank (the heads,
	// which divide 2·Dim and which the groups divide).
	ConvKernel int `json:"conv_kernel"`
	StateSize  int `json:"state_size"`
	Groups     int `json:"groups"`
	Heads      int `json:"heads"`
	// Rope writes rope.scaling.finetuned true: the attention layers
	// rotate (Bamba's); false, as Granite 4's files say, they do not.
	Rope bool `json:"rope,omitempty"`
}

// attends reports whether layer l is an attention layer.
func (h *GraniteHybrid) attends(l int) bool {
	for _, a := range h.Attention {
		if a == l {
			return true
		}
	}
	return false
}

// validateGraniteHybrid checks a granitehybrid spec's Mamba-2 shape.
func (s Spec) validateGraniteHybrid() error {
	h := s.Hybrid
	switch {
	case s.Arch != "granitehybrid" && h != nil:
		return fmt.Errorf("%w: Hybrid is granitehybrid's", ErrSpec)
	case s.Arch != "granitehybrid":
		return nil
	case h == nil:
		return fmt.Errorf("%w: a granitehybrid model needs Hybrid (its Mamba-2 shape)", ErrSpec)
	case h.ConvKernel < 1 || h.StateSize < 1 || h.Groups < 1 || h.Heads < 1 || h.ConvKernel > 64 || h.StateSize > 1024:
		return fmt.Errorf("%w: Hybrid's ConvKernel %d (1..64), StateSize %d (1..1024), Groups %d and Heads %d must be positive", ErrSpec, h.ConvKernel, h.StateSize, h.Groups, h.Heads)
	case (2*s.Dim)%h.Heads != 0 || h.Heads%h.Groups != 0:
		return fmt.Errorf("%w: Hybrid's Heads %d must divide 2·Dim %d and Groups %d the heads", ErrSpec, h.Heads, 2*s.Dim, h.Groups)
	case len(h.Attention) == 0:
		return fmt.Errorf("%w: Hybrid.Attention lists no layer (llama.cpp's hybrid needs one)", ErrSpec)
	}
	for _, l := range h.Attention {
		if l < 0 || l >= s.Layers {
			return fmt.Errorf("%w: Hybrid.Attention lists layer %d of %d", ErrSpec, l, s.Layers)
		}
	}
	return nil
}

// validateGraniteHybridMoE checks a granitehybrid spec's experts (none:
// a dense model).
func (s Spec) validateGraniteHybridMoE() error {
	m := s.MoE
	switch {
	case m == MoE{}:
		return nil
	case m.Experts < 1 || m.Experts > 1024 || m.ExpertsUsed < 1 || m.ExpertsUsed > m.Experts:
		return fmt.Errorf("%w: %d experts (1..1024), %d used (1..experts)", ErrSpec, m.Experts, m.ExpertsUsed)
	case m.ExpertHiddenDim != 0 && m.ExpertHiddenDim != s.HiddenDim:
		return fmt.Errorf("%w: a granitehybrid expert is HiddenDim %d wide (feed_forward_length), not ExpertHiddenDim %d", ErrSpec, s.HiddenDim, m.ExpertHiddenDim)
	case m.SharedHiddenDim < 0 || m.SharedHiddenDim > maxElements/max(s.Dim, 1) || s.HiddenDim > maxElements/m.Experts/max(s.Dim, 1):
		return fmt.Errorf("%w: SharedHiddenDim %d, or %d experts of %d, out of range", ErrSpec, m.SharedHiddenDim, m.Experts, s.HiddenDim)
	}
	return nil
}

// graniteHybridMetadata writes the hybrid's keys.
func (g *generator) graniteHybridMetadata() {
	sp, b := g.sp, g.b
	h := sp.Hybrid
	key := func(k string) string { return sp.Arch + "." + k }
	kv := make([]int32, sp.Layers)
	for l := range kv {
		if h.attends(l) {
			kv[l] = int32(sp.KVHeads)
		}
	}
	b.Set(key("attention.head_count_kv"), gguf.ArrayOf(kv))
	b.Set(key("ssm.conv_kernel"), gguf.ValueOf(uint32(h.ConvKernel)))
	b.Set(key("ssm.state_size"), gguf.ValueOf(uint32(h.StateSize)))
	b.Set(key("ssm.group_count"), gguf.ValueOf(uint32(h.Groups)))
	b.Set(key("ssm.inner_size"), gguf.ValueOf(uint32(2*sp.Dim)))
	b.Set(key("ssm.time_step_rank"), gguf.ValueOf(uint32(h.Heads)))
	b.Set(key("rope.scaling.finetuned"), gguf.ValueOf(h.Rope))
	b.Set(key("vocab_size"), gguf.ValueOf(uint32(sp.VocabSize)))
	if m := sp.MoE; m.Experts > 0 {
		b.Set(key("expert_count"), gguf.ValueOf(uint32(m.Experts)))
		b.Set(key("expert_used_count"), gguf.ValueOf(uint32(m.ExpertsUsed)))
		if m.SharedHiddenDim > 0 {
			b.Set(key("expert_shared_feed_forward_length"), gguf.ValueOf(uint32(m.SharedHiddenDim)))
		}
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

// graniteHybridTensors draws and adds the hybrid's tensors, in llama.cpp's
// order.
func (g *generator) graniteHybridTensors() {
	sp := g.sp
	h := sp.Hybrid
	q, kv := sp.QDim(), sp.KVDim()
	inner := 2 * sp.Dim
	channels := inner + 2*h.Groups*h.StateSize
	layer := func(i int, name string) string { return fmt.Sprintf("blk.%d.%s", i, name) }
	f32 := func(name string, vals []float32, dims ...uint64) { // F32 whatever the Spec's type
		var data []byte
		if !g.headerOnly {
			data = f32Bytes(vals)
		}
		g.emit(name, tensor.F32, dims, data)
	}
	g.matrix("token_embd.weight", sp.VocabSize, sp.Dim, !sp.SeparateOutput)
	for i := range sp.Layers {
		g.vector(layer(i, "attn_norm.weight"), sp.Dim, 1)
		if h.attends(i) {
			g.matrix(layer(i, "attn_q.weight"), q, sp.Dim, false)
			g.matrix(layer(i, "attn_k.weight"), kv, sp.Dim, false)
			g.matrix(layer(i, "attn_v.weight"), kv, sp.Dim, false)
			g.matrix(layer(i, "attn_output.weight"), sp.Dim, q, false)
		} else {
			g.matrix(layer(i, "ssm_in.weight"), inner+channels+h.Heads, sp.Dim, false)
			f32(layer(i, "ssm_conv1d.weight"), g.random(channels*h.ConvKernel, 0, 0.5), uint64(h.ConvKernel), uint64(channels))
			g.vector(layer(i, "ssm_conv1d.bias"), channels, 0)
			dtBias, a := make([]float32, h.Heads), make([]float32, h.Heads)
			for j := range h.Heads {
				step := math.Exp(math.Log(0.02) + g.rng.Float64()*math.Log(25)) // 0.02..0.5
				dtBias[j] = float32(math.Log(math.Expm1(step)))                 // softplus⁻¹
				a[j] = float32(-math.Exp(g.rng.Float64() * math.Log(8)))        // −1..−8
			}
			f32(layer(i, "ssm_dt.bias"), dtBias, uint64(h.Heads))
			f32(layer(i, "ssm_a"), a, 1, uint64(h.Heads))
			f32(layer(i, "ssm_d"), g.random(h.Heads, 1, 0.2), 1, uint64(h.Heads))
			f32(layer(i, "ssm_norm.weight"), g.random(inner, 1, sp.Std), uint64(inner/h.Groups), uint64(h.Groups))
			g.matrix(layer(i, "ssm_out.weight"), sp.Dim, inner, false)
		}
		g.vector(layer(i, "ffn_norm.weight"), sp.Dim, 1)
		if m := sp.MoE; m.Experts > 0 {
			g.storedMatrix(layer(i, "ffn_gate_inp.weight"), m.Experts, sp.Dim, tensor.F32, sp.Std) // llama-quantize leaves routers F32
			g.experts(layer(i, "ffn_gate_exps.weight"), sp.HiddenDim, sp.Dim)
			g.experts(layer(i, "ffn_down_exps.weight"), sp.Dim, sp.HiddenDim)
			g.experts(layer(i, "ffn_up_exps.weight"), sp.HiddenDim, sp.Dim)
			if m.SharedHiddenDim > 0 {
				g.matrix(layer(i, "ffn_gate_shexp.weight"), m.SharedHiddenDim, sp.Dim, false)
				g.matrix(layer(i, "ffn_down_shexp.weight"), sp.Dim, m.SharedHiddenDim, false)
				g.matrix(layer(i, "ffn_up_shexp.weight"), m.SharedHiddenDim, sp.Dim, false)
			}
			continue
		}
		g.matrix(layer(i, "ffn_gate.weight"), sp.HiddenDim, sp.Dim, false)
		g.matrix(layer(i, "ffn_down.weight"), sp.Dim, sp.HiddenDim, false)
		g.matrix(layer(i, "ffn_up.weight"), sp.HiddenDim, sp.Dim, false)
	}
	g.vector("output_norm.weight", sp.Dim, 1)
	if sp.SeparateOutput {
		g.matrix("output.weight", sp.VocabSize, sp.Dim, true)
	}
}
