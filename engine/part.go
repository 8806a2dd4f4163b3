package engine

import "fmt"

// A model can be split across workers (engine/shard cuts it and connects
// the parts): each part holds some rows of the big tensors and computes
// those rows of every product, and the parts exchange their slices of the
// vectors the forward pass joins (see Peers). The engine itself knows only
// which rows a part holds; how a model is divided and how the parts talk is
// engine/shard's.

// Axis is what the rows of a tensor that a split model divides index.
type Axis int

// The axes along which the architecture tables split tensors.
const (
	AxisVocab  = Axis(dimVocab)  // token ids: token_embd, output
	AxisQ      = Axis(dimQ)      // query heads × head size: attn_q and its bias
	AxisKV     = Axis(dimKV)     // kv heads × head size: attn_k, attn_v and their biases
	AxisHidden = Axis(dimHidden) // the feed-forward's hidden units: ffn_gate, ffn_up
	AxisModel  = Axis(dimModel)  // the residual stream: the rows of ffn_down
)

// Span is the half-open range [Lo, Hi) of rows.
type Span struct{ Lo, Hi int }

// Len is the number of rows in s.
func (s Span) Len() int { return s.Hi - s.Lo }

// Contains reports whether row i is in s.
func (s Span) Contains(i int) bool { return s.Lo <= i && i < s.Hi }

// Part says which rows of each axis one part of a split model holds.
type Part struct {
	Vocab, Q, KV, Hidden, Model Span
}

// Rows is the span of axis a.
func (p *Part) Rows(a Axis) Span {
	switch a {
	case AxisVocab:
		return p.Vocab
	case AxisQ:
		return p.Q
	case AxisKV:
		return p.KV
	case AxisHidden:
		return p.Hidden
	case AxisModel:
		return p.Model
	}
	return Span{}
}

// check verifies that p lies within a model of config c.
func (p *Part) check(c Config) error {
	for _, a := range []Axis{AxisVocab, AxisQ, AxisKV, AxisHidden, AxisModel} {
		if s := p.Rows(a); s.Lo < 0 || s.Lo >= s.Hi || s.Hi > c.size(dimension(a)) {
			return fmt.Errorf("%w: part rows [%d, %d) of an axis of %d", ErrInvalidOption, s.Lo, s.Hi, c.size(dimension(a)))
		}
	}
	return nil
}

// AxisLen is the number of rows along axis a of a whole model of config c.
func (c Config) AxisLen(a Axis) int { return c.size(dimension(a)) }

// TensorSplit says how a split model divides one of its tensors.
type TensorSplit struct {
	Name  string // the GGUF name, e.g. "blk.0.attn_q.weight"
	Split bool   // whether a part holds only some of its rows (else all of it)
	Axis  Axis   // what its rows index, when Split (the first piece's, for a fused tensor)
	// Fused, for a tensor that holds several matrices one after another
	// (phi3's attn_qkv: the queries', the keys' and the values' rows), are
	// the axes of its pieces' rows, in order: a part holds its rows of each
	// piece, one piece after another.
	Fused []Axis
}

// SplitError is why a model of this architecture cannot be split across
// workers (an error wrapping ErrUnsupported), or nil when it can.
func (m *Model) SplitError() error { return m.arch.splitError() }

// splitError is SplitError for the architecture.
func (a *architecture) splitError() error {
	if a.noSplit == "" {
		return nil
	}
	return fmt.Errorf("%w: %s models cannot be split across workers: %s", ErrUnsupported, a.name, a.noSplit)
}

// Tensors lists every tensor the model's architecture uses (optional ones
// included, present or not) and how a split model divides it.
func (m *Model) Tensors() []TensorSplit {
	return tensorSplits(m.arch, m.config.Layers)
}

// Cut returns the part of the model that holds the rows p selects of every
// tensor the architecture splits (and every other tensor whole), as views of
// the model's own: nothing is copied. Its sessions need SessionOptions.Peers
// to reach the other parts. The model must be whole.
func (m *Model) Cut(p Part) (*Model, error) {
	if m.part != nil {
		return nil, fmt.Errorf("%w: the model is already a part of a split model", ErrInvalidOption)
	}
	if err := m.SplitError(); err != nil {
		return nil, err
	}
	if err := p.check(m.config); err != nil {
		return nil, err
	}
	if m.WeightsPacked() {
		return nil, errPackedCut
	}
	w, err := m.weights.cut(m.arch, &p)
	if err != nil {
		return nil, err
	}
	out := *m
	out.weights, out.part = w, &p
	return &out, nil
}

// errPackedCut: a model whose weights were packed for the SIMD kernels
// cannot be cut into parts, nor its bytes into shard files.
var errPackedCut = fmt.Errorf("%w: the model's weights were reordered for the SIMD kernels by its first session: cut it into parts before that", ErrInvalidOption)

// WeightsPacked reports whether the model's first session has reordered
// its weights in place for the SIMD kernels (tensor.Pack): from then on
// the bytes it was loaded from are no longer the file's, and it cannot be
// cut into parts (Cut) nor its bytes into shard files.
func (m *Model) WeightsPacked() bool { return m.weights.packed.Load() }

// Part reports which rows the model holds, for a part of a split model
// (Cut, or LoadOptions.Part); ok is false for a whole model.
func (m *Model) Part() (p Part, ok bool) {
	if m.part == nil {
		return Part{}, false
	}
	return *m.part, true
}
