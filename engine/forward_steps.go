package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// The steps the forward pass (forwardBlock) computes through, with
// attention (attentionBlock, kv.go): the seam where a second compute
// backend plugs in under the same layer loop (ARCHITECTURE.md). Each step
// takes the rows of the pass's tokens; those a layer's recipe (LayerSpec)
// varies are the llama family's step for the zero recipe.

// products computes ps over the n rows of x, each Out holding n rows: one
// token's as matrix–vector products, a block's each reading its matrix once
// for every row (the same bits).
func (s *Session) products(x []float32, n int, ps ...tensor.Product) {
	if n == 1 {
		tensor.MatVecs(x, s.state.ws, ps...)
		return
	}
	tensor.MatMuls(x, n, s.state.ws, ps...)
}

// projection is the rows of Wo a part of a split model computes for prompt
// blocks (Peers.Projection): every layer's, and the block's outputs.
type projection struct {
	wo  []*tensor.Matrix // by layer: rows of Wo, nil where the layer has no Wo
	out []float32        // (block, rows)
}

// prepareProjection makes, before a split model's first prompt block, its
// rows of every layer's Wo (Peers.Projection) and their outputs' buffer.
// A whole model's (no rows) computes every row.
func (s *Session) prepareProjection() error {
	if s.projection != nil {
		return nil
	}
	layers := s.model.weights.Layers
	p := &projection{wo: make([]*tensor.Matrix, len(layers))}
	if rows := s.peers.Projection(); rows.Len() > 0 {
		for i := range layers {
			if wo := layers[i].Wo; wo != nil {
				m, err := wo.Slice(rows.Lo, rows.Hi)
				if err != nil {
					return fmt.Errorf("engine: rows [%d, %d) of layer %d's Wo: %w", rows.Lo, rows.Hi, i, err)
				}
				p.wo[i] = m
			}
		}
		p.out = make([]float32, s.promptBlock*rows.Len())
	}
	s.projection = p
	return nil
}

// projectionRows is layer l's rows of Wo this part computes for a pass of
// n tokens, whose outputs Gather(GatherProjection) joins, and a buffer for
// those outputs; nil: every row (a decode step, a whole model).
func (s *Session) projectionRows(l, n int) (*tensor.Matrix, []float32) {
	if n == 1 {
		return nil, nil
	}
	wo := s.projection.wo[l]
	if wo == nil {
		return nil, nil
	}
	return wo, s.projection.out[:n*wo.Rows]
}

// adjustQKV finishes one position's q, k and v from their products in
// layer l, in place, as its recipe says: adds the biases (where the layer
// has them: qwen2), normalises q and k (each head: qwen3, gemma3; all of q
// and all of k at once: olmo2) and v (each head, without weights: gemma4),
// rotates them by position pos (unless the
// layer has no positional embedding: smollm3's every 4th) by the layer's
// rotations, and scales q (gemma).
func (s *Session) adjustQKV(spec *LayerSpec, l int, q, k, v []float32, pos int) {
	c, lw := &s.model.config, &s.model.weights.Layers[l]
	headDim := c.layerHeadDim(l)
	if lw.Bq != nil {
		addInto(q, lw.Bq)
		addInto(k, lw.Bk)
		addInto(v, lw.Bv)
	}
	shared := spec.Attention.SharedKV // no k or v: the layer reads another's cache
	if spec.QKNorm != QKNormNone {
		headsRMSNorm(q, lw.QNorm, c.NormEps)
		if !shared {
			headsRMSNorm(k, lw.KNorm, c.NormEps)
		}
	}
	if spec.Attention.ValueNorm && !shared {
		headsUnitRMSNorm(v, headDim, c.NormEps)
	}
	if !spec.Attention.NoPE {
		rope := s.layerRopes[l]
		rope.rotate(q, pos, headDim, c.RopeStyle)
		rope.rotate(k, pos, headDim, c.RopeStyle)
	}
	scaleQueries(&spec.Attention, q)
}

