package engine

import (
	"fmt"
	"math"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/fmath"
)

// Qwen3.5's Gated DeltaNet layers (LayerDeltaNet), a linear attention
// whose memory is a fixed-size matrix per head rather than a growing KV
// cache. For each token, from the layer's normalised input x:
//
//	qkv = Wqkv·x, then a depthwise causal convolution over the latest
//	      ConvKernel positions of each of its channels, then SiLU;
//	      q, k (GroupCount heads each) and v (TimeStepRank heads), each
//	      head StateSize (S) wide; q and k each L2-normalised per head;
//	z   = Wz·x                           the output gate
//	β   = σ(Wβ·x)                        per value head: how much it writes
//	g   = A · softplus(Wα·x + dt_bias)   per value head (A = −exp(A_log) < 0)
//
// then, for value head h (reading query and key head h mod GroupCount,
// as llama.cpp's converter orders Qwen3.5's heads), its state S_h
// (S×S), in llama.cpp's order:
//
//	S_h ← exp(g) · S_h                        decay
//	δ   = β · (v − S_hᵀk)                     the delta rule's error
//	S_h ← S_h + k δᵀ                          write
//	o   = S_hᵀq / √S                          read
//
// and the head's output RMSNorm(o)·w ⊙ SiLU(z_h) (ssm_norm, one weight
// vector for every head); the heads' outputs, side by side, through
// ssm_out. The state is stored as llama.cpp keeps it: head after head,
// row j of a head holding column j of S_h (S_h[i][j] at j·S + i), so that
// each step is a product of contiguous rows. The convolution's state is
// its last ConvKernel−1 inputs, rows of q, k and v projections, oldest
// first (the short convolution's layout, shortconv.go, whose sum it
// shares).
//
// A block of prompt tokens computes its products (Wqkv, Wz, Wβ, Wα, and
// ssm_out) over all its rows at once and the recurrence token by token,
// as llama.cpp's CPU backend does (its fused gated_delta_net op), so a
// block leaves exactly the state and outputs its tokens one by one would.
// The per-token cost of the recurrence is about 4·TimeStepRank·S² products
// (decay, two reads, one write), on top of the layer's matrix products.

// deltaNetDims are a Gated DeltaNet layer's sizes, from Config.SSM.
type deltaNetDims struct {
	kernel int // the convolution's positions (ssm.conv_kernel)
	head   int // S: the width of every head (ssm.state_size)
	kHeads int // query and key heads (ssm.group_count)
	vHeads int // value heads (ssm.time_step_rank)
}

// deltaNet is the model's Gated DeltaNet sizes.
func (c Config) deltaNet() deltaNetDims {
	return deltaNetDims{kernel: c.SSM.ConvKernel, head: c.SSM.StateSize, kHeads: c.SSM.GroupCount, vHeads: c.SSM.TimeStepRank}
}

func (d deltaNetDims) keyDim() int   { return d.kHeads * d.head }           // the queries' (and keys') width
func (d deltaNetDims) valueDim() int { return d.vHeads * d.head }           // the values' width, and the output's
func (d deltaNetDims) convDim() int  { return 2*d.keyDim() + d.valueDim() } // the convolution's channels: q, k, v
// convState is the float32 values of the convolution's state.
func (d deltaNetDims) convState() int { return (d.kernel - 1) * d.convDim() }

// ssmState is the float32 values of the heads' matrices.
func (d deltaNetDims) ssmState() int { return d.vHeads * d.head * d.head }

// validateDeltaNet checks the shape Gated DeltaNet layers need: the value
// heads a multiple of the key heads, the values' width InnerSize.
func (s SSMShape) validateDeltaNet() error {
	if err := s.validate(); err != nil {
		return err
	}
	switch {
	case s.TimeStepRank%s.GroupCount != 0:
		return fmt.Errorf("%w: ssm.time_step_rank %d (value heads) is not a multiple of ssm.group_count %d (key heads)", ErrFormat, s.TimeStepRank, s.GroupCount)
	case s.InnerSize != s.TimeStepRank*s.StateSize:
		return fmt.Errorf("%w: ssm.inner_size %d is not ssm.time_step_rank %d × ssm.state_size %d", ErrFormat, s.InnerSize, s.TimeStepRank, s.StateSize)
	case int64(s.TimeStepRank)*int64(s.StateSize)*int64(s.StateSize) > maxDimension*16:
		return fmt.Errorf("%w: %d value heads of %d×%d states are too large", ErrFormat, s.TimeStepRank, s.StateSize, s.StateSize)
	}
	return nil
}

