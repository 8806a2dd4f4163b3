package modelgen

import (
	"cmp"
	"fmt"
	"math"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Qwen3.5's dense models (qwen35) and mixtures of experts (qwen35moe), as
// llama.cpp's converter (conversion/qwen.py: Qwen3_5TextModel,
// Qwen3_5MoeTextModel) writes them: Gated DeltaNet
// layers and, every FullAttentionInterval-th layer, a gated attention
// layer. Keys beyond the llama family's: attention.key_length and
// value_length; rope.dimension_count (RopeDims: a quarter of the head,
// as the real models, when 0) and rope.dimension_sections (RopeSections,
// Qwen3.5's [11, 11, 10, 0] scaled to the rotated pairs when zero);
// ssm.conv_kernel, ssm.state_size, ssm.group_count, ssm.time_step_rank,
// ssm.inner_size; full_attention_interval.
//
// Every layer has attn_norm, post_attention_norm (the feed-forward's
// input norm) and the llama feed-forward (qwen35moe: the experts and a
// shared expert, moe.go). A DeltaNet layer has attn_qkv
// (the queries', keys' and values' rows), attn_gate (the output gate),
// ssm_conv1d (F32, as llama-quantize keeps it), ssm_dt.bias, ssm_a
// (−exp(A_log), negative), ssm_beta, ssm_alpha, ssm_norm and ssm_out; an
// attention layer attn_q with each head's queries followed by its gate
// (2·QDim rows), attn_k, attn_v, attn_output, attn_q_norm and
// attn_k_norm. Norm weights are drawn around 1 (the converter adds 1 to
// Qwen3.5's, which multiply by 1 + w; ssm_norm's are used as they are).

// SSM is the shape of a hybrid model's recurrent layers (the ssm.* keys):
// for qwen35 its Gated DeltaNet layers. Its zero fields are the Defaults
// of the architecture.
type SSM struct {
	ConvKernel   int `json:"conv_kernel,omitempty"`    // ssm.conv_kernel (4)
	StateSize    int `json:"state_size,omitempty"`     // ssm.state_size: a head's width (the attention head's)
	GroupCount   int `json:"group_count,omitempty"`    // ssm.group_count: query and key heads (KVHeads)
	TimeStepRank int `json:"time_step_rank,omitempty"` // ssm.time_step_rank: value heads (Heads)
	// InnerSize is ssm.inner_size, TimeStepRank·StateSize when 0.
	InnerSize int `json:"inner_size,omitempty"`
	// FullAttentionInterval is full_attention_interval: of every so many
	// layers the last attends (4 when 0).
	FullAttentionInterval int `json:"full_attention_interval,omitempty"`
}

// IsRecurrent reports whether layer l of a spec of Arch arch is recurrent
// (a Gated DeltaNet layer of qwen35) rather than attention.
func (s Spec) IsRecurrent(l int) bool {
	return qwen35Archs[s.Arch] && (l+1)%s.SSM.FullAttentionInterval != 0
}

// qwen35Archs are Qwen3.5's families: the dense models and the mixtures of
// experts, whose layers are the dense ones' with experts in place of the
// feed-forward (moe.go).
var qwen35Archs = map[string]bool{"qwen35": true, "qwen35moe": true}

// qwen35Defaults fills in a qwen35 spec's zero SSM fields and rotary
// dimensions.
func (s Spec) qwen35Defaults() Spec {
	if !qwen35Archs[s.Arch] {
		return s
	}
	m := &s.SSM
	m.ConvKernel = cmp.Or(m.ConvKernel, 4)
	if s.Heads > 0 {
		m.StateSize = cmp.Or(m.StateSize, s.HeadSize())
	}
	m.GroupCount = cmp.Or(m.GroupCount, s.KVHeads)
	m.TimeStepRank = cmp.Or(m.TimeStepRank, s.Heads)
	m.InnerSize = cmp.Or(m.InnerSize, m.TimeStepRank*m.StateSize)
	m.FullAttentionInterval = cmp.Or(m.FullAttentionInterval, 4)
	if s.Heads > 0 && s.RopeDims == 0 {
		s.RopeDims = max(2, s.HeadSize()/4/2*2)
	}
	if s.RopeSections == [4]int{} {
		// As Qwen3.5's [11, 11, 10, 0] over its 32 rotated pairs:
		// interleaved M-RoPE gives pair i to section i mod 3, and each
		// section counts its pairs.
		pairs := s.RopeDims / 2
		s.RopeSections = [4]int{(pairs + 2) / 3, (pairs + 1) / 3, pairs / 3, 0}
	}
	return s
}

// validateQwen35 checks a qwen35 spec (defaults filled in): its SSM
// fields only for qwen35, each in range.
func (s Spec) validateQwen35() error {
	m := s.SSM
	if !qwen35Archs[s.Arch] {
		if m != (SSM{}) || s.RopeSections != [4]int{} {
			return fmt.Errorf("%w: SSM and RopeSections are qwen35's and qwen35moe's", ErrSpec)
		}
		return nil
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"SSM.ConvKernel", m.ConvKernel}, {"SSM.StateSize", m.StateSize}, {"SSM.GroupCount", m.GroupCount},
		{"SSM.TimeStepRank", m.TimeStepRank}, {"SSM.InnerSize", m.InnerSize}, {"SSM.FullAttentionInterval", m.FullAttentionInterval}} {
		if f.v <= 0 || f.v > 1<<16 {
			return fmt.Errorf("%w: %s is %d, want 1..%d", ErrSpec, f.name, f.v, 1<<16)
		}
	}
	switch {
	case m.TimeStepRank%m.GroupCount != 0:
		return fmt.Errorf("%w: SSM.TimeStepRank %d is not a multiple of SSM.GroupCount %d", ErrSpec, m.TimeStepRank, m.GroupCount)
	case m.InnerSize != m.TimeStepRank*m.StateSize:
		return fmt.Errorf("%w: SSM.InnerSize %d is not SSM.TimeStepRank·SSM.StateSize", ErrSpec, m.InnerSize)
	}
	for _, v := range s.RopeSections {
		if v < 0 {
			return fmt.Errorf("%w: RopeSections %v", ErrSpec, s.RopeSections)
		}
	}
	return nil
}