// projectQKV computes the queries, keys and values of the n rows of xn in
// layer lw: only the queries in a layer that shares another's cache, and
// the keys as values where the layer has no value projection (gemma4's
// full layers of its larger models: the values are the keys before their
// norm and rotation).
func (s *Session) projectQKV(spec *LayerSpec, lw *layerWeights, xn []float32, n int, q, k, v []float32) {
	switch {
	case spec.Attention.SharedKV:
		s.products(xn, n, tensor.Product{Out: q, M: lw.Wq})
	case lw.Wv == nil:
		s.products(xn, n, tensor.Product{Out: q, M: lw.Wq}, tensor.Product{Out: k, M: lw.Wk})
		copy(v, k)
	default:
		s.products(xn, n, tensor.Product{Out: q, M: lw.Wq}, tensor.Product{Out: k, M: lw.Wk}, tensor.Product{Out: v, M: lw.Wv})
	}
}

// scaleEmbedding multiplies the token embeddings in x (rows of Dim values)
// by EmbeddingScale (granite, gemma), as ggml_scale does.
func (c *Config) scaleEmbedding(x []float32) {
	if c.EmbeddingScale != 0 {
		scaleInto(x, c.EmbeddingScale)
	}
}

// preNorm sets xn to a sub-layer's input: x normalised with weight, or,
// for a layer without pre-norms (olmo2), x itself.
func (c *Config) preNorm(norms Norms, xn, x, weight []float32) {
	if !norms.pre() {
		copy(xn, x)
		return
	}
	rmsNorm(xn, x, weight, c.NormEps)
}

// addSublayer adds a sub-layer's output out to the residual stream x (rows
// of Dim values each): normalised first with post where the layer has
// post-norms (olmo2, gemma; ggml's RMSNorm arithmetic, as llama.cpp
// computes it), scaled by its ResidualScale (granite). out is changed.
func (c *Config) addSublayer(spec *LayerSpec, x, out, post []float32) {
	if spec.Norms.post() {
		for i := 0; i+c.Dim <= len(out); i += c.Dim {
			row := out[i : i+c.Dim]
			rmsNormGGML(row, row, post, c.NormEps)
		}
	}
	if spec.ResidualScale != 0 {
		scaleInto(out, spec.ResidualScale)
	}
	addInto(x, out)
}

// scaleQueries multiplies the rotated queries q by the attention's scale
// where the layer scales its queries rather than its scores (gemma).
func scaleQueries(a *AttentionSpec, q []float32) {
	if a.ScaleQueries {
		scaleInto(q, a.Scale)
	}
}

// attentionWeights turns head h's scores into its attention weights:
// soft-capped at limit (AttentionSpec.SoftCap; 0: not capped), scaled by
// scale (Config.scoreScale), softmax, with the head's sink in the
// denominator where the layer has sinks (nil: none; sinks.go).
func attentionWeights(scores []float32, limit, scale float32, sinks []float32, h int) {
	if limit != 0 {
		softCap(scores, limit)
	}
	if sinks != nil {
		softmaxWithSink(scores, scale, sinks[h])
		return
	}
	scaledSoftmax(scores, scale)
}

// gateUnits sets gate to the feed-forward's gated units, act(gate) ⊙ up:
// SwiGLU, or gemma's GeGLU.
func (c *Config) gateUnits(ffn FFN, gate, up []float32) {
	switch {
	case ffn == FFNGeGLU && c.exactGELU:
		for i, g := range gate {
			gate[i] = geluF32(g) * up[i]
		}
	case ffn == FFNGeGLU:
		geglu(gate, up)
	case ffn == FFNSwiGLUOAI:
		swigluOAI(gate, up)
	default:
		swiGLU(gate, up)
	}
}

// scaleLogits divides the logits by LogitScale (granite): as llama.cpp, a
// product with its reciprocal in float32.
func (c *Config) scaleLogits(logits []float32) {
	if c.LogitScale != 0 {
		scaleInto(logits, 1/c.LogitScale)
	}
}

// capLogits soft-caps the logits (FinalSoftCap).
func (c *Config) capLogits(logits []float32) {
	if c.FinalSoftCap != 0 {
		softCap(logits, c.FinalSoftCap)
	}
}

// scaleInto sets x *= s.
func scaleInto(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}
