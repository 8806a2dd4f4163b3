package engine

import (
	"fmt"
	"math"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Mixtures of experts. A layer whose feed-forward is FFNMoE has, instead
// of one gated feed-forward, Experts of them (each its own gate, up and
// down matrices, ExpertHiddenDim wide) and a router, a matrix of one row
// per expert. For each token, as llama.cpp's build_moe_ffn computes it:
//
//  1. the router's logits, router·x, become probabilities as the layer's
//     Gating says (GatingSoftmax: a softmax over every expert);
//  2. the Used most probable experts are chosen, most probable first
//     (ties: the lower expert; llama.cpp's std::sort leaves ties in no
//     defined order), and their probabilities are the weights,
//     renormalised to sum 1 where NormTopK says (the sum, in float64 and
//     rounded, clamped below at 2^-14, as ggml_clamp does it) and scaled
//     by WeightsScale where it is neither 0 nor 1;
//  3. each chosen expert computes its feed-forward, down(act(gate·x) ⊙
//     up·x), and the layer's output is their sum weighted, each product
//     rounded, in the order chosen: w₀·e₀ + w₁·e₁ + …;
//  4. where the layer has a shared expert (Shared), one more feed-forward
//     that every token takes, gated by sigmoid(x·SharedGate) (without
//     SharedGate, granitehybrid's, not gated), is added.
//
// Gemma 4's layers (moe_dense.go) route on an input of the router's own
// (RouterNorm), scale each expert's output (ffn_down_exps.scale), stack
// each expert's gate and up in one tensor, and keep their dense
// feed-forward beside the experts (Dense).
//
// The expert matrices are the file's 3-D tensors, each one *tensor.Matrix
// of Experts·rows rows viewing the file's bytes; each expert's rows are a
// view of it (expertWeights), so nothing is copied and a token reads only
// the bytes of its chosen experts. A block of prompt tokens goes expert by
// expert: each expert that some of the block's tokens chose multiplies
// all of them at once (tensor.MatMuls over their gathered rows), so its
// matrices are read once for the block; the products give MatVecs' bits,
// and the weighted sum runs token by token in the chosen order, so a block
// computes exactly what its tokens one by one do.

// Gating is how a mixture of experts' router turns its logits into the
// probabilities the experts are chosen by and weighted with.
type Gating uint8

const (
	// GatingSoftmax is a softmax over every expert's logit; the chosen
	// experts' probabilities are their weights (qwen3moe, qwen2moe).
	GatingSoftmax Gating = iota
	// GatingSoftmaxTopK chooses the experts of the largest logits and
	// weights them by a softmax over the chosen experts' logits only
	// (gpt-oss: llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT).
	GatingSoftmaxTopK
	// GatingSigmoid is each expert's sigmoid, on its own (lfm2moe): the
	// chosen experts' sigmoids are their weights.
	GatingSigmoid
)

// MoESpec is a mixture of experts' recipe (a layer whose FFN is FFNMoE).
type MoESpec struct {
	// Experts is how many experts the router chooses among, Used how many
	// it chooses for each token.
	Experts int `json:"experts"`
	Used    int `json:"used"`
	// Gating is how the router's logits become probabilities.
	Gating Gating `json:"gating"`
	// NormTopK renormalises the chosen experts' weights to sum 1
	// (qwen3moe's norm_topk_prob).
	NormTopK bool `json:"norm_top_k,omitempty"`
	// WeightsScale multiplies the chosen experts' weights; 0 (or 1): not
	// scaled.
	WeightsScale float32 `json:"weights_scale,omitempty"`
	// Shared says a shared expert runs beside the routed ones, gated by
	// sigmoid(x·ffn_gate_inp_shexp) (qwen2moe, qwen35moe).
	Shared bool `json:"shared,omitempty"`
	// Activation is every expert's gated unit: FFNSwiGLU (the zero value),
	// FFNGeGLU or gpt-oss's FFNSwiGLUOAI.
	Activation FFN `json:"activation"`
	// Dense says the layer's dense feed-forward (ffn_gate, ffn_up,
	// ffn_down, Activation's gated unit) runs beside the experts on the
	// layer's normalised input, while the experts read the residual
	// stream normalised by a norm of their own (pre_ffw_norm_2); each
	// branch's output is normalised on its own (post_ffw_norm_1 the
	// dense one's, post_ffw_norm_2 the experts') and the two are added
	// (gemma4, whose dense feed-forward is its experts' shared one:
	// moe_dense.go).
	Dense bool `json:"dense,omitempty"`
	// RouterNorm says the router reads the residual stream normalised
	// (RMSNorm without weights), scaled by 1/√dim and by a weight per
	// channel (ffn_gate_inp.scale), rather than the experts' input
	// (gemma4: moe_dense.go).
	RouterNorm bool `json:"router_norm,omitempty"`
}

// maxExperts bounds Experts, as llama.cpp's LLAMA_MAX_EXPERTS does.
const maxExperts = 1024

// expertWeights are one expert's matrices: views of its rows of the
// layer's stacked matrices.
type expertWeights struct {
	gate, up, down *tensor.Matrix // (expertHidden, dim), (expertHidden, dim), (dim, expertHidden)
	// gateBias, upBias and downBias are the expert's rows of the layer's
	// expert biases (gpt-oss: moe_bias.go), nil where it has none.
	gateBias, upBias, downBias []float32 // (expertHidden), (expertHidden), (dim)
}

// keyExpertCount is the hyper-parameter that says a model has experts.
const keyExpertCount = "expert_count"

// moeKeys are a mixture of experts' hyper-parameters, after the llama
// family's (llamaKeys): how many experts, how many each token takes, and
// one expert's width (absent: feed_forward_length / expert_used_count, as
// llama.cpp).
var moeKeys = []configKey{
	{key: keyExpertCount, int: func(p *hyperParams) *int { return &p.Experts }},
	{key: "expert_used_count", int: func(p *hyperParams) *int { return &p.ExpertsUsed }},
	{key: "expert_feed_forward_length", int: func(p *hyperParams) *int { return &p.ExpertHiddenDim },
		defaultInt: func(c Config) int {
			if c.ExpertsUsed <= 0 {
				return 0 // validate says what is wrong
			}
			return c.HiddenDim / c.ExpertsUsed
		}},
}

// sharedExpertKeys is the shared expert's width (absent:
// feed_forward_length, as llama.cpp).
var sharedExpertKeys = []configKey{
	{key: "expert_shared_feed_forward_length", int: func(p *hyperParams) *int { return &p.SharedHiddenDim },
		defaultInt: func(c Config) int { return c.HiddenDim }},
}

// noSplitExperts is why a model with a mixture of experts does not split
// across workers: a split divides a layer's rows, and an expert's rows
// are not divided yet.
const noSplitExperts = "its layers' mixtures of experts are not divided among workers yet"

// readsKey reports whether the architecture reads the hyper-parameter key.
func (a *architecture) readsKey(key string) bool {
	for _, k := range a.keys {
		if k.key == key {
			return true
		}
	}
	return false
}

// moeTensors are a mixture of experts' tensors in each layer: the router
// and the experts' stacked gate, up and down matrices, and with shared the
// shared expert's matrices and its gate's weights. No part of a split
// model holds them (the families refuse to split).
func moeTensors(shared bool) []tensorSpec {
	t := []tensorSpec{
		{name: "blk.%d.ffn_gate_inp.weight", rows: dimExperts, cols: dimModel, at: slotRouter},
		{name: "blk.%d.ffn_gate_exps.weight", rows: dimExpertFF, cols: dimModel, experts: true, at: slotWGateExps},
		{name: "blk.%d.ffn_down_exps.weight", rows: dimModel, cols: dimExpertFF, experts: true, at: slotWDownExps},
		{name: "blk.%d.ffn_up_exps.weight", rows: dimExpertFF, cols: dimModel, experts: true, at: slotWUpExps},
	}
	if shared {
		t = append(t,
			tensorSpec{name: "blk.%d.ffn_gate_inp_shexp.weight", rows: dimModel, at: slotSharedGate},
			tensorSpec{name: "blk.%d.ffn_gate_shexp.weight", rows: dimSharedFF, cols: dimModel, at: slotWGateShared},
			tensorSpec{name: "blk.%d.ffn_down_shexp.weight", rows: dimModel, cols: dimSharedFF, at: slotWDownShared},
			tensorSpec{name: "blk.%d.ffn_up_shexp.weight", rows: dimSharedFF, cols: dimModel, at: slotWUpShared})
	}
	return t
}

// moeLayer sets what a layer of a mixture of experts takes from the
// model's hyper-parameters: how many experts, and how many each token
// takes.
func (c Config) moeLayer(s *LayerSpec) {
	if s.FFN == FFNMoE {
		s.MoE.Experts, s.MoE.Used = c.Experts, c.ExpertsUsed
	}
}

// ggufExperts views a 3-D tensor of experts (GGUF dims [cols, rows,
// experts]) as one matrix of experts·rows rows of cols.
func ggufExperts(ti gguf.TensorInfo, c Config) (*tensor.Matrix, error) {
	if len(ti.Dims) != 3 {
		return nil, fmt.Errorf("%w: tensor %s has %d dimensions, want 3 (columns, rows, experts)", ErrFormat, ti.Name, len(ti.Dims))
	}
	if ti.Dims[2] != uint64(c.Experts) {
		return nil, fmt.Errorf("%w: tensor %s holds %d experts, expert_count says %d", ErrFormat, ti.Name, ti.Dims[2], c.Experts)
	}
	if !tensor.Supported(ti.Type) {
		return nil, fmt.Errorf("%w: tensor %s has type %v, which this engine cannot compute with", ErrUnsupported, ti.Name, ti.Type)
	}
	if ti.Dims[1] > maxDimension || ti.Dims[0] > maxDimension {
		return nil, fmt.Errorf("%w: tensor %s is %d×%d per expert", ErrFormat, ti.Name, ti.Dims[1], ti.Dims[0])
	}
	m, err := tensor.NewMatrix(ti.Type, int(ti.Dims[1]*ti.Dims[2]), int(ti.Dims[0]), ti.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: tensor %s: %w", ErrFormat, ti.Name, err)
	}
	return m, nil
}

// viewExperts makes each layer's views of its experts' rows of the
// stacked matrices (one per expert: as many as the router has rows). The
// load makes them; pack makes them again once it has packed the stacks,
// whose experts are then whole groups of packed rows.
func (w *modelWeights) viewExperts() error {
	for l := range w.Layers {
		lw := &w.Layers[l]
		if lw.Router == nil || (lw.WUpExps == nil && lw.WGateUpExps == nil) || lw.WDownExps == nil {
			continue
		}
		n := lw.Router.Rows
		if lw.experts == nil {
			lw.experts = make([]expertWeights, n)
		}
		for e := range lw.experts {
			x := &lw.experts[e]
			var err error
			for _, v := range []struct {
				out   **tensor.Matrix
				stack *tensor.Matrix
			}{{&x.gate, lw.WGateExps}, {&x.up, lw.WUpExps}, {&x.down, lw.WDownExps}} {
				if v.stack == nil || err != nil {
					continue
				}
				rows := v.stack.Rows / n
				*v.out, err = v.stack.Slice(e*rows, (e+1)*rows)
			}
			if err == nil && lw.WGateUpExps != nil {
				x.gate, x.up, err = gateUpOf(lw.WGateUpExps, n, e)
			}
			if err == nil {
				err = lw.viewExpertBiases(e, x)
			}
			if err != nil {
				return fmt.Errorf("%w: layer %d's expert %d: %w", ErrFormat, l, e, err)
			}
		}
	}
	return nil
}

// packsExperts reports whether pack may pack m, the stacked matrix of
// layer l's experts t: where each expert is whole groups of packed rows,
// so that its view slices the packed layout (tensor.Matrix.Slice).
func (w *modelWeights) packsExperts(t tensorRef, m *tensor.Matrix) bool {
	n := len(w.Layers[t.layer].experts)
	if t.spec.at == slotWGateUpExps {
		n *= 2 // each expert's gate and up are views of their own
	}
	return n > 0 && (m.Rows/n)%tensor.PackedGroupRows == 0
}

// validateExperts checks the hyper-parameters of a mixture of experts.
func (c Config) validateExperts() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"expert_count", c.Experts}, {"expert_used_count", c.ExpertsUsed},
		{"expert_feed_forward_length", c.ExpertHiddenDim}, {"expert_shared_feed_forward_length", c.SharedHiddenDim}} {
		if f.v < 0 || f.v > maxDimension {
			return fmt.Errorf("%w: %s = %d is out of range (0..%d)", ErrFormat, f.name, f.v, maxDimension)
		}
	}
	switch {
	case c.Experts > maxExperts:
		return fmt.Errorf("%w: expert_count = %d is more than %d", ErrFormat, c.Experts, maxExperts)
	case c.Experts == 0 && c.ExpertsUsed != 0:
		return fmt.Errorf("%w: expert_used_count = %d without experts", ErrFormat, c.ExpertsUsed)
	case c.Experts > 0 && (c.ExpertsUsed < 1 || c.ExpertsUsed > c.Experts):
		return fmt.Errorf("%w: expert_used_count = %d, want 1..%d (expert_count)", ErrFormat, c.ExpertsUsed, c.Experts)
	case c.Experts > 0 && c.ExpertHiddenDim < 1:
		return fmt.Errorf("%w: expert_feed_forward_length = %d, want at least 1", ErrFormat, c.ExpertHiddenDim)
	}
	return nil
}

