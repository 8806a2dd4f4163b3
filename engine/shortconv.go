package engine

import "github.com/wasmlm/wasmlm/engine/tensor"

// LFM2's gated short convolution (LayerShortConv), as llama.cpp's lfm2
// graph computes it: in_proj maps each normalised row to three chunks of
// Dim values, b, c and x; b⊙x goes through a depthwise causal convolution
// over the latest ShortConvKernel positions (each channel its own kernel,
// ggml_ssm_conv: a float32 sum of products, oldest position first); c
// gates its output; out_proj maps that back to the residual stream. The
// layer's state is the last ShortConvKernel−1 values of b⊙x of each
// channel (recurrentState.conv: rows of Dim, oldest first).

// shortConvScratch is the short-convolution layers' scratch memory,
// allocated at a session's first pass for blocks of up to its prompt
// block.
type shortConvScratch struct {
	bcx    []float32   // (block, 3·dim): each token's b, c and x
	window []float32   // (kernel−1+block, dim): the state's inputs, then each token's b⊙x
	y      []float32   // (block, dim): c ⊙ the convolution
	kernel [][]float32 // (layers)(dim, kernel): each short-convolution layer's kernel as float32
}

// shortConvScratch is the session's, allocated at its first call.
func (s *Session) shortConvScratch() *shortConvScratch {
	if sc := s.rec.shortConv; sc != nil {
		return sc
	}
	c, w := &s.model.config, s.model.weights
	block, dim, k := s.promptBlock, c.Dim, c.ShortConvKernel
	sc := &shortConvScratch{
		bcx: make([]float32, block*3*dim), window: make([]float32, (k-1+block)*dim),
		y: make([]float32, block*dim), kernel: make([][]float32, c.Layers),
	}
	for l := range c.Layers {
		if m := w.Layers[l].ShortConv; m != nil {
			sc.kernel[l] = floatRows(m)
		}
	}
	s.rec.shortConv = sc
	return sc
}

// shortConvBlock is layer l's short convolution over a pass's n tokens:
// xn their normalised rows, out their output rows (Dim each). It moves
// the layer's state on by the n tokens.
func (s *Session) shortConvBlock(l int, xn, out []float32, n int) {
	c, lw := &s.model.config, &s.model.weights.Layers[l]
	sc := s.shortConvScratch()
	dim, k := c.Dim, c.ShortConvKernel
	bcx, y := sc.bcx[:n*3*dim], sc.y[:n*dim]
	s.products(xn, n, tensor.Product{Out: bcx, M: lw.ShortConvIn})
	state := s.rec.conv[l]
	window := sc.window[:(k-1+n)*dim]
	copy(window, state)
	for i := range n {
		r := row(bcx, i, 3*dim)
		gateMul(row(window, k-1+i, dim), r[:dim], r[2*dim:])
	}
	kernel := sc.kernel[l]
	for i := range n {
		shortConv(row(y, i, dim), window[i*dim:(i+k)*dim], kernel, k)
		gateMul(row(y, i, dim), row(bcx, i, 3*dim)[dim:2*dim], row(y, i, dim))
	}
	copy(state, window[n*dim:])
	s.products(y, n, tensor.Product{Out: out, M: lw.ShortConvOut})
}

// gateMul sets out = a ⊙ b (out may be a or b).
func gateMul(out, a, b []float32) {
	for i := range out {
		out[i] = a[i] * b[i]
	}
}

// shortConv sets out[ch] to channel ch's causal convolution over the k
// rows of window (k positions of len(out) channels, oldest first), with
// kernel's row ch (k weights, oldest position first): a float32 sum of
// the products, each rounded, in ggml_ssm_conv's order.
func shortConv(out, window, kernel []float32, k int) {
	dim := len(out)
	for ch := range out {
		w := kernel[ch*k : (ch+1)*k]
		var sum float32
		for j, wj := range w {
			sum += float32(window[j*dim+ch] * wj)
		}
		out[ch] = sum
	}
}
