package engine

import (
	"fmt"
	"math"
)

// Non-finite weights. A NaN or an infinity in a model's weights crashes
// nothing: it turns the logits into NaN — greedy decoding then writes
// token 0 forever — or, where a quantized product re-encodes its input
// (which maps NaN to a finite code), into finite garbage. So the engine
// checks in two places, and either failure is an error wrapping ErrFormat
// (code invalid_model):
//
//   - at load, the vectors (norms, biases, rope factors): they are small,
//     and read or decoded at load anyway;
//   - in every forward pass, the vectors where a bad matrix value shows:
//     the token's embedding row; each layer's inputs to its Wo and down
//     products, whose quantized encoding would hide a NaN from everything
//     after; the final hidden state, which keeps any NaN the residual
//     stream took in; and the logits. An addition per value, next to the
//     products' multiply-add per weight.
//
// The matrices are not scanned at load: that would cost time in proportion
// to the file on every load (BenchmarkScanWeights; for stories110M
// natively, 35 ms in F32 and about 5 ms quantized, against 2.7 ms for the
// whole load), for what the forward pass finds the first time it uses it.

// allFinite reports whether x holds neither NaN nor ±Inf. v·0 is ±0 for
// every finite v and NaN otherwise, so the sums stay 0 unless some value
// is not finite: four independent sums and no branch per value
// (BenchmarkAllFinite).
func allFinite(x []float32) bool {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * 0
		s1 += x[i+1] * 0
		s2 += x[i+2] * 0
		s3 += x[i+3] * 0
	}
	for ; i < len(x); i++ {
		s0 += x[i] * 0
	}
	return s0+s1+s2+s3 == 0
}

// firstNonFinite is the index of the first NaN or infinity in x, or -1.
func firstNonFinite(x []float32) int {
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return i
		}
	}
	return -1
}

// checkFinite rejects weights whose vectors hold a NaN or an infinity,
// naming the tensor and the element.
func (w *modelWeights) checkFinite(a *architecture, layers int) error {
	var err error
	a.walk(layers, func(t tensorRef) {
		if err != nil || t.isMatrix() {
			return
		}
		v := *t.vectorIn(w)
		if i := firstNonFinite(v); i >= 0 {
			err = fmt.Errorf("%w: the model's weights are not finite: tensor %s holds %v at element %d", ErrFormat, t.name, v[i], i)
		}
	})
	return err
}

// finiteGuard remembers the first vector of a forward pass that was not
// finite. The pass goes on to its end (the parts of a split model must
// stay in step) and then fails with err.
type finiteGuard struct {
	what  string // "" while every vector checked was finite
	layer int    // the layer of what, if it is a layer's
}

// Where a guard found a value that was not finite.
const (
	guardEmbedding  = "embedding row"
	guardAttention  = "attention output"         // a layer's
	guardHidden     = "feed-forward activations" // a layer's
	guardFinalState = "final hidden state"
	guardLogits     = "logits"
)

// check records what (of layer, if it is a layer's) unless x is finite
// or an earlier vector was not.
func (g *finiteGuard) check(x []float32, what string, layer int) {
	if g.what == "" && !allFinite(x) {
		g.what, g.layer = what, layer
	}
}

// err is nil if every vector checked was finite, else an error wrapping
// ErrFormat that says which vector first was not, at which position.
func (g *finiteGuard) err(token, pos int) error {
	var where string
	switch g.what {
	case "":
		return nil
	case guardEmbedding:
		where = fmt.Sprintf("the %s of token %d at position %d", g.what, token, pos)
	case guardAttention, guardHidden:
		where = fmt.Sprintf("layer %d's %s at position %d", g.layer, g.what, pos)
	default:
		where = fmt.Sprintf("the %s at position %d", g.what, pos)
	}
	return fmt.Errorf("%w: the model's weights are not finite: NaN or infinity in %s", ErrFormat, where)
}