// validateMoE checks layer l's mixture of experts, s.MoE: none unless
// its feed-forward is FFNMoE, and then one of the model's experts.
func (c Config) validateMoE(l int, s LayerSpec) error {
	m := s.MoE
	if s.FFN != FFNMoE {
		if m != (MoESpec{}) {
			return fmt.Errorf("%w: layer %d: a mixture of experts' recipe on a %v feed-forward", ErrFormat, l, s.FFN)
		}
		return nil
	}
	switch {
	case m.Experts != c.Experts || m.Experts < 1:
		return fmt.Errorf("%w: layer %d: %d experts, the model has %d", ErrFormat, l, m.Experts, c.Experts)
	case m.Used < 1 || m.Used > m.Experts:
		return fmt.Errorf("%w: layer %d: %d experts used of %d", ErrFormat, l, m.Used, m.Experts)
	case m.Gating > GatingSigmoid || (m.Activation != FFNSwiGLU && m.Activation != FFNGeGLU && m.Activation != FFNSwiGLUOAI):
		return fmt.Errorf("%w: layer %d: experts' gating %v or activation %v unknown", ErrUnsupported, l, m.Gating, m.Activation)
	case !(m.WeightsScale >= 0) || math.IsInf(float64(m.WeightsScale), 0):
		return fmt.Errorf("%w: layer %d: experts' weights scale %v must be finite and not negative (0: none)", ErrFormat, l, m.WeightsScale)
	case m.Shared && c.SharedHiddenDim < 1:
		return fmt.Errorf("%w: layer %d: a shared expert of width %d", ErrFormat, l, c.SharedHiddenDim)
	}
	return nil
}

