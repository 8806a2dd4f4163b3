package engine

import (
	"context"
	"fmt"
	"math"
	"unsafe"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// The encoders' forward pass (arch_bert.go describes the block), as
// llama.cpp's graph for bert and nomic-bert computes it. Several texts go
// through in one pass: their tokens follow each other in one block, so
// each product reads its weights once for all of them (tensor.MatMuls),
// and only attention keeps each text to itself — its tokens attend to its
// own, all of them (or, if the file says causal, those up to their own).

// encodePassTokens is how many tokens one pass holds at least (a text
// longer than that has a pass of its own): enough to read each weight
// once for sixteen texts of 32 tokens, while the scratch stays a few MB
// (BGE-base's shape: about 13 MB at 512 tokens).
const encodePassTokens = 512

// encoderState is the scratch of the encoder's passes, token after token
// in each slice, grown to the largest pass.
type encoderState struct {
	x, q, k, v, attn, proj, up, gate []float32
	scores, row                      []float32 // a block of queries' scores; one row of Dim values
	qh, kh                           []float32 // a head's queries and keys, one after the other
	positions                        []int     // each token's position in its text
}

// attentionBlock is how many queries of a head encoderAttention scores in
// one product: their scores (attentionBlock × the text's tokens) stay a few
// hundred KB however long the text.
const attentionBlock = 64

// grow makes room for a pass of n tokens.
func (e *encoderState) grow(c Config, w *modelWeights, n int) {
	if len(e.positions) >= n {
		return
	}
	l := w.Layers[0]
	e.x, e.attn, e.proj = make([]float32, n*c.Dim), make([]float32, n*l.Wq.Rows), make([]float32, n*c.Dim)
	e.q, e.k, e.v = make([]float32, n*l.Wq.Rows), make([]float32, n*l.Wk.Rows), make([]float32, n*l.Wv.Rows)
	e.up = make([]float32, n*c.HiddenDim)
	if c.Layer(0).FFN == FFNSwiGLU {
		e.gate = make([]float32, n*c.HiddenDim)
	}
	e.scores, e.row, e.positions = make([]float32, attentionBlock*n), make([]float32, c.Dim), make([]int, n)
	e.qh, e.kh = make([]float32, n*c.HeadDim()), make([]float32, n*c.HeadDim())
}

// encodeAll encodes each sequence and pools it (a reranker: scores it),
// packing sequences into passes of at least encodePassTokens tokens.
func (s *Session) encodeAll(ctx context.Context, seqs [][]int) ([][]float32, error) {
	out := make([][]float32, len(seqs))
	for first := 0; first < len(seqs); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end, total := first, 0
		for end < len(seqs) && (end == first || total+len(seqs[end]) <= encodePassTokens) {
			total += len(seqs[end])
			end++
		}
		if err := s.encode(seqs[first:end], out[first:end]); err != nil {
			return nil, err
		}
		first = end
	}
	return out, nil
}

// encode runs one pass over seqs, setting out[i] to seq i's pooled vector.
func (s *Session) encode(seqs [][]int, out [][]float32) error {
	c, w, ws := &s.model.config, s.model.weights, s.state.ws
	n := 0
	for _, seq := range seqs {
		n += len(seq)
	}
	if s.enc == nil {
		s.enc = new(encoderState)
	}
	e := s.enc
	e.grow(*c, w, max(n, encodePassTokens))
	dim, qDim, kvDim, hidden := c.Dim, w.Layers[0].Wq.Rows, w.Layers[0].Wk.Rows, c.HiddenDim
	x, q, k, v := e.x[:n*dim], e.q[:n*qDim], e.k[:n*kvDim], e.v[:n*kvDim]
	attn, proj, up := e.attn[:n*qDim], e.proj[:n*dim], e.up[:n*hidden]

	// The input: token + token type 0 (+ position), normalised.
	r := 0
	for _, seq := range seqs {
		for p, token := range seq {
			xr := row(x, r, dim)
			w.TokenEmbedding.Row(xr, token)
			if w.TokenTypes != nil {
				w.TokenTypes.Row(e.row, 0)
				addInto(xr, e.row)
			}
			if w.PositionEmbedding != nil {
				w.PositionEmbedding.Row(e.row, p)
				addInto(xr, e.row)
			}
			layerNorm(xr, w.EmbedNorm, w.EmbedNormBias, c.NormEps)
			e.positions[r] = p
			r++
		}
	}
	for l := range w.Layers {
		lw, spec := &w.Layers[l], c.Layer(l)
		tensor.MatMuls(x, n, ws, tensor.Product{Out: q, M: lw.Wq}, tensor.Product{Out: k, M: lw.Wk}, tensor.Product{Out: v, M: lw.Wv})
		for r := range n {
			qr, kr, vr := row(q, r, qDim), row(k, r, kvDim), row(v, r, kvDim)
			if lw.Bq != nil {
				addInto(qr, lw.Bq)
			}
			if lw.Bk != nil {
				addInto(kr, lw.Bk)
			}
			if lw.Bv != nil {
				addInto(vr, lw.Bv)
			}
			if !spec.Attention.NoPE { // nomic-bert: rotary positions (bert's are learned)
				s.rope.rotate(qr, e.positions[r], c.HeadDim(), c.RopeStyle)
				s.rope.rotate(kr, e.positions[r], c.HeadDim(), c.RopeStyle)
			}
		}
		first := 0
		for _, seq := range seqs {
			if err := s.encoderAttention(attn, q, k, v, c.scoreScale(spec.Attention), first, len(seq)); err != nil {
				return err
			}
			first += len(seq)
		}
		// Attention's output, its bias, the layer's input added back, normalised.
		tensor.MatMul(proj, lw.Wo, attn, n, ws)
		residualNorm(x, proj, lw.Bo, lw.AttnOutNorm, lw.AttnOutNormBias, c)

		// The feed-forward: GELU(up) (nomic-bert: silu(gate) ⊙ up), down,
		// its input added back, normalised.
		if spec.FFN == FFNSwiGLU {
			gate := e.gate[:n*hidden]
			tensor.MatMuls(x, n, ws, tensor.Product{Out: up, M: lw.WUp}, tensor.Product{Out: gate, M: lw.WGate})
			swiGLU(gate, up)
			up = gate
		} else {
			tensor.MatMul(up, lw.WUp, x, n, ws)
			if lw.BUp != nil {
				for r := range n {
					addInto(row(up, r, hidden), lw.BUp)
				}
			}
			geluInPlace(up)
		}
		tensor.MatMul(proj, lw.WDown, up, n, ws)
		up = e.up[:n*hidden]
		residualNorm(x, proj, lw.BDown, lw.LayerOutNorm, lw.LayerOutNormBias, c)
	}
	first := 0
	for i, seq := range seqs {
		out[i] = s.pool(x[first*dim : (first+len(seq))*dim])
		first += len(seq)
		if !allFinite(out[i]) {
			return fmt.Errorf("%w: the model's weights give non-finite values for input %d", ErrFormat, i)
		}
	}
	return nil
}

