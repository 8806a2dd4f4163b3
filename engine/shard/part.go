package shard

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine"
)

// Part is one part of a model split across workers: an engine.Model that
// holds this part's rows (views of the whole model's, or read from a part's
// own file), which part of how many it is, and a fingerprint of the whole
// model it was cut from.
type Part struct {
	Model        *engine.Model
	Index, Count int
	plan         plan
	source       uint64 // the whole model's engine.Model.Fingerprint
}

// Cut returns part index of count of the whole model m, its weights views
// of m's (nothing is copied). count is at most the model's kv heads. Part 0
// generates; the others follow (see NewSession). To give a worker only its
// part's bytes, see File.
func Cut(m *engine.Model, index, count int) (*Part, error) {
	if _, isPart := m.Part(); isPart {
		return nil, fmt.Errorf("%w: the model is already a part of a split model", ErrSplit)
	}
	p, err := newPlan(m.Config(), index, count)
	if err != nil {
		return nil, err
	}
	cut, err := m.Cut(p.rows)
	if err != nil {
		return nil, err
	}
	return &Part{Model: cut, Index: index, Count: count, plan: p, source: m.Fingerprint()}, nil
}

// Load reads a part's file, as File writes it.
func Load(data []byte) (*Part, error) {
	h, err := readHeader(data)
	if err != nil {
		return nil, err
	}
	m, err := engine.Load(data, engine.LoadOptions{Part: &h.rows})
	if err != nil {
		return nil, err
	}
	p, err := newPlan(m.Config(), h.index, h.count)
	if err != nil {
		return nil, fmt.Errorf("%w: part file: %w", engine.ErrFormat, err)
	}
	if p.rows != h.rows {
		return nil, fmt.Errorf("%w: part file: the rows it holds, %v, are not part %d of %d's, %v",
			engine.ErrFormat, h.rows, h.index, h.count, p.rows)
	}
	return &Part{Model: m, Index: h.index, Count: h.count, plan: p, source: h.source}, nil
}