// hasExperts reports whether some layer of c is a mixture of experts.
func (c Config) hasExperts() bool {
	for _, s := range c.LayerSpecs {
		if s.FFN == FFNMoE {
			return true
		}
	}
	return false
}

var gatingNames = [...]string{GatingSoftmax: "softmax", GatingSoftmaxTopK: "softmax_top_k", GatingSigmoid: "sigmoid"}

// String names the gating: "softmax", "softmax_top_k" or "sigmoid".
func (g Gating) String() string { return name(gatingNames[:], g) }

// MarshalText is the gating's name.
func (g Gating) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// moeScratch is a session's scratch for its mixtures of experts, for
// passes of up to tokens tokens, allocated once (NewSession).
type moeScratch struct {
	probs   []float32 // (tokens, experts): the router's logits, then their probabilities
	chosen  []int32   // (tokens, used): each token's experts, in the order chosen
	weights []float32 // (tokens, used): their weights
	outs    []float32 // (tokens, used, dim): each chosen expert's output
	// The pass grouped by expert: how many of its (token, slot) pairs
	// chose each expert, where each expert's start in slots, and the
	// pairs (token·used + slot), expert after expert, tokens in order.
	count, start []int            // (experts)
	slots        []int32          // (tokens·used)
	x            []float32        // (tokens, dim): the rows of an expert's tokens, gathered
	gate, up     []float32        // (tokens, max(expertHidden, sharedHidden))
	down         []float32        // (tokens, dim): an expert's outputs for its tokens
	sharedGate   []float32        // (tokens): the shared expert's gate
	products     []tensor.Product // (2·used): one token's chosen experts' gate and up products
	// in and router are the experts' and the router's inputs where a
	// layer's recipe gives them their own (MoESpec.Dense, RouterNorm:
	// moe_dense.go); empty for a model without such layers.
	in, router []float32 // (tokens, dim), (tokens, dim)
}

