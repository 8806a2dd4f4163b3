package engine

import (
	"math"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Per-layer embeddings (gemma4; Gemma 3n has them too). Besides the token
// embedding, which starts the residual stream, each token has a small
// vector for each layer (Config.PerLayerDim values: 256 in Gemma-4-E2B),
// which the layer mixes into the stream after its feed-forward. A token's
// vectors are made once, before the first layer, as llama.cpp's gemma4
// graph makes them (project_per_layer_inputs):
//
//	inputs = (RMSNorm(P·x / √dim) + E[token]·√perLayerDim) / √2
//
// where x is the token's scaled embedding, P (per_layer_model_proj)
// projects it to every layer's slice at once, each slice is normalised
// alone (per_layer_proj_norm, ggml's RMSNorm arithmetic), and E
// (per_layer_token_embd) holds a row of every layer's slices for each
// token, read row by row as the token embedding is. Layer l then adds
//
//	RMSNorm(proj · (GELU(gate·x) ⊙ inputs[l]))
//
// to the stream (blk.N.inp_gate, blk.N.proj, blk.N.post_norm), and
// multiplies the stream by its output scale (blk.N.layer_output_scale)
// where the file has one.

// perLayer is the per-layer embeddings' share of a pass's activations.
type perLayer struct {
	inputs []float32 // (tokens, layers·perLayerDim): each token's vectors, layer after layer
	tok    []float32 // (layers·perLayerDim): one token's row of E
	gate   []float32 // (tokens, perLayerDim): a layer's gated vectors
}

// newPerLayerActivations allocates the per-layer embeddings' activations
// of n tokens; none for a model without them.
func newPerLayerActivations(c Config, n int) perLayer {
	if c.PerLayerDim == 0 {
		return perLayer{}
	}
	all := c.PerLayerDim * c.Layers
	return perLayer{inputs: make([]float32, n*all), tok: make([]float32, all), gate: make([]float32, n*c.PerLayerDim)}
}

// perLayerInputs computes the per-layer vectors of the n tokens of a pass
// into a.inputs, x holding their scaled embeddings.
func (s *Session) perLayerInputs(a *activations, tokens []int, x []float32) {
	c, w := &s.model.config, s.model.weights
	if c.PerLayerDim == 0 {
		return
	}
	n, width, all := len(tokens), c.PerLayerDim, c.PerLayerDim*c.Layers
	inputs := a.inputs[:n*all]
	s.products(x, n, tensor.Product{Out: inputs, M: w.PerLayerModelProj})
	// In float32, as llama.cpp: 1.0f/sqrtf(n_embd), sqrtf(n_embd_per_layer), 1.0f/sqrtf(2.0f).
	projScale := 1 / float32(math.Sqrt(float64(float32(c.Dim))))
	embedScale := float32(math.Sqrt(float64(float32(width))))
	inputScale := 1 / float32(math.Sqrt(2))
	scaleInto(inputs, projScale)
	for i, token := range tokens {
		in := row(inputs, i, all)
		for at := 0; at < all; at += width {
			slice := in[at : at+width]
			rmsNormGGML(slice, slice, w.PerLayerProjNorm, c.NormEps)
		}
		w.PerLayerTokenEmbedding.Row(a.tok, token)
		scaleInto(a.tok, embedScale)
		addInto(in, a.tok)
		scaleInto(in, inputScale)
	}
}

// perLayerStep mixes layer l's per-layer vectors into the n rows of the
// residual stream x, and scales the stream by the layer's output scale,
// as its recipe says (LayerSpec.PerLayerInput); proj is scratch of n rows
// of Dim values.
func (s *Session) perLayerStep(spec *LayerSpec, l int, a *activations, x, proj []float32, n int) {
	lw := &s.model.weights.Layers[l]
	if spec.PerLayerInput {
		s.perLayerOutput(l, a, x, proj, n)
		addInto(x, proj)
	}
	if lw.OutScale != nil {
		scaleInto(x, lw.OutScale[0])
	}
}

// perLayerOutput sets proj to layer l's per-layer embeddings gated by the
// n rows of from (rows of Dim values), RMSNorm(proj · (GELU(gate·from) ⊙
// inputs[l])): what gemma4 adds to its residual stream, and gemma3n to its
// streams but the active one (altup.go).
func (s *Session) perLayerOutput(l int, a *activations, from, proj []float32, n int) {
	c, lw := &s.model.config, &s.model.weights.Layers[l]
	width, all := c.PerLayerDim, c.PerLayerDim*c.Layers
	gate := a.perLayer.gate[:n*width]
	s.products(from, n, tensor.Product{Out: gate, M: lw.PerLayerGate})
	geluInPlace(gate)
	for i := range n {
		g, in := row(gate, i, width), row(a.inputs, i, all)[l*width:(l+1)*width]
		for j := range g {
			g[j] *= in[j]
		}
	}
	s.products(gate, n, tensor.Product{Out: proj[:n*c.Dim], M: lw.PerLayerProj})
	for i := range n {
		p := row(proj, i, c.Dim)
		rmsNormGGML(p, p, lw.PerLayerPostNorm, c.NormEps)
	}
}