// qwen35Metadata writes qwen35's keys beyond the llama family's.
func (g *generator) qwen35Metadata() {
	sp, b := g.sp, g.b
	key := func(k string) string { return sp.Arch + "." + k }
	b.Set(key("rope.dimension_count"), gguf.ValueOf(uint32(sp.RopeDims)))
	sections := make([]int32, 4)
	for i, v := range sp.RopeSections {
		sections[i] = int32(v)
	}
	b.Set(key("rope.dimension_sections"), gguf.ArrayOf(sections))
	b.Set(key("ssm.conv_kernel"), gguf.ValueOf(uint32(sp.SSM.ConvKernel)))
	b.Set(key("ssm.state_size"), gguf.ValueOf(uint32(sp.SSM.StateSize)))
	b.Set(key("ssm.group_count"), gguf.ValueOf(uint32(sp.SSM.GroupCount)))
	b.Set(key("ssm.time_step_rank"), gguf.ValueOf(uint32(sp.SSM.TimeStepRank)))
	b.Set(key("ssm.inner_size"), gguf.ValueOf(uint32(sp.SSM.InnerSize)))
	b.Set(key("full_attention_interval"), gguf.ValueOf(uint32(sp.SSM.FullAttentionInterval)))
}

// qwen35Tensors draws and adds a qwen35 model's tensors.
func (g *generator) qwen35Tensors() {
	sp := g.sp
	m := sp.SSM
	keyDim, valueDim := m.GroupCount*m.StateSize, m.InnerSize
	convDim := 2*keyDim + valueDim
	layer := func(i int, name string) string { return fmt.Sprintf("blk.%d.%s", i, name) }
	g.matrix("token_embd.weight", sp.VocabSize, sp.Dim, !sp.SeparateOutput)
	for i := range sp.Layers {
		g.vector(layer(i, "attn_norm.weight"), sp.Dim, 1)
		if sp.IsRecurrent(i) {
			g.matrix(layer(i, "attn_qkv.weight"), convDim, sp.Dim, false)
			g.matrix(layer(i, "attn_gate.weight"), valueDim, sp.Dim, false)
			g.storedMatrix(layer(i, "ssm_conv1d.weight"), convDim, m.ConvKernel, tensor.F32, 0.5)
			g.vector(layer(i, "ssm_dt.bias"), m.TimeStepRank, 0)
			g.ssmA(layer(i, "ssm_a"), m.TimeStepRank)
			g.matrix(layer(i, "ssm_beta.weight"), m.TimeStepRank, sp.Dim, false)
			g.matrix(layer(i, "ssm_alpha.weight"), m.TimeStepRank, sp.Dim, false)
			g.vector(layer(i, "ssm_norm.weight"), m.StateSize, 1)
			g.matrix(layer(i, "ssm_out.weight"), sp.Dim, valueDim, false)
		} else {
			g.matrix(layer(i, "attn_q.weight"), 2*sp.QDim(), sp.Dim, false)
			g.matrix(layer(i, "attn_k.weight"), sp.KVDim(), sp.Dim, false)
			g.matrix(layer(i, "attn_v.weight"), sp.KVDim(), sp.Dim, false)
			g.matrix(layer(i, "attn_output.weight"), sp.Dim, sp.QDim(), false)
			g.vector(layer(i, "attn_q_norm.weight"), sp.HeadSize(), 1)
			g.vector(layer(i, "attn_k_norm.weight"), sp.HeadSize(), 1)
		}
		g.vector(layer(i, "post_attention_norm.weight"), sp.Dim, 1)
		if moeArchs[sp.Arch] {
			g.moeFFN(i)
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

// ssmA adds a DeltaNet layer's A = −exp(A_log) per value head, A_log
// drawn from N(0, 0.5²): decays of e^(−0.4)…e^(−2.7) per unit of the
// softplus.
func (g *generator) ssmA(name string, n int) {
	if g.headerOnly {
		g.emit(name, tensor.F32, []uint64{uint64(n)}, nil)
		return
	}
	a := g.random(n, 0, 0.5)
	for i, v := range a {
		a[i] = -float32(math.Exp(float64(v)))
	}
	g.emit(name, tensor.F32, []uint64{uint64(n)}, f32Bytes(a))
}
