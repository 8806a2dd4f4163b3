package gguf

import "fmt"

// Join describes the one file that the parts of a split GGUF (as
// llama-gguf-split writes them, in order; their headers are enough, as
// ParseHeader reads them) make together: the file llama-gguf-split --merge
// writes from them — the first part's metadata with split.count set to 0
// (moved last), which marks a whole file, then every part's tensors in
// order, their dims without trailing 1s. It checks the parts as llama.cpp's
// loader does (each says which part of how many it is, no tensor twice, as
// many tensors as the first part says). It returns that file's header (a
// File without data) and its Layout, whose sources are the parts. A file
// that is not split joins to itself: its own header and
// WholeLayout(size).
func Join(parts []*File, sizes []int64) (*File, *Layout, error) {
	if len(parts) == 0 || len(parts) != len(sizes) {
		return nil, nil, fmt.Errorf("%w: %d parts, %d sizes", ErrInvalid, len(parts), len(sizes))
	}
	first := parts[0]
	s, ok, err := first.Split()
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("first file: %w", err)
	case !ok || (s.Count == 1 && len(parts) == 1):
		// A whole model, whatever it is called (llama.cpp goes by the metadata).
		if len(parts) > 1 {
			return nil, nil, fmt.Errorf("%w: the first of %d files is a whole model, not the first part of a split one", ErrFormat, len(parts))
		}
		return first, WholeLayout(int(sizes[0])), nil
	case s.Index != 0:
		return nil, nil, fmt.Errorf("%w: the first file is part %d of %d: give the parts in order, the first first", ErrFormat, s.Index+1, s.Count)
	case s.Count != len(parts):
		return nil, nil, fmt.Errorf("%w: the model is in %d parts; %d given", ErrFormat, s.Count, len(parts))
	}
	b := NewBuilder()
	b.SetVersion(first.Version)
	for _, kv := range first.kvs {
		if kv.Key != SplitCountKey {
			b.Set(kv.Key, kv.Value)
		}
	}
	b.Set(SplitCountKey, ValueOf(uint16(0))) // as llama-gguf-split --merge marks the file it joins: whole
	in := map[string]int{}                   // tensor name → part
	for i, p := range parts {
		ps, ok, err := p.Split()
		switch {
		case err != nil:
			return nil, nil, fmt.Errorf("file %d: %w", i+1, err)
		case !ok:
			return nil, nil, fmt.Errorf("%w: file %d is not a part of a split model (no %s)", ErrFormat, i+1, SplitCountKey)
		case ps.Index != i || ps.Count != s.Count:
			return nil, nil, fmt.Errorf("%w: file %d of %d says it is part %d of %d", ErrFormat, i+1, s.Count, ps.Index+1, ps.Count)
		}
		for _, t := range p.tensors {
			if j, dup := in[t.Name]; dup {
				return nil, nil, fmt.Errorf("%w: tensor %q is in both part %d and part %d", ErrFormat, t.Name, j+1, i+1)
			}
			in[t.Name] = i
			dims := t.Dims
			for len(dims) > 1 && dims[len(dims)-1] == 1 {
				dims = dims[:len(dims)-1]
			}
			b.AddTensorRef(t.Name, t.Type, dims, TensorRef{Source: i, Offset: int64(p.DataOffset + t.Offset)})
		}
	}
	if len(in) != s.Tensors {
		return nil, nil, fmt.Errorf("%w: the %d parts hold %d tensors; the first says %d (%s)", ErrFormat, s.Count, len(in), s.Tensors, SplitTensorsKey)
	}
	l, err := b.Layout()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: joining %d parts: %w", ErrFormat, s.Count, err)
	}
	f, err := ParseHeader(l.Header, int64(l.Size))
	if err != nil {
		return nil, nil, fmt.Errorf("joining %d parts: %w", s.Count, err)
	}
	return f, l, nil
}