// encoderAttention computes the attention of the n tokens from first on
// (one text) among themselves: every token over every other (or, for a
// causal model, those up to its own), each query head over its kv head,
// scores scaled by scale (1/√headDim), as llama.cpp's attention without a
// cache.
//
// A head at a time: its keys are copied into a matrix of their own and
// its queries' scores, a block at a time, are one batched product with it
// (tensor.MatMul: each key read once for the block; every score is still
// DotF32's, as DotF32Rows would give), then each query's softmax and its
// score-weighted sum of the values.
func (s *Session) encoderAttention(out, q, k, v []float32, scale float32, first, n int) error {
	c, e := &s.model.config, s.enc
	hd, qDim, kvDim := c.HeadDim(), c.QDim(), c.KVDim()
	qh, kh := e.qh[:n*hd], e.kh[:n*hd]
	keys, err := tensor.NewMatrix(tensor.F32, n, hd, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(kh))), 4*len(kh)))
	if err != nil {
		return fmt.Errorf("encoder attention: %w", err)
	}
	for h := range c.Heads {
		kvh := h / c.GroupSize() * hd
		for t := range n {
			copy(kh[t*hd:(t+1)*hd], k[(first+t)*kvDim+kvh:])
			copy(qh[t*hd:(t+1)*hd], q[(first+t)*qDim+h*hd:])
		}
		for b := 0; b < n; b += attentionBlock {
			m := min(attentionBlock, n-b)
			scores := e.scores[:m*n]
			tensor.MatMul(scores, keys, qh[b*hd:], m, s.state.ws)
			if c.NonCausal {
				tensor.SoftmaxRows(scores, n, scale)
			}
			for j := range m {
				i := b + j
				sc := scores[j*n : (j+1)*n]
				if !c.NonCausal {
					sc = sc[:i+1]
					tensor.Softmax(sc, scale)
				}
				oh := out[(first+i)*qDim+h*hd : (first+i)*qDim+(h+1)*hd]
				clear(oh)
				tensor.AddScaledRows(oh, sc, v[first*kvDim+kvh:], kvDim)
			}
		}
	}
	return nil
}

// residualNorm sets each row of x to LayerNorm(out + bias + x) with
// weight and bias nb: a post-norm sub-layer's end. out is changed.
func residualNorm(x, out, bias, weight, nb []float32, c *Config) {
	for r := 0; r+c.Dim <= len(x); r += c.Dim {
		o, xr := out[r:r+c.Dim], x[r:r+c.Dim]
		if bias != nil {
			addInto(o, bias)
		}
		addInto(o, xr)
		copy(xr, o)
		layerNorm(xr, weight, nb, c.NormEps)
	}
}

// pool is a text's vector from its tokens' final states x (rows of Dim),
// as the model's pooling says; a reranker's, its classification head's
// scores.
func (s *Session) pool(x []float32) []float32 {
	c, w := &s.model.config, s.model.weights
	n := len(x) / c.Dim
	out := make([]float32, c.Dim)
	switch s.model.Pooling() {
	case PoolingMean:
		for r := range n {
			addInto(out, row(x, r, c.Dim))
		}
		scaleInto(out, 1/float32(n))
	case PoolingLast:
		copy(out, row(x, n-1, c.Dim))
	default: // cls, rank
		copy(out, row(x, 0, c.Dim))
	}
	if s.model.Pooling() != PoolingRank {
		return out
	}
	if w.Cls != nil {
		dense := make([]float32, w.Cls.Rows)
		tensor.MatVec(dense, w.Cls, out, s.state.ws)
		if w.ClsBias != nil {
			addInto(dense, w.ClsBias)
		}
		for i, d := range dense {
			dense[i] = float32(math.Tanh(float64(d)))
		}
		out = dense
	}
	scores := make([]float32, w.ClsOut.Rows)
	tensor.MatVec(scores, w.ClsOut, out, s.state.ws)
	if w.ClsOutBias != nil {
		addInto(scores, w.ClsOutBias)
	}
	return scores
}

// layerNorm normalises x in place to zero mean and unit variance, then
// multiplies by weight and adds bias, as ggml_norm, ggml_mul and ggml_add
// compute it (tensor.LayerNorm).
func layerNorm(x, weight, bias []float32, eps float32) {
	tensor.LayerNorm(x, weight, bias, eps)
}
