package shard

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

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
	f, err := gguf.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", engine.ErrFormat, err)
	}
	if err := m.SplitError(); err != nil {
		return nil, err
	}
	b, err := partBuilder(f, m.Config(), m.Tensors(), index, count, m.Fingerprint(), func(b *gguf.Builder, ti gguf.TensorInfo, dims []uint64, ranges []byteRange) {
		data := ti.Data[ranges[0].lo : ranges[0].lo+ranges[0].n]
		if len(ranges) > 1 { // a fused tensor's rows of each piece, one after another
			data = nil
			for _, r := range ranges {
				data = append(data, ti.Data[r.lo:r.lo+r.n]...)
			}
		}
		b.AddTensor(ti.Name, ti.Type, dims, data)
	})
	if err != nil {
		return nil, err
	}
	out, err := b.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%w: writing part %d of %d: %w", engine.ErrFormat, index, count, err)
	}
	return out, nil
}

// Layout is the layout of part index of count of the GGUF model whose
// header is f (gguf.ParseHeader's; the model's whole file, or the file that
// gguf.Join makes of a split GGUF's parts) from that file's bytes (source 0;
// compose with Join's layout through gguf.Layout.Through): the file File
// would cut, for a host that reads only the bytes a part needs. source
// identifies the whole model (HeaderFingerprint), so that parts laid out
// from different models refuse to work together; every part of one model
// must be given the same.
func Layout(f *gguf.File, index, count int, source uint64) (*gguf.Layout, error) {
	if _, ok := f.Lookup(keyIndex); ok {
		return nil, fmt.Errorf("%w: the file is already a part of a split model", ErrSplit)
	}
	h, err := engine.ReadHeader(f)
	if err != nil {
		return nil, err
	}
	if err := h.SplitError(); err != nil {
		return nil, err
	}
	b, err := partBuilder(f, h.Config(), h.Tensors(), index, count, source, func(b *gguf.Builder, ti gguf.TensorInfo, dims []uint64, ranges []byteRange) {
		pieces := make([]gguf.TensorPiece, len(ranges))
		for i, r := range ranges {
			pieces[i] = gguf.TensorPiece{Source: 0, Offset: int64(f.DataOffset + ti.Offset + r.lo), Len: r.n}
		}
		b.AddTensorPieces(ti.Name, ti.Type, dims, pieces)
	})
	if err != nil {
		return nil, err
	}
	l, err := b.Layout()
	if err != nil {
		return nil, fmt.Errorf("%w: laying out part %d of %d: %w", engine.ErrFormat, index, count, err)
	}
	return l, nil
}

// HeaderFingerprint identifies a model by its header bytes (every file's,
// for a split GGUF, in order) and its size, for Layout's source: FNV-1a,
// as engine.Model.Fingerprint is, which needs the weights.
func HeaderFingerprint(headers [][]byte, size int64) uint64 {
	h := fnv.New64a()
	for _, b := range headers {
		h.Write(b)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(size))
	h.Write(n[:])
	return h.Sum64()
}

// byteRange is n bytes of a tensor's, from lo.
type byteRange struct{ lo, n int }

// partBuilder starts the file of part index of count of the model of config
// c with header f: f's metadata, the wasmlm.shard.* keys, and for every
// tensor of tensors that f has, add(b, its info, its dims in the part, the
// ranges of the tensor's bytes that the part's are, in order: one, but for
// a fused tensor, one per piece).
func partBuilder(f *gguf.File, c engine.Config, tensors []engine.TensorSplit, index, count int, source uint64,
	add func(b *gguf.Builder, ti gguf.TensorInfo, dims []uint64, ranges []byteRange)) (*gguf.Builder, error) {
	p, err := newPlan(c, index, count)
	if err != nil {
		return nil, err
	}
	b := gguf.NewBuilder()
	b.SetVersion(f.Version)
	for _, kv := range f.KVs() { // general.alignment among them, when the file sets one
		b.Set(kv.Key, kv.Value)
	}
	b.Set(keyIndex, gguf.ValueOf(uint32(index)))
	b.Set(keyCount, gguf.ValueOf(uint32(count)))
	b.Set(keySource, gguf.ValueOf(source))
	b.Set(keyRows, gguf.ArrayOf(rowsArray(p.rows)))
	for _, t := range tensors {
		ti, ok := f.Tensor(t.Name)
		if !ok {
			continue // an optional tensor the file does not have
		}
		dims, ranges, err := partRanges(ti, t, c, p.rows)
		if err != nil {
			return nil, err
		}
		add(b, ti, dims, ranges)
	}
	return b, nil
}

