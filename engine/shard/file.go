package shard

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// The metadata keys of a part's file.
const (
	keyIndex  = "wasmlm.shard.index"  // uint32: which part
	keyCount  = "wasmlm.shard.count"  // uint32: of how many
	keySource = "wasmlm.shard.source" // uint64: the whole model's fingerprint
	keyRows   = "wasmlm.shard.rows"   // int32 array: [lo, hi) of the vocab, q, kv, hidden and model axes
)

// File returns part index of count of the GGUF model in data as a GGUF file
// of its own, for a worker that should never hold the whole model: the
// file's metadata (the vocabulary included), the rows of every split tensor
// that part holds and the other tensors whole (see Cut), and the
// wasmlm.shard.* keys that say which part it is, which rows it holds and
// which model it was cut from. Tensors the engine does not use are left
// out. Load reads the result as the part Cut returns, with the same weights.
func File(data []byte, index, count int) ([]byte, error) {
	if _, _, ok := FileInfo(data); ok {
		return nil, fmt.Errorf("%w: the file is already a part of a split model", ErrSplit)
	}
	m, err := engine.LoadGGUF(data)
	if err != nil {
		return nil, err
	}
	p, err := newPlan(m.Config(), index, count)
	if err != nil {
		return nil, err
	}
	f, err := gguf.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", engine.ErrFormat, err)
	}
	b := gguf.NewBuilder()
	b.SetVersion(f.Version)
	for _, kv := range f.KVs() { // general.alignment among them, when the file sets one
		b.Set(kv.Key, kv.Value)
	}
	b.Set(keyIndex, gguf.ValueOf(uint32(index)))
	b.Set(keyCount, gguf.ValueOf(uint32(count)))
	b.Set(keySource, gguf.ValueOf(m.Fingerprint()))
	b.Set(keyRows, gguf.ArrayOf(rowsArray(p.rows)))
	for _, t := range m.Tensors() {
		ti, ok := f.Tensor(t.Name)
		if !ok {
			continue // an optional tensor the file does not have
		}
		dims, bytes := ti.Dims, ti.Data
		if t.Split {
			if dims, bytes, err = sliceRows(ti, p.rows.Rows(t.Axis)); err != nil {
				return nil, err
			}
		}
		b.AddTensor(ti.Name, ti.Type, dims, bytes)
	}
	out, err := b.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%w: writing part %d of %d: %w", engine.ErrFormat, index, count, err)
	}
	return out, nil
}

// sliceRows returns the dims and bytes of rows s of a matrix, or of
// elements s of a vector. The engine has checked the shapes of every tensor
// it uses against the whole model, so s lies inside.
func sliceRows(t gguf.TensorInfo, s engine.Span) ([]uint64, []byte, error) {
	if len(t.Dims) == 1 {
		eb, err := tensor.RowBytes(t.Type, 1)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: vector %s (%v) cannot be split by elements: %w", engine.ErrUnsupported, t.Name, t.Type, err)
		}
		return []uint64{uint64(s.Len())}, t.Data[s.Lo*eb : s.Hi*eb], nil
	}
	rb, err := tensor.RowBytes(t.Type, int(t.Dims[0]))
	if err != nil || len(t.Dims) != 2 {
		return nil, nil, fmt.Errorf("%w: tensor %s (%v %v) cannot give rows [%d, %d)", engine.ErrFormat, t.Name, t.Type, t.Dims, s.Lo, s.Hi)
	}
	return []uint64{t.Dims[0], uint64(s.Len())}, t.Data[s.Lo*rb : s.Hi*rb], nil
}

// rowsArray lists a part's rows as the keyRows array.
func rowsArray(p engine.Part) []int32 {
	var out []int32
	for _, s := range []engine.Span{p.Vocab, p.Q, p.KV, p.Hidden, p.Model} {
		out = append(out, int32(s.Lo), int32(s.Hi))
	}
	return out
}

// header is what a part's file says about itself.
type header struct {
	index, count int
	source       uint64
	rows         engine.Part
}

// FileInfo reports whether data is a part's file (File), and which part of
// how many. It reads only the header; Load checks the rest.
func FileInfo(data []byte) (index, count int, ok bool) {
	h, err := readHeader(data)
	if err != nil {
		return 0, 0, false
	}
	return h.index, h.count, true
}

// readHeader reads the wasmlm.shard.* keys of a part's file.
func readHeader(data []byte) (header, error) {
	f, err := gguf.Parse(data)
	if err != nil {
		return header{}, fmt.Errorf("%w: %w", engine.ErrFormat, err)
	}
	if _, ok := f.Lookup(keyIndex); !ok {
		return header{}, fmt.Errorf("%w: not a part of a split model (no %s key): load it with engine.Load", ErrSplit, keyIndex)
	}
	index, err1 := f.Uint32(keyIndex)
	count, err2 := f.Uint32(keyCount)
	source, err3 := f.Uint64(keySource)
	rows, err4 := f.Int32s(keyRows)
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			return header{}, fmt.Errorf("%w: part file: %w", engine.ErrFormat, err)
		}
	}
	if len(rows) != 10 {
		return header{}, fmt.Errorf("%w: part file: %s holds %d values, want 10", engine.ErrFormat, keyRows, len(rows))
	}
	span := func(i int) engine.Span { return engine.Span{Lo: int(rows[2*i]), Hi: int(rows[2*i+1])} }
	h := header{index: int(index), count: int(count), source: source}
	h.rows = engine.Part{Vocab: span(0), Q: span(1), KV: span(2), Hidden: span(3), Model: span(4)}
	return h, nil
}