// deltaNetScratch is the Gated DeltaNet layers' scratch memory, allocated
// at a session's first pass for blocks of up to its prompt block.
type deltaNetScratch struct {
	window []float32   // (kernel−1+block, convDim): the convolution's state, then each token's q, k, v projections
	qkv    []float32   // (block, convDim): the convolved q, k and v
	z      []float32   // (block, valueDim): the output gates
	beta   []float32   // (block, vHeads): β
	alpha  []float32   // (block, vHeads): Wα·x, then g
	core   []float32   // (block, valueDim): the heads' gated outputs
	delta  []float32   // (head): one head's δ
	conv   [][]float32 // (layers)(convDim, kernel): each DeltaNet layer's convolution as float32
}

// deltaNetScratch is the session's, allocated at its first call.
func (s *Session) deltaNetScratch() *deltaNetScratch {
	if sc := s.rec.deltaNet; sc != nil {
		return sc
	}
	c, w := &s.model.config, s.model.weights
	d, block := c.deltaNet(), s.promptBlock
	sc := &deltaNetScratch{
		window: make([]float32, (d.kernel-1+block)*d.convDim()), qkv: make([]float32, block*d.convDim()),
		z: make([]float32, block*d.valueDim()), beta: make([]float32, block*d.vHeads), alpha: make([]float32, block*d.vHeads),
		core: make([]float32, block*d.valueDim()), delta: make([]float32, d.head), conv: make([][]float32, c.Layers),
	}
	for l := range c.Layers {
		if m := w.Layers[l].SSMConv; m != nil {
			sc.conv[l] = floatRows(m)
		}
	}
	s.rec.deltaNet = sc
	return sc
}

// floatRows is every row of m as float32, one after the other.
func floatRows(m *tensor.Matrix) []float32 {
	out := make([]float32, m.Rows*m.Cols)
	for r := range m.Rows {
		m.Row(row(out, r, m.Cols), r)
	}
	return out
}

// deltaNetBlock is layer l's Gated DeltaNet over a pass's n tokens: xn
// their normalised rows, out their output rows (Dim each). It moves the
// layer's state on by the n tokens: the convolution's (rows of convDim,
// oldest first, as the short convolution's) and the heads' matrices.
func (s *Session) deltaNetBlock(l int, xn, out []float32, n int) {
	c, lw := &s.model.config, &s.model.weights.Layers[l]
	sc := s.deltaNetScratch()
	d := c.deltaNet()
	convDim, valueDim, past := d.convDim(), d.valueDim(), d.kernel-1
	window := sc.window[:(past+n)*convDim]
	qkv, z, core := sc.qkv[:n*convDim], sc.z[:n*valueDim], sc.core[:n*valueDim]
	beta, alpha := sc.beta[:n*d.vHeads], sc.alpha[:n*d.vHeads]
	s.products(xn, n, tensor.Product{Out: window[past*convDim:], M: lw.SSMQKV}, tensor.Product{Out: z, M: lw.SSMGate},
		tensor.Product{Out: beta, M: lw.SSMBeta}, tensor.Product{Out: alpha, M: lw.SSMAlpha})
	state := s.rec.conv[l]
	copy(window, state)
	w := deltaNetWeights{dtBias: lw.SSMDtBias, a: lw.SSMA, norm: lw.SSMNorm, eps: c.NormEps}
	for i := range n {
		x := row(qkv, i, convDim)
		shortConv(x, window[i*convDim:(i+d.kernel)*convDim], sc.conv[l], d.kernel)
		for j, v := range x {
			x[j] = silu(v)
		}
		deltaNetStep(d, &w, s.rec.ssm[l], x, row(z, i, valueDim), row(beta, i, d.vHeads), row(alpha, i, d.vHeads),
			row(core, i, valueDim), sc.delta)
	}
	copy(state, window[n*convDim:])
	s.products(core, n, tensor.Product{Out: out, M: lw.SSMOut})
}