// partRanges is what a part holding rows of a model of config c holds of
// tensor t (whose info is ti): its dims, and the ranges of its bytes in the
// tensor's: the whole tensor, its rows of a split one, or its rows of each
// piece of a fused one (see engine.TensorSplit).
func partRanges(ti gguf.TensorInfo, t engine.TensorSplit, c engine.Config, rows engine.Part) ([]uint64, []byteRange, error) {
	switch {
	case !t.Split:
		return ti.Dims, []byteRange{{0, ti.Size}}, nil
	case t.Fused == nil:
		dims, lo, n, err := sliceRows(ti, rows.Rows(t.Axis))
		return dims, []byteRange{{lo, n}}, err
	}
	var ranges []byteRange
	held, offset := 0, 0 // the part's rows of the pieces so far, the whole's
	for _, a := range t.Fused {
		s := rows.Rows(a)
		_, lo, n, err := sliceRows(ti, engine.Span{Lo: offset + s.Lo, Hi: offset + s.Hi})
		if err != nil {
			return nil, nil, err
		}
		ranges = append(ranges, byteRange{lo, n})
		held += s.Len()
		offset += c.AxisLen(a)
	}
	if len(ti.Dims) != 2 || ti.Dims[1] != uint64(offset) {
		return nil, nil, fmt.Errorf("%w: tensor %s (%v) is not the %d rows of its pieces", engine.ErrFormat, ti.Name, ti.Dims, offset)
	}
	return []uint64{ti.Dims[0], uint64(held)}, ranges, nil
}

// sliceRows returns the dims of rows s of a matrix, or of elements s of a
// vector, and where their bytes lie in the tensor's: from lo, n bytes. The
// rows must lie inside the tensor.
func sliceRows(t gguf.TensorInfo, s engine.Span) (dims []uint64, lo, n int, err error) {
	if len(t.Dims) == 1 {
		eb, err := tensor.RowBytes(t.Type, 1)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("%w: vector %s (%v) cannot be split by elements: %w", engine.ErrUnsupported, t.Name, t.Type, err)
		}
		if s.Lo < 0 || s.Hi > int(t.Dims[0]) {
			return nil, 0, 0, fmt.Errorf("%w: vector %s of %d elements has no elements [%d, %d)", engine.ErrFormat, t.Name, t.Dims[0], s.Lo, s.Hi)
		}
		return []uint64{uint64(s.Len())}, s.Lo * eb, s.Len() * eb, nil
	}
	rb, err := tensor.RowBytes(t.Type, int(t.Dims[0]))
	if err != nil || len(t.Dims) != 2 || s.Lo < 0 || s.Hi > int(t.Dims[1]) {
		return nil, 0, 0, fmt.Errorf("%w: tensor %s (%v %v) cannot give rows [%d, %d)", engine.ErrFormat, t.Name, t.Type, t.Dims, s.Lo, s.Hi)
	}
	return []uint64{t.Dims[0], uint64(s.Len())}, s.Lo * rb, s.Len() * rb, nil
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

// PartBytes is about the size of part index of count's file (Layout's
// Size) without laying it out: its tensors' bytes, aligned, after f's
// header. For choosing how many parts a model needs.
func PartBytes(f *gguf.File, index, count int) (int64, error) {
	h, err := engine.ReadHeader(f)
	if err != nil {
		return 0, err
	}
	if err := h.SplitError(); err != nil {
		return 0, err
	}
	p, err := newPlan(h.Config(), index, count)
	if err != nil {
		return 0, err
	}
	align := int64(f.Alignment)
	n := int64(f.DataOffset) + 1024 // the header, and the wasmlm.shard.* keys
	for _, t := range h.Tensors() {
		ti, ok := f.Tensor(t.Name)
		if !ok {
			continue
		}
		_, ranges, err := partRanges(ti, t, h.Config(), p.rows)
		if err != nil {
			return 0, err
		}
		size := 0
		for _, r := range ranges {
			size += r.n
		}
		n += (int64(size) + align - 1) / align * align
	}
	return n, nil
}
