package modelgen

import (
	"cmp"
	"fmt"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Mixtures of experts, as llama.cpp's converter (conversion/qwen.py:
// Qwen2MoeModel, Qwen3MoeModel) writes them: expert_count,
// expert_used_count and expert_feed_forward_length; each layer's dense
// feed-forward replaced by the router blk.N.ffn_gate_inp (always F32, as
// llama-quantize leaves it) and the experts' matrices stacked in 3-D
// tensors, blk.N.ffn_gate_exps, ffn_down_exps and ffn_up_exps (GGUF dims
// [cols, rows, experts]). qwen3moe is qwen3's attention with them;
// qwen2moe qwen2's (q/k/v biases), with a shared expert beside them:
// expert_shared_feed_forward_length, and in each layer ffn_gate_inp_shexp
// (a vector of Dim), ffn_gate_shexp, ffn_down_shexp and ffn_up_shexp.

// MoE is a mixture of experts' shape (qwen3moe, qwen2moe); zero for the other
// families.
type MoE struct {
	// Experts is expert_count, the experts a router chooses among;
	// ExpertsUsed is expert_used_count, how many each token takes.
	Experts     int `json:"experts,omitempty"`
	ExpertsUsed int `json:"experts_used,omitempty"`
	// ExpertHiddenDim is expert_feed_forward_length, one expert's inner
	// width.
	ExpertHiddenDim int `json:"expert_hidden_dim,omitempty"`
	// SharedHiddenDim is qwen2moe's expert_shared_feed_forward_length,
	// its shared expert's inner width (required for qwen2moe).
	SharedHiddenDim int `json:"shared_hidden_dim,omitempty"`
}

// moeArchs are the families with experts (in every layer but lfm2moe's
// leading dense ones).
var moeArchs = map[string]bool{"qwen3moe": true, "qwen2moe": true, gptOSSArch: true, "qwen35moe": true, "lfm2moe": true}

// sharedExpertArchs are those of moeArchs with a shared expert beside the
// routed ones.
var sharedExpertArchs = map[string]bool{"qwen2moe": true, "qwen35moe": true}

// hasExperts reports whether the spec's model has experts: a family of
// moeArchs, or a gemma4 whose MoE says how many (gemma4.go).
func (s Spec) hasExperts() bool {
	return moeArchs[s.Arch] || (s.Arch == "gemma4" && s.MoE != MoE{})
}

// validateMoE checks the MoE fields against the architecture.
func (s Spec) validateMoE() error {
	m := s.MoE
	switch {
	case s.Arch == "granitehybrid":
		return s.validateGraniteHybridMoE()
	case !s.hasExperts() && m != MoE{}:
		return fmt.Errorf("%w: %s has no experts", ErrSpec, s.Arch)
	case !s.hasExperts():
		return nil
	case m.Experts < 1 || m.Experts > 1024 || m.ExpertsUsed < 1 || m.ExpertsUsed > m.Experts:
		return fmt.Errorf("%w: %d experts (1..1024), %d used (1..experts)", ErrSpec, m.Experts, m.ExpertsUsed)
	case m.ExpertHiddenDim < 1 || m.ExpertHiddenDim > maxElements/m.Experts/max(s.Dim, 1):
		return fmt.Errorf("%w: ExpertHiddenDim is %d, want 1..%d", ErrSpec, m.ExpertHiddenDim, maxElements/m.Experts/max(s.Dim, 1))
	}
	shared := sharedExpertArchs[s.Arch]
	if shared != (m.SharedHiddenDim > 0) || m.SharedHiddenDim > maxElements/max(s.Dim, 1) {
		return fmt.Errorf("%w: SharedHiddenDim %d: %s needs one of 1..%d, the others none", ErrSpec, m.SharedHiddenDim, s.Arch, maxElements/max(s.Dim, 1))
	}
	if s.Arch == "qwen2moe" && (!s.SeparateOutput || s.HeadDim != 0) {
		return fmt.Errorf("%w: qwen2moe has an output matrix of its own (SeparateOutput) and heads of Dim/Heads", ErrSpec)
	}
	for _, cols := range []int{s.Dim, m.ExpertHiddenDim, max(m.SharedHiddenDim, s.Dim)} {
		if _, err := s.MatrixType(cols); err != nil {
			return err
		}
	}
	return nil
}

// moeMetadata writes a mixture of experts' keys.
func (g *generator) moeMetadata() {
	sp, b := g.sp, g.b
	if !sp.hasExperts() {
		return
	}
	key := func(k string) string { return sp.Arch + "." + k }
	b.Set(key("expert_count"), gguf.ValueOf(uint32(sp.Experts)))
	b.Set(key("expert_used_count"), gguf.ValueOf(uint32(sp.ExpertsUsed)))
	b.Set(key("expert_feed_forward_length"), gguf.ValueOf(uint32(sp.ExpertHiddenDim)))
	if sp.SharedHiddenDim > 0 {
		b.Set(key("expert_shared_feed_forward_length"), gguf.ValueOf(uint32(sp.SharedHiddenDim)))
	}
}

// moeFFN draws and adds layer i's mixture of experts, in llama.cpp's
// order: the router, then the experts' gate, down and up matrices, then
// a shared expert's gate weights (ffn_gate_inp_shexp, a vector) and its
// gate, down and up matrices.
func (g *generator) moeFFN(i int) {
	sp := g.sp
	name := func(n string) string { return fmt.Sprintf("blk.%d.%s", i, n) }
	g.storedMatrix(name("ffn_gate_inp.weight"), sp.Experts, sp.Dim, tensor.F32, sp.Std) // llama-quantize leaves routers F32
	g.experts(name("ffn_gate_exps.weight"), sp.ExpertHiddenDim, sp.Dim)
	g.experts(name("ffn_down_exps.weight"), sp.Dim, sp.ExpertHiddenDim)
	g.experts(name("ffn_up_exps.weight"), sp.ExpertHiddenDim, sp.Dim)
	if sp.SharedHiddenDim > 0 {
		g.vector(name("ffn_gate_inp_shexp.weight"), sp.Dim, 0)
		g.matrix(name("ffn_gate_shexp.weight"), sp.SharedHiddenDim, sp.Dim, false)
		g.matrix(name("ffn_down_shexp.weight"), sp.Dim, sp.SharedHiddenDim, false)
		g.matrix(name("ffn_up_shexp.weight"), sp.SharedHiddenDim, sp.Dim, false)
	}
}

// experts adds a stack of Experts rows×cols matrices (ggml dims: cols,
// rows, experts) in the Spec's type.
func (g *generator) experts(name string, rows, cols int) {
	t, err := g.sp.MatrixType(cols)
	if err != nil {
		g.err = cmp.Or(g.err, fmt.Errorf("%s: %w", name, err))
		return
	}
	dims := []uint64{uint64(cols), uint64(rows), uint64(g.sp.Experts)}
	if g.headerOnly {
		g.emit(name, t, dims, nil)
		return
	}
	n := rows * g.sp.Experts
	var data []byte
	if g.sp.Fast && (t == tensor.Q4_0 || t == tensor.Q8_0) {
		data = g.fastQuants(t, n, cols, g.sp.Std, false)
	} else if data, err = encode(t, n, cols, g.random(n*cols, 0, g.sp.Std)); err != nil {
		g.err = cmp.Or(g.err, fmt.Errorf("%s: %w", name, err))
		return
	}
	g.emit(name, t, dims, data)
}