// deltaNetWeights are the small, float32 parameters of one Gated DeltaNet
// layer that its recurrence reads.
type deltaNetWeights struct {
	dtBias []float32 // (vHeads): added to Wα·x before the softplus
	a      []float32 // (vHeads): A = −exp(A_log), the decay's rate
	norm   []float32 // (head): the output's RMSNorm weight
	eps    float32   // the L2 norms' and the RMSNorm's epsilon
}

// deltaNetStep runs one token's recurrence: qkv (convDim) holds its
// convolved and activated q, k and v, which it L2-normalises; z
// (valueDim) its output gates; beta and alpha (vHeads) its Wβ·x and Wα·x,
// overwritten with β and g. ssm, the heads' matrices, is updated; out
// (valueDim) receives the gated, normalised heads' outputs; delta (head)
// is scratch.
func deltaNetStep(d deltaNetDims, w *deltaNetWeights, ssm, qkv, z, beta, alpha, out, delta []float32) {
	keyDim, S := d.keyDim(), d.head
	for h := range 2 * d.kHeads { // the queries' heads, then the keys'
		l2Norm(qkv[h*S:(h+1)*S], w.eps)
	}
	for h := range d.vHeads {
		beta[h] = sigmoid(beta[h])
		alpha[h] = softplus(alpha[h]+w.dtBias[h]) * w.a[h]
	}
	scale := 1 / float32(math.Sqrt(float64(float32(S))))
	for h := range d.vHeads {
		kh := h % d.kHeads
		q := qkv[kh*S : (kh+1)*S]
		k := qkv[keyDim+kh*S : keyDim+(kh+1)*S]
		v := qkv[2*keyDim+h*S : 2*keyDim+(h+1)*S]
		state := ssm[h*S*S : (h+1)*S*S]
		o := out[h*S : (h+1)*S]

		scaleInto(state, fmath.Exp(alpha[h]))
		tensor.DotF32Rows(delta, k, state, S) // row j of state is column j of S_h: δ_j = (S_hᵀk)_j
		for j := range delta {
			delta[j] = float32((v[j] - delta[j]) * beta[h])
		}
		for j := range S {
			tensor.AddScaledRows(state[j*S:(j+1)*S], delta[j:j+1], k, S)
		}
		tensor.DotF32Rows(o, q, state, S)
		scaleInto(o, scale)

		rmsNormGGML(o, o, w.norm, w.eps)
		for j, zj := range z[h*S : (h+1)*S] {
			o[j] *= silu(zj)
		}
	}
}

// l2Norm scales v to unit length as ggml_l2_norm does: the squares summed
// in float64, v·1/max(√sum, eps) with the root in float32.
func l2Norm(v []float32, eps float32) {
	var sum float64
	for _, x := range v {
		sum += float64(float32(x * x))
	}
	scaleInto(v, 1/max(float32(math.Sqrt(float64(float32(sum)))), eps))
}

// silu is x·σ(x) = x/(1 + e^−x), in float32.
func silu(x float32) float32 { return x / (1 + fmath.Exp(-x)) }

// sigmoid is 1/(1 + e^−x), in float32.
func sigmoid(x float32) float32 { return 1 / (1 + fmath.Exp(-x)) }

// softplus is log(1 + e^x), and x itself above 20 (ggml's): e^x in
// float32, as expf gives it, and 1 + e^x and its logarithm in float64, as
// close to log1pf as a rounding to float32 shows (1 + e^x in float32
// would lose a small e^x's digits, and all of it below 2^-24).
func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(fmath.Log64(1 + float64(fmath.Exp(x))))
}
