package engine

import (
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/fmath"
)

// Attention sinks (gpt-oss: AttentionSpec.Sinks). Each head of a layer
// has a learned logit, its sink, that takes part in the softmax over the
// head's scores as one more position whose value is zero: the weights of
// the positions attended to are e^(s_t − m) / (Σ_u e^(s_u − m) + e^(sink
// − m)), m the largest of the scores and the sink, so they sum to less
// than 1 and a head can attend to (almost) nothing. As llama.cpp computes
// it (ggml_soft_max_ext with its sinks, which add to the denominator of
// the scaled, masked scores): the sink is not scaled.

// sinks are the sinks of layer l, whose attention is a: its weights'
// logits, or nil where the layer has none.
func (s *Session) sinks(a *AttentionSpec, l int) []float32 {
	if !a.Sinks {
		return nil
	}
	return s.model.weights.Layers[l].Sinks
}

// softmaxWithSink replaces x with the weights softmax(scale·x) gives
// beside a sink of logit sink: each x[i] *= scale in float32, then e^(x[i]
// − m) / (Σ e^(x[j] − m) + e^(sink − m)), m the maximum of the scaled x
// and the sink (the sums in order, in float32, as tensor.Softmax's).
func softmaxWithSink(x []float32, scale, sink float32) {
	if scale != 1 {
		for i := range x {
			x[i] *= scale
		}
	}
	m := sink
	for _, v := range x {
		m = max(m, v)
	}
	tensor.ExpShifted(x, m)
	var sum float32
	for _, e := range x {
		sum += e
	}
	sum += fmath.Exp(sink - m)
	inv := 1 / sum
	for i := range x {
		x[i] *= inv
	}
}
