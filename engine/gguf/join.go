package gguf

import (
	"fmt"
	"strings"
)

// The metadata keys of a split GGUF's parts, as llama.cpp's gguf-split
// writes them.
const (
	SplitNoKey      = "split.no"            // uint16: which part, from 0
	SplitCountKey   = "split.count"         // uint16: of how many
	SplitTensorsKey = "split.tensors.count" // int32: the tensors of all parts
)

// Join describes the one file that the parts of a split GGUF (as
// llama-gguf-split writes them, in order; their headers are enough, as
// ParseHeader reads them) make together: the first part's metadata without
// the split.* keys, then every part's tensors in order. It returns that
// file's header (a File without data) and its Layout, whose sources are the
// parts. A single file that is not split joins to itself: its own header
// and WholeLayout(size).
func Join(parts []*File, sizes []int64) (*File, *Layout, error) {
	if len(parts) == 0 || len(parts) != len(sizes) {
		return nil, nil, fmt.Errorf("%w: %d parts, %d sizes", ErrInvalid, len(parts), len(sizes))
	}
	first := parts[0]
	count, err := splitCount(first)
	if err != nil {
		return nil, nil, err
	}
	if count == 0 && len(parts) == 1 {
		return first, WholeLayout(int(sizes[0])), nil
	}
	if count != len(parts) {
		return nil, nil, fmt.Errorf("%w: the first part says the model is in %d parts; %d given", ErrFormat, max(count, 1), len(parts))
	}
	want, err := first.Int32(SplitTensorsKey)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: first part: %w", ErrFormat, err)
	}
	b := NewBuilder()
	b.SetVersion(first.Version)
	for _, kv := range first.kvs {
		if !strings.HasPrefix(kv.Key, "split.") {
			b.Set(kv.Key, kv.Value)
		}
	}
	total := 0
	for i, p := range parts {
		no, err := p.Uint32(SplitNoKey)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: part %d: %w", ErrFormat, i+1, err)
		}
		if c, _ := splitCount(p); int(no) != i || c != count {
			return nil, nil, fmt.Errorf("%w: file %d of %d says it is part %d of %d", ErrFormat, i+1, count, no+1, c)
		}
		for _, t := range p.tensors {
			b.AddTensorRef(t.Name, t.Type, t.Dims, TensorRef{Source: i, Offset: int64(p.DataOffset + t.Offset)})
		}
		total += len(p.tensors)
	}
	if int(want) != total {
		return nil, nil, fmt.Errorf("%w: the parts hold %d tensors; the first part says %d", ErrFormat, total, want)
	}
	l, err := b.Layout()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: joining %d parts: %w", ErrFormat, count, err)
	}
	f, err := ParseHeader(l.Header, int64(l.Size))
	if err != nil {
		return nil, nil, fmt.Errorf("joining %d parts: %w", count, err)
	}
	return f, l, nil
}

// splitCount is the split.count of f: 0 when f is not a part of a split
// GGUF.
func splitCount(f *File) (int, error) {
	if _, ok := f.Lookup(SplitCountKey); !ok {
		return 0, nil
	}
	n, err := f.Uint32(SplitCountKey)
	if err != nil || n == 0 || n > 9999 {
		return 0, fmt.Errorf("%w: %s is %d (%v)", ErrFormat, SplitCountKey, n, err)
	}
	return int(n), nil
}
