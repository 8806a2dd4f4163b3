package engine

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/wasmlm/wasmlm/engine/tensor"
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
// whole load; a memory-mapped file would be read whole from disk), for
// what the forward pass finds the first time it uses it. When it does, the
// error names the tensor: the matrices that can have put the value there
// are decoded, in the order the pass reads them, up to the first that
// holds a NaN or an infinity (nonFiniteCause), once per model and vector.

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
	guardMixer      = "sequence mixer output"    // a recurrent layer's (mixBlock)
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
// ErrFormat that says which vector first was not, at which position, and
// which of m's matrices holds the value that put it there when one does (a
// part of a split model can only look in its own rows).
func (g *finiteGuard) err(m *Model, token, pos int) error {
	var where string
	switch g.what {
	case "":
		return nil
	case guardEmbedding:
		where = fmt.Sprintf("the %s of token %d at position %d", g.what, token, pos)
	case guardAttention, guardHidden, guardMixer:
		where = fmt.Sprintf("layer %d's %s at position %d", g.layer, g.what, pos)
	default:
		where = fmt.Sprintf("the %s at position %d", g.what, pos)
	}
	if f, ok := m.nonFiniteCause(*g, token); ok {
		return fmt.Errorf("%w: the model's weights are not finite: %s; it showed first as NaN or infinity in %s", ErrFormat, f, where)
	}
	return fmt.Errorf("%w: the model's weights are not finite: NaN or infinity in %s", ErrFormat, where)
}

// nonFiniteMatrix is a matrix of a model that holds a NaN or an infinity,
// and its first one.
type nonFiniteMatrix struct {
	name  string
	row   int // of the tensor (a fused piece's rows follow the pieces before it); -1 in a part of a split model
	col   int
	value float32
}

// String says where the value is, as the load-time check says it of a
// vector.
func (f nonFiniteMatrix) String() string {
	if f.row < 0 {
		return fmt.Sprintf("tensor %s holds %v", f.name, f.value)
	}
	return fmt.Sprintf("tensor %s holds %v at row %d, column %d", f.name, f.value, f.row, f.col)
}

// nonFiniteScan remembers, for each vector a forward pass of the model
// found not finite first (never, for a sound model), the matrix that put
// the value there, so that the matrices are decoded once, not at every
// generation that fails.
type nonFiniteScan struct {
	mu    sync.Mutex
	cause map[finiteGuard]*nonFiniteMatrix // nil: no matrix holds one
}

// nonFiniteCause is the matrix value that a forward pass's first
// non-finite vector (g; of token for the embedding) came from, when one
// does: the token's embedding row; for a layer's vectors, the first
// non-finite matrix, in the order the pass reads them, of that layer or
// one before (an earlier layer's may show only here: a quantized product
// re-encodes a NaN input as finite codes); for the final hidden state, of
// any layer; for the logits, the classifier. ok is false when none holds
// one: finite weights whose products overflowed.
func (m *Model) nonFiniteCause(g finiteGuard, token int) (f nonFiniteMatrix, ok bool) {
	w := m.weights
	if g.what == guardEmbedding && m.part == nil {
		if token < 0 || token >= w.TokenEmbedding.Rows {
			return f, false
		}
		row := make([]float32, w.TokenEmbedding.Cols)
		w.TokenEmbedding.Row(row, token)
		i := firstNonFinite(row)
		if i < 0 {
			return f, false
		}
		for _, t := range m.arch.tensors {
			if t.at == slotTokenEmbedding {
				f.name = t.name
			}
		}
		f.row, f.col, f.value = token, i, row[i]
		return f, true
	}
	scan := &w.nonFinite
	scan.mu.Lock()
	defer scan.mu.Unlock()
	cause, seen := scan.cause[g]
	if !seen {
		cause = m.firstNonFiniteMatrix(func(t tensorRef, mat *tensor.Matrix) bool {
			switch g.what {
			case guardEmbedding:
				return mat == w.TokenEmbedding
			case guardAttention, guardHidden, guardMixer:
				return t.spec.perLayer() && t.layer <= g.layer
			case guardFinalState:
				return t.spec.perLayer()
			case guardLogits:
				return mat == w.Output
			}
			return false
		})
		if scan.cause == nil {
			scan.cause = map[finiteGuard]*nonFiniteMatrix{}
		}
		scan.cause[g] = cause
	}
	if cause == nil {
		return f, false
	}
	return *cause, true
}

// firstNonFiniteMatrix decodes, row by row in the order the forward pass
// reads them, the matrices of m that suspect says may hold the value, and
// returns the first that holds a NaN or an infinity (nil if none does).
func (m *Model) firstNonFiniteMatrix(suspect func(tensorRef, *tensor.Matrix) bool) *nonFiniteMatrix {
	var (
		found *nonFiniteMatrix
		buf   []float32
	)
	m.arch.walk(m.config.Layers, func(t tensorRef) {
		if found != nil || !t.isMatrix() {
			return
		}
		mat := *t.matrixIn(m.weights)
		if mat == nil || !suspect(t, mat) {
			return
		}
		buf = slices.Grow(buf[:0], mat.Cols)[:mat.Cols]
		for r := range mat.Rows {
			mat.Row(buf, r)
			if allFinite(buf) {
				continue
			}
			found = &nonFiniteMatrix{name: t.name, row: -1, col: firstNonFinite(buf)}
			found.value = buf[found.col]
			if m.part == nil {
				lo, _, _ := t.spec.pieceRows(m.config, nil)
				found.row = lo + r
			}
			return
		}
	})
	return found
}
