package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/fmath"
)

// Mamba-2 (Dao & Gu, "Transformers are SSMs", 2024), the sequence mixer of
// Granite 4's hybrid layers, as llama.cpp computes it
// (build_mamba2_layer, ggml_ssm_conv, ggml_ssm_scan). A layer's input x
// (normalised) is projected to
//
//	z (inner) | xBC: x (inner), B (groups·state), C (groups·state) | dt (heads)
//
// xBC goes through a causal depthwise convolution of width kernel (each
// channel its own kernel, over the channel's latest kernel inputs, the
// kernel−1 before this token kept in the session's conv state), a bias,
// then SiLU. x is heads of headDim = inner/heads values; head h reads the
// B and C of group h/(heads/groups). Each head keeps a (headDim, state)
// matrix S, and for each token
//
//	Δ = softplus(dt_h + dt_bias_h),  S ← S·exp(Δ·A_h) + Δ·x_h ⊗ B,  y_h = S·C + D_h·x_h
//
// (A_h < 0, a scalar per head: Mamba-2's decay). Then y = y ⊙ silu(z),
// an RMSNorm over each group of inner/groups values (with the norm's
// weights), and the output projection back to the residual stream.
//
// The session's state of a layer: conv, (channels, kernel−1), each
// channel's latest inputs, oldest first (llama.cpp's r cache); ssm,
// (heads, headDim, state) (llama.cpp's s cache). A token costs the two
// projections (inProj·dim and dim·inner multiply-adds, the layer's
// weights), channels·kernel for the convolution and about 4·inner·state
// for the scan: no term grows with the position.

// mamba2Dims are a Mamba-2 layer's sizes, from the model's ssm.* keys
// (Config.SSM), as llama.cpp names them in build_mamba2_layer.
type mamba2Dims struct {
	kernel int // ssm.conv_kernel: the convolution's width (d_conv)
	state  int // ssm.state_size: each head's state per value (d_state)
	groups int // ssm.group_count: groups of B and C (n_group)
	heads  int // ssm.time_step_rank: heads, one Δ each (n_head)
	inner  int // ssm.inner_size: x's width, heads·headDim (d_inner)
}

// mamba2 is the model's Mamba-2 sizes.
func (c Config) mamba2() mamba2Dims {
	s := c.SSM
	return mamba2Dims{kernel: s.ConvKernel, state: s.StateSize, groups: s.GroupCount, heads: s.TimeStepRank, inner: s.InnerSize}
}

// headDim is the width of one head of x.
func (m mamba2Dims) headDim() int { return m.inner / m.heads }

// channels is the convolution's width: x, B and C.
func (m mamba2Dims) channels() int { return m.inner + 2*m.groups*m.state }

// inProj is the input projection's width: z, x, B, C and dt.
func (m mamba2Dims) inProj() int { return m.inner + m.channels() + m.heads }

// convState is how many float32 values a layer's convolution state holds:
// each channel's kernel−1 latest inputs.
func (m mamba2Dims) convState() int { return (m.kernel - 1) * m.channels() }

// ssmState is how many float32 values a layer's scan state holds: a
// (headDim, state) matrix per head.
func (m mamba2Dims) ssmState() int { return m.inner * m.state }

// size is the Mamba-2 dimension d's value.
func (m mamba2Dims) size(d dimension) int {
	switch d {
	case dimMamba2InProj:
		return m.inProj()
	case dimMamba2Conv:
		return m.channels()
	case dimMamba2Groups:
		return m.groups
	case dimMamba2GroupWidth:
		if m.groups > 0 {
			return m.inner / m.groups
		}
	}
	return 0
}

// validate checks a model's Mamba-2 shape as llama.cpp does: inner is
// twice the residual stream (the only expansion it supports) and divides
// into the heads and the groups, which divide the heads.
func (m mamba2Dims) validate(dim int) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"ssm.conv_kernel", m.kernel}, {"ssm.state_size", m.state}, {"ssm.group_count", m.groups},
		{"ssm.time_step_rank", m.heads}, {"ssm.inner_size", m.inner}} {
		if f.v <= 0 || f.v > maxDimension {
			return fmt.Errorf("%w: %s = %d is out of range (1..%d)", ErrFormat, f.name, f.v, maxDimension)
		}
	}
	switch {
	case m.inner != 2*dim:
		return fmt.Errorf("%w: ssm.inner_size %d is not twice embedding_length %d (llama.cpp supports only that expansion)", ErrUnsupported, m.inner, dim)
	case m.inner%m.heads != 0 || m.heads%m.groups != 0:
		return fmt.Errorf("%w: ssm.inner_size %d, ssm.time_step_rank %d, ssm.group_count %d: the heads must divide inner and the groups the heads", ErrFormat, m.inner, m.heads, m.groups)
	case int64(m.inProj())*int64(m.state) > maxDimension*16:
		return fmt.Errorf("%w: a Mamba-2 layer of %d state values per head value is too large", ErrFormat, m.state)
	}
	return nil
}

