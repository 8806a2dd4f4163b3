package engine

import (
	"math"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// AltUp, LAuReL and the sparse gate: gemma3n's steps around the layer loop,
// as llama.cpp's src/models/gemma3n.cpp computes them.
//
// AltUp makes the residual stream Config.AltUp streams (4; the first is the
// active one). Before the first layer the others are the scaled embedding
// x projected (altup_proj, one dim×dim matrix each), each row scaled to
// x's magnitude (its Euclidean norm). Each layer then
//
//   - predicts the streams: a router, tanh(router · RMSNorm(active)/dim),
//     gives each token AltUp values, altup_predict_coef turns them into
//     an AltUp×AltUp mix, and stream j's prediction is stream j plus
//     Σ_k mix[j][k]·stream k;
//   - computes attention (and beside it LAuReL) and the feed-forward on the
//     active prediction, as the shared layer loop does with x;
//   - corrects the streams: the router, on the layer's output this time,
//     gives each stream a coefficient (altup_correct_coef, plus 1), and
//     stream j becomes its prediction plus the coefficient times the
//     innovation, output − active prediction;
//   - adds its per-layer embedding (per_layer.go), gated by the corrected
//     active stream times altup_correct_scale, to the other streams.
//
// After the last layer the other streams are projected back
// (altup_unembd_proj), scaled to the active stream's magnitude, and the
// streams averaged into x.
//
// LAuReL (learned augmented residual layer) is a low-rank branch beside
// attention: RMSNorm(laurel_r · laurel_l · xn) + xn, xn attention's
// normalised input, added to the attention's output (itself added to the
// active prediction), the sum scaled by 1/√2.
//
// The sparse gate (LayerSpec.GateSparsity: gemma3n's first 10 layers)
// keeps of each token's feed-forward gate g what exceeds its mean by k
// standard deviations, relu(g − mean − k·std), before GELU.

// altUp is the AltUp streams' and LAuReL's share of a pass's activations.
type altUp struct {
	streams   []float32        // (altUp, tokens, dim): the streams, stream after stream
	predicted []float32        // (altUp, tokens, dim): their predictions; projections' scratch
	routed    []float32        // (tokens, altUp): the router's output
	coefs     []float32        // (tokens, altUp²): each token's prediction mix, or its correction's coefficients
	routerIn  []float32        // (tokens, dim): the router's normalised input; the gate of the per-layer embedding
	laurelLow []float32        // (tokens, laurelRank): LAuReL's low-rank vectors
	laurelOut []float32        // (tokens, dim): LAuReL's output
	unembd    []*tensor.Matrix // (altUp−1): views of altup_unembd_proj, one per stream but the active one
}

// newAltUpActivations allocates AltUp's activations of n tokens; none
// for a model without streams.
func newAltUpActivations(c Config, w *modelWeights, n int) altUp {
	if c.AltUp == 0 {
		return altUp{}
	}
	a := altUp{
		streams: make([]float32, c.AltUp*n*c.Dim), predicted: make([]float32, c.AltUp*n*c.Dim),
		routed: make([]float32, n*c.AltUp), coefs: make([]float32, n*c.AltUp*c.AltUp),
		routerIn: make([]float32, n*c.Dim), laurelLow: make([]float32, n*c.LaurelRank), laurelOut: make([]float32, n*c.Dim),
	}
	if m := w.AltUpUnembdProj; m != nil {
		for j := range c.AltUp - 1 {
			// Load checked the rows; pack leaves the matrix as it is.
			if v, err := m.Slice(j*c.Dim, (j+1)*c.Dim); err == nil {
				a.unembd = append(a.unembd, v)
			}
		}
	}
	return a
}

// streamsScratchBytes is what the per-layer embeddings' and AltUp's
// activations (per_layer.go and here) add to a session's scratch: one
// token's and a prompt block's of block tokens.
func (c Config) streamsScratchBytes(block int) int64 {
	if c.PerLayerDim == 0 && c.AltUp == 0 {
		return 0
	}
	all := int64(c.PerLayerDim) * int64(c.Layers)
	perToken := all + int64(c.PerLayerDim) // the vectors, a layer's gate
	if c.AltUp > 0 {                       // streams, predictions, router input, LAuReL's output and low rank, coefficients
		perToken += int64(2*c.AltUp+2)*int64(c.Dim) + int64(c.LaurelRank) + int64(c.AltUp*(c.AltUp+1))
	}
	return 4 * (int64(1+block)*perToken + 2*all) // and a token's row of E in each
}

// stream is stream j of the n tokens of a pass in buf (streams or
// predicted): n rows of dim values.
func stream(buf []float32, j, n, dim int) []float32 { return buf[j*n*dim : (j+1)*n*dim] }

// altUpBegin makes the n tokens' streams from their scaled embeddings x:
// the active one x, the others x projected and scaled to x's magnitude.
func (s *Session) altUpBegin(a *activations, x []float32, n int) {
	c, w := &s.model.config, s.model.weights
	if c.AltUp == 0 {
		return
	}
	dim, others := c.Dim, c.AltUp-1
	copy(stream(a.streams, 0, n, dim), x)
	proj := a.predicted[:n*others*dim] // (tokens, others, dim)
	s.products(x, n, tensor.Product{Out: proj, M: w.AltUpProj})
	for i := range n {
		target := magnitude(row(x, i, dim))
		for j := range others {
			p := row(proj, i*others+j, dim)
			matchMagnitude(row(stream(a.streams, j+1, n, dim), i, dim), p, target)
		}
	}
}

// altUpPredict predicts layer l's streams and sets x, the n rows the layer
// computes on, to the active prediction.
func (s *Session) altUpPredict(spec *LayerSpec, l int, a *activations, x []float32, n int) {
	if !spec.AltUp {
		return
	}
	c, lw := &s.model.config, &s.model.weights.Layers[l]
	dim, k := c.Dim, c.AltUp
	s.altUpRoute(l, a, stream(a.streams, 0, n, dim), n)
	coefs := a.coefs[:n*k*k]
	s.products(a.routed[:n*k], n, tensor.Product{Out: coefs, M: lw.AltUpPredict})
	for i := range n {
		mix := row(coefs, i, k*k)
		for j := range k {
			out, own := row(stream(a.predicted, j, n, dim), i, dim), row(stream(a.streams, j, n, dim), i, dim)
			for e := range out {
				var sum float32
				for m := range k {
					sum += float32(row(stream(a.streams, m, n, dim), i, dim)[e] * mix[j*k+m])
				}
				out[e] = sum + own[e]
			}
		}
	}
	copy(x, stream(a.predicted, 0, n, dim))
}

// altUpRoute sets a.routed to the router of layer l over the n rows of
// from: tanh(router · RMSNorm(from)/dim).
func (s *Session) altUpRoute(l int, a *activations, from []float32, n int) {
	c, lw := &s.model.config, &s.model.weights.Layers[l]
	in := a.routerIn[:n*c.Dim]
	scale := 1 / float32(c.Dim) // 1.0f / (float) n_embd
	for i := range n {
		r := row(in, i, c.Dim)
		rmsNormGGML(r, row(from, i, c.Dim), lw.AltUpRouterNorm, c.NormEps)
		scaleInto(r, scale)
	}
	routed := a.routed[:n*c.AltUp]
	s.products(in, n, tensor.Product{Out: routed, M: lw.AltUpRouter})
	for i, v := range routed {
		routed[i] = float32(math.Tanh(float64(v)))
	}
}

// laurel adds layer l's LAuReL branch to x, the n rows of the active
// prediction plus attention's output, and scales the sum by 1/√2; xn
// holds attention's normalised input, which the branch reads.
func (s *Session) laurel(spec *LayerSpec, l int, a *activations, x, xn []float32, n int) {
	if !spec.AltUp {
		return
	}
	c, lw := &s.model.config, &s.model.weights.Layers[l]
	low, out := a.laurelLow[:n*c.LaurelRank], a.laurelOut[:n*c.Dim]
	s.products(xn, n, tensor.Product{Out: low, M: lw.LaurelL})
	s.products(low, n, tensor.Product{Out: out, M: lw.LaurelR})
	for i := range n {
		o := row(out, i, c.Dim)
		rmsNormGGML(o, o, lw.LaurelPostNorm, c.NormEps)
	}
	addInto(out, xn)
	addInto(x, out)
	scaleInto(x, 1/float32(math.Sqrt(2))) // 1.0f / sqrtf(2.0f)
}

// sparseGate keeps of each of the n rows of gate what exceeds its mean by
// mul standard deviations (the sample's: n−1 in the denominator),
// relu(g − (mean + mul·std)), as ggml computes it; mul 0 leaves it.
func sparseGate(mul float32, gate []float32, n int) {
	if mul == 0 {
		return
	}
	width := len(gate) / n
	for i := range n {
		g := row(gate, i, width)
		var sum float64
		for _, v := range g {
			sum += float64(v)
		}
		mean := float32(sum) / float32(width)
		var ss float64
		for _, v := range g {
			d := v - mean
			ss += float64(d * d)
		}
		std := float32(math.Sqrt(float64(float32(ss) * (1 / float32(width-1)))))
		cutoff := mean + float32(std*mul)
		for j, v := range g {
			g[j] = max(v-cutoff, 0)
		}
	}
}

// altUpCorrect corrects layer l's streams by x, the n rows of the layer's
// output, and adds the layer's per-layer embedding, gated by the
// corrected active stream, to the others; xn and proj are scratch of n
// rows of Dim values.
func (s *Session) altUpCorrect(spec *LayerSpec, l int, a *activations, x, xn, proj []float32, n int) {
	if !spec.AltUp {
		return
	}
	c, lw := &s.model.config, &s.model.weights.Layers[l]
	dim, k := c.Dim, c.AltUp
	s.altUpRoute(l, a, x, n)
	coefs := a.coefs[:n*k]
	s.products(a.routed[:n*k], n, tensor.Product{Out: coefs, M: lw.AltUpCorrect})
	for i := range n {
		coef := row(coefs, i, k)
		active := row(stream(a.predicted, 0, n, dim), i, dim)
		out := row(x, i, dim)
		for j := range k {
			cj := coef[j] + 1
			dst, pred := row(stream(a.streams, j, n, dim), i, dim), row(stream(a.predicted, j, n, dim), i, dim)
			for e := range dst {
				dst[e] = float32((out[e]-active[e])*cj) + pred[e]
			}
		}
	}
	first := xn[:n*dim]
	copy(first, stream(a.streams, 0, n, dim))
	for i := range n {
		f := row(first, i, dim)
		for e := range f {
			f[e] *= lw.AltUpCorrectScale[e]
		}
	}
	s.perLayerOutput(l, a, first, proj, n)
	for j := 1; j < k; j++ {
		addInto(stream(a.streams, j, n, dim), proj[:n*dim])
	}
}

// altUpEnd sets x, the n rows the output reads, to the mean of the
// streams, the others projected back and scaled to the active one's
// magnitude.
func (s *Session) altUpEnd(a *activations, x []float32, n int) {
	c := &s.model.config
	if c.AltUp == 0 {
		return
	}
	dim := c.Dim
	for j, m := range a.unembd {
		s.products(stream(a.streams, j+1, n, dim), n, tensor.Product{Out: stream(a.predicted, j, n, dim), M: m})
	}
	copy(x, stream(a.streams, 0, n, dim))
	for i := range n {
		target := magnitude(row(stream(a.streams, 0, n, dim), i, dim))
		out := row(x, i, dim)
		for j := range a.unembd {
			p := row(stream(a.predicted, j, n, dim), i, dim)
			matchMagnitude(p, p, target)
			addInto(out, p)
		}
	}
	scaleInto(x, 1/float32(c.AltUp)) // 1.0f / float(n_altup)
}

// magnitude is x's Euclidean norm as ggml computes
// sqrt(sum_rows(sqr(x))): the squares summed in float64, rounded to
// float32.
func magnitude(x []float32) float32 {
	var ss float64
	for _, v := range x {
		ss += float64(v * v)
	}
	return float32(math.Sqrt(float64(float32(ss))))
}

// matchMagnitude sets dst to src scaled to the magnitude target, as ggml
// computes it: src·target, divided by src's magnitude.
func matchMagnitude(dst, src []float32, target float32) {
	mag := magnitude(src)
	for e, v := range src {
		dst[e] = float32(v*target) / mag
	}
}