// moeScratchBytes is what newMoEScratch allocates for passes of up to
// tokens tokens through c's mixtures of experts (0 without experts).
func (c Config) moeScratchBytes(tokens int) int64 {
	if c.Experts == 0 {
		return 0
	}
	n, k, dim := int64(tokens), int64(c.ExpertsUsed), int64(c.Dim)
	floats := n*int64(c.Experts) + 3*n*k + n*k*dim + 2*n*dim + 2*max(n, k)*int64(max(c.ExpertHiddenDim, c.SharedHiddenDim)) + n
	if c.moeOwnInputs() {
		floats += 2 * n * dim
	}
	return 4*floats + 16*int64(c.Experts)
}

// newMoEScratch allocates the scratch of passes of up to tokens tokens
// through c's mixtures of experts.
func newMoEScratch(c Config, tokens int) *moeScratch {
	hidden := max(c.ExpertHiddenDim, c.SharedHiddenDim)
	rows := max(tokens, c.ExpertsUsed) // a block's tokens, or one token's experts
	sc := &moeScratch{
		probs: make([]float32, tokens*c.Experts), chosen: make([]int32, tokens*c.ExpertsUsed),
		weights: make([]float32, tokens*c.ExpertsUsed), outs: make([]float32, tokens*c.ExpertsUsed*c.Dim),
		count: make([]int, c.Experts), start: make([]int, c.Experts), slots: make([]int32, tokens*c.ExpertsUsed),
		x: make([]float32, tokens*c.Dim), gate: make([]float32, rows*hidden), up: make([]float32, rows*hidden),
		down: make([]float32, tokens*c.Dim), sharedGate: make([]float32, tokens), products: make([]tensor.Product, 0, 2*c.ExpertsUsed),
	}
	if c.moeOwnInputs() {
		sc.in, sc.router = make([]float32, tokens*c.Dim), make([]float32, tokens*c.Dim)
	}
	return sc
}