// mamba2Scratch is a session's scratch for its Mamba-2 layers, for up to
// a prompt block of tokens, allocated at the first pass.
type mamba2Scratch struct {
	proj []float32   // (tokens, inProj): z, xBC (then the convolution's output), dt
	y    []float32   // (tokens, inner): the scan's output, gated and normalised
	conv [][]float32 // (layers)(channels, kernel): each Mamba-2 layer's convolution as float32 (a view of an F32 file's)
}

// mamba2Block is a Mamba-2 layer's mixer over the n rows of xn (Dim each),
// its output in out's n rows: both projections over the n rows at once,
// the convolution and the scan token by token, updating the layer's state
// in the session, which after the block is what the tokens one by one
// leave (each token's arithmetic is the same).
func (s *Session) mamba2Block(l int, xn, out []float32, n int) {
	c, lw := &s.model.config, &s.model.weights.Layers[l]
	m := c.mamba2()
	if s.rec.mamba2 == nil {
		s.rec.mamba2 = newMamba2Scratch(c, s.model.weights, max(s.promptBlock, 1))
	}
	sc := s.rec.mamba2
	proj, y := sc.proj[:n*m.inProj()], sc.y[:n*m.inner]
	s.products(xn, n, tensor.Product{Out: proj, M: lw.SSMIn})
	conv, ssm := s.rec.conv[l], s.rec.ssm[l]
	w := m.inner / m.groups // the gated norm's groups
	for i := range n {
		p := row(proj, i, m.inProj())
		z, xBC, dt := p[:m.inner], p[m.inner:m.inner+m.channels()], p[m.inner+m.channels():]
		mamba2Conv(xBC, conv, sc.conv[l], lw.SSMConvBias, m.kernel)
		yi := row(y, i, m.inner)
		mamba2Scan(yi, xBC, dt, ssm, lw, m)
		tensor.SwiGLU(z, yi) // z = silu(z) ⊙ y
		for g := range m.groups {
			rmsNormGGML(yi[g*w:(g+1)*w], z[g*w:(g+1)*w], lw.SSMNorm[g*w:(g+1)*w], c.NormEps)
		}
	}
	s.products(y, n, tensor.Product{Out: out, M: lw.SSMOut})
}

// newMamba2Scratch allocates the scratch of a session of c's model (its
// weights w) for blocks of up to rows tokens.
func newMamba2Scratch(c *Config, w *modelWeights, rows int) *mamba2Scratch {
	m := c.mamba2()
	sc := &mamba2Scratch{proj: make([]float32, rows*m.inProj()), y: make([]float32, rows*m.inner), conv: make([][]float32, c.Layers)}
	for l := range c.Layers {
		k := w.Layers[l].SSMConv
		switch {
		case c.Layer(l).Kind != LayerMamba2 || k == nil:
		case k.Type == tensor.F32:
			sc.conv[l] = tensor.Float32s(k.Data)
		default:
			sc.conv[l] = floatRows(k)
		}
	}
	return sc
}

// mamba2Conv runs one token's xBC (channels values) through the causal
// depthwise convolution, in place: each channel's kernel over its
// kernel−1 inputs in state and this one (as ggml_ssm_conv: a float32 sum
// from the oldest), plus the bias (nil: none), then SiLU; state then
// holds the channel's latest kernel−1 inputs.
func mamba2Conv(xBC, state, kernel, bias []float32, width int) {
	k := width - 1
	for ch, x := range xBC {
		st, w := state[ch*k:(ch+1)*k], kernel[ch*width:(ch+1)*width]
		var sum float32
		for j, v := range st {
			sum += float32(v * w[j])
		}
		sum += float32(x * w[k])
		copy(st, st[1:])
		if k > 0 {
			st[k-1] = x
		}
		if bias != nil {
			sum += bias[ch]
		}
		xBC[ch] = float32(sum / (1 + fmath.Exp(-sum)))
	}
}

// mamba2Scan advances the heads' states by one token and sets y to their
// output, ggml_ssm_scan's arithmetic for Mamba-2 (a scalar decay per head)
// then the skip connection D·x: xBC is the convolution's output (x, B,
// C), dt the token's time steps (before their bias), state (heads,
// headDim, stateSize).
func mamba2Scan(y, xBC, dt, state []float32, w *layerWeights, m mamba2Dims) {
	hd, ns := m.headDim(), m.state
	x := xBC[:m.inner]
	perGroup := m.heads / m.groups
	for h := range m.heads {
		delta := softplus(dt[h] + w.SSMDtBias[h])
		decay := fmath.Exp(float32(delta * w.SSMA[h]))
		g := h / perGroup
		b := xBC[m.inner+g*ns : m.inner+(g+1)*ns]
		cv := xBC[m.inner+(m.groups+g)*ns : m.inner+(m.groups+g+1)*ns]
		for i := range hd {
			ii := h*hd + i
			xdt := float32(x[ii] * delta)
			st := state[ii*ns : (ii+1)*ns]
			var sum float32
			for j := range st {
				v := float32(st[j]*decay) + float32(b[j]*xdt)
				sum += float32(v * cv[j])
				st[j] = v
			}
			y[ii] = sum + float32(x[ii]*w.SSMD[h])
		}
	}
}
