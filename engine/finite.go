package engine

import (
	"fmt"
	"math"
)

// Non-finite weights. A NaN or an infinity in a model's weights crashes
// nothing: it turns the logits into NaN, and greedy decoding then writes
// token 0 forever. The vectors (norms, biases, rope factors) are small and
// read or decoded at load anyway, so the loaders check them all; a NaN or
// an infinity is an error wrapping ErrFormat (code invalid_model) that
// names the tensor.

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