// moeBlock is the feed-forward of layer l, a mixture of experts (spec.MoE),
// over a pass's n normalised rows xn: out is set to its n output rows
// (Dim each), which forwardBlock adds to the residual stream as it adds
// the dense feed-forward's; x is the residual stream the rows xn are
// normalised from, and a the pass's activations (a layer with a dense
// feed-forward beside its experts computes it in their buffers). Only
// the chosen experts' matrices are read, each once for the pass.
func (s *Session) moeBlock(spec *LayerSpec, l int, a *activations, x, xn, out []float32, n int) {
	c, lw, sc, moe := &s.model.config, &s.model.weights.Layers[l], s.moe, &spec.MoE
	dim, k := c.Dim, moe.Used
	in, routerIn := s.moeInputs(moe, lw, x, xn, n)
	probs := sc.probs[:n*moe.Experts]
	s.products(routerIn, n, tensor.Product{Out: probs, M: lw.Router})
	if lw.RouterBias != nil { // gpt-oss
		for i := range n {
			addInto(row(probs, i, moe.Experts), lw.RouterBias)
		}
	}
	for i := range n {
		route(moe, lw.ExpertBias, row(probs, i, moe.Experts), row(sc.chosen, i, k), row(sc.weights, i, k))
	}
	s.runExperts(c, lw, moe, in, n)
	for i := range n {
		o, w := row(out, i, dim), row(sc.weights, i, k)
		first := row(sc.outs, i*k, dim)
		for d := range o {
			o[d] = w[0] * first[d]
		}
		for j := 1; j < k; j++ {
			e := row(sc.outs, i*k+j, dim)
			for d := range o {
				o[d] += float32(w[j] * e[d])
			}
		}
	}
	if moe.Shared {
		s.sharedExpert(c, lw, xn, out, n)
	}
	if moe.Dense {
		s.denseBeside(moe, lw, a, xn, out, n)
	}
}

// route chooses a token's experts from its router logits (probs, which
// become its probabilities) and sets their weights, as moe's gating and
// normalisation say: chosen the moe.Used most probable experts, most
// probable first (ties: the lower expert), each probability plus bias[e]
// where the layer has a selection bias (lfm2moe's exp_probs_b: the weights
// stay the unbiased probabilities).
func route(moe *MoESpec, bias, probs []float32, chosen []int32, weights []float32) {
	switch moe.Gating {
	case GatingSoftmax:
		tensor.Softmax(probs, 1)
	case GatingSigmoid:
		for e, v := range probs {
			probs[e] = sigmoid(v)
		}
	}
	selection := func(e int) float32 {
		if bias == nil {
			return probs[e]
		}
		return probs[e] + bias[e]
	}
	var taken [maxExperts / 64]uint64
	for j := range chosen {
		best := -1
		for e := range probs {
			if taken[e/64]&(1<<(e%64)) == 0 && (best < 0 || selection(e) > selection(best)) {
				best = e
			}
		}
		taken[best/64] |= 1 << (best % 64)
		chosen[j], weights[j] = int32(best), probs[best]
	}
	if moe.Gating == GatingSoftmaxTopK {
		tensor.Softmax(weights, 1)
	}
	if moe.NormTopK {
		var sum float64 // ggml_sum_rows: in float64, rounded
		for _, w := range weights {
			sum += float64(w)
		}
		total := max(float32(sum), minWeightsSum)
		for j := range weights {
			weights[j] /= total
		}
	}
	if moe.WeightsScale != 0 && moe.WeightsScale != 1 {
		scaleInto(weights, moe.WeightsScale)
	}
}

// minWeightsSum is where llama.cpp clamps the sum of the chosen experts'
// weights before it divides by it: the smallest normal F16, 2^-14.
const minWeightsSum = 6.103515625e-5

// runExperts sets sc.outs to each of the pass's n tokens' chosen experts'
// outputs, expert by expert: the rows of the tokens that chose an expert
// gathered, its products over all of them at once, its outputs scattered
// to their (token, slot) places. One token's experts' gate and up
// products go at once, its input encoded once for all of them.
func (s *Session) runExperts(c *Config, lw *layerWeights, moe *MoESpec, xn []float32, n int) {
	sc, dim, k, ff := s.moe, c.Dim, moe.Used, c.ExpertHiddenDim
	if n == 1 {
		ps := sc.products[:0]
		for j, e := range sc.chosen[:k] {
			ex := &lw.experts[e]
			ps = append(ps, tensor.Product{Out: row(sc.gate, j, ff), M: ex.gate}, tensor.Product{Out: row(sc.up, j, ff), M: ex.up})
		}
		s.products(xn, 1, ps...)
		for j, e := range sc.chosen[:k] {
			if ex := &lw.experts[e]; ex.gateBias != nil { // gpt-oss
				addInto(row(sc.gate, j, ff), ex.gateBias)
				addInto(row(sc.up, j, ff), ex.upBias)
			}
		}
		c.gateUnits(moe.Activation, sc.gate[:k*ff], sc.up[:k*ff])
		for j, e := range sc.chosen[:k] {
			ex := &lw.experts[e]
			o := row(sc.outs, j, dim)
			s.products(row(sc.gate, j, ff), 1, tensor.Product{Out: o, M: ex.down})
			lw.scaleExpertOutput(o, int(e))
			if ex.downBias != nil {
				addInto(o, ex.downBias)
			}
		}
		return
	}
	count, start, chosen := sc.count[:moe.Experts], sc.start[:moe.Experts], sc.chosen[:n*k]
	clear(count)
	for _, e := range chosen {
		count[e]++
	}
	at := 0
	for e, m := range count {
		start[e] = at
		at += m
	}
	for i, e := range chosen {
		sc.slots[start[e]] = int32(i)
		start[e]++
	}
	at = 0
	for e, m := range count {
		if m == 0 {
			continue
		}
		group := sc.slots[at : at+m]
		at += m
		x := sc.x[:m*dim]
		for r, i := range group {
			copy(row(x, r, dim), row(xn, int(i)/k, dim))
		}
		ex := &lw.experts[e]
		gate, up, down := sc.gate[:m*ff], sc.up[:m*ff], sc.down[:m*dim]
		s.products(x, m, tensor.Product{Out: gate, M: ex.gate}, tensor.Product{Out: up, M: ex.up})
		if ex.gateBias != nil { // gpt-oss
			for r := range m {
				addInto(row(gate, r, ff), ex.gateBias)
				addInto(row(up, r, ff), ex.upBias)
			}
		}
		c.gateUnits(moe.Activation, gate, up)
		s.products(gate, m, tensor.Product{Out: down, M: ex.down})
		for r, i := range group {
			o := row(sc.outs, int(i), dim)
			copy(o, row(down, r, dim))
			lw.scaleExpertOutput(o, e)
			if ex.downBias != nil {
				addInto(o, ex.downBias)
			}
		}
	}
}

// sharedExpert adds the shared expert's outputs for the pass's n rows xn
// to out: down(silu(gate·x) ⊙ up·x), each row times its gate,
// sigmoid(x·SharedGate), as llama.cpp adds it after the routed experts;
// a layer without SharedGate (granitehybrid's) adds them as they are.
func (s *Session) sharedExpert(c *Config, lw *layerWeights, xn, out []float32, n int) {
	sc, dim, ff := s.moe, c.Dim, c.SharedHiddenDim
	for i := range n {
		if lw.SharedGate == nil {
			break
		}
		var dot float32
		for d, v := range row(xn, i, dim) {
			dot += float32(v * lw.SharedGate[d])
		}
		sc.sharedGate[i] = sigmoid(dot)
	}
	gate, up, down := sc.gate[:n*ff], sc.up[:n*ff], sc.down[:n*dim]
	s.products(xn, n, tensor.Product{Out: gate, M: lw.WGateShared}, tensor.Product{Out: up, M: lw.WUpShared})
	c.gateUnits(FFNSwiGLU, gate, up)
	s.products(gate, n, tensor.Product{Out: down, M: lw.WDownShared})
	for i := range n {
		o, sh, g := row(out, i, dim), row(down, i, dim), sc.sharedGate[i]
		if lw.SharedGate == nil {
			addInto(o, sh)
			continue
		}
		for d := range o {
			o[d] += float32(sh[d] * g)
		}
	}
}
