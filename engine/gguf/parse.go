package gguf

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment of a file without general.alignment.
const DefaultAlignment = 32

// AlignmentKey is the metadata key that sets a file's data alignment (uint32).
const AlignmentKey = "general.alignment"

// Versions this package reads; it writes version 3 unless told otherwise.
const (
	MinVersion = 2
	MaxVersion = 3
)

// The fewest bytes a KV pair and a tensor info take, used to bound counts.
const (
	minKVSize     = 8 + 1 + 4 + 1         // key length, 1-byte key, type, 1-byte value
	minTensorSize = 8 + 1 + 4 + 8 + 4 + 8 // name length, 1-byte name, n_dims, one ne, type, offset
	maxDims       = 4                     // GGML_MAX_DIMS
	maxPrealloc   = 1024                  // grow past this from real entries, not a claimed count
)

// File is a parsed GGUF file. Its tensors' data are views into the bytes
// given to Parse.
type File struct {
	Version   uint32 // 2 or 3
	Alignment int    // data alignment in bytes: general.alignment, or 32
	// DataOffset is where the data section starts in the file. In a file
	// without tensors whose header is not padded (llama.cpp's vocab-only
	// files) it is the file's length.
	DataOffset int
	// HeaderSize is the length of the header: the magic, the KVs and the
	// tensor infos, before the padding up to DataOffset.
	HeaderSize int

	kvs         []KV
	kvIndex     map[string]int
	tensors     []TensorInfo
	tensorIndex map[string]int
}

// TensorInfo describes one tensor and holds its bytes.
type TensorInfo struct {
	Name string
	Type tensor.Type
	// Dims are the ggml ne: Dims[0] is the row length (the innermost,
	// contiguous dimension), then rows, and so on.
	Dims   []uint64
	Offset int    // start of the data, relative to the data section
	Size   int    // bytes of data
	Data   []byte // the tensor's bytes: a sub-slice of the file, not a copy
}

// Elements is the number of elements, the product of Dims (checked by Parse
// not to overflow an int64).
func (t TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= int64(d)
	}
	return n
}

// Parse reads a GGUF file held in data. It checks the whole header and every
// tensor's placement before returning; the File's tensor data point into
// data, which must not change while the File is used.
func Parse(data []byte) (*File, error) {
	return parse(data, len(data), true)
}

// ParseHeader reads the header of a GGUF file of size bytes from prefix, its
// first bytes, as Parse would, without the tensor data: the tensors' Data are
// nil (their Offset and Size say where they lie), and the placement of every
// tensor is checked against size. When the header goes on past prefix, the
// error wraps ErrNeedMore: read more of the file (twice as much, say) and
// call again. HeaderSize is how much of prefix it took.
func ParseHeader(prefix []byte, size int64) (*File, error) {
	if size < int64(len(prefix)) {
		return nil, fmt.Errorf("%w: a %d-byte file cannot start with %d bytes", ErrInvalid, size, len(prefix))
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("%w: a file of %d bytes", ErrUnsupported, size)
	}
	return parse(prefix, int(size), false)
}

// parse reads a file of size bytes whose first len(data) bytes are data
// (all of them when withData), pointing the tensors' Data into data when
// withData.
func parse(data []byte, size int, withData bool) (*File, error) {
	r := &reader{b: data, size: size}
	f := &File{}
	if err := f.parseHeader(r); err != nil {
		return nil, err
	}
	nTensors, err := r.count("tensor count", minTensorSize)
	if err != nil {
		return nil, err
	}
	nKVs, err := r.count("KV count", minKVSize)
	if err != nil {
		return nil, err
	}
	if err := f.parseKVs(r, nKVs); err != nil {
		return nil, err
	}
	if err := f.setAlignment(); err != nil {
		return nil, err
	}
	if err := f.parseTensorInfos(r, nTensors); err != nil {
		return nil, err
	}
	f.HeaderSize = r.off
	if !withData {
		data = nil
	}
	if err := f.placeTensors(data, size, r.off); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *File) parseHeader(r *reader) error {
	if err := r.need(len(Magic), "magic"); err != nil {
		return err
	}
	if string(r.b[:len(Magic)]) != Magic {
		return errorf(ErrFormat, 0, "magic %q is not %q", r.b[:len(Magic)], Magic)
	}
	r.off = len(Magic)
	v, err := r.u32("version")
	if err != nil {
		return err
	}
	swapped := bits.ReverseBytes32(v)
	switch {
	case v == 1:
		return errorf(ErrUnsupported, 4, "GGUF v1 is not supported")
	case v > MaxVersion && swapped >= 1 && swapped <= MaxVersion:
		return errorf(ErrUnsupported, 4, "big-endian GGUF is not supported (version bytes read %#x)", v)
	case v < MinVersion || v > MaxVersion:
		return errorf(ErrUnsupported, 4, "GGUF v%d is not supported (only v%d and v%d)", v, MinVersion, MaxVersion)
	}
	f.Version = v
	return nil
}

func (f *File) parseKVs(r *reader, n int) error {
	f.kvs = make([]KV, 0, min(n, maxPrealloc))
	f.kvIndex = make(map[string]int, min(n, maxPrealloc))
	for i := range n {
		at := r.off
		key, err := r.name("key")
		if err != nil {
			return fmt.Errorf("KV %d: %w", i, err)
		}
		if j, dup := f.kvIndex[key]; dup {
			return fmt.Errorf("KV %d: %w", i, errorf(ErrFormat, at, "duplicate key %q (first is KV %d)", key, j))
		}
		t, err := r.valueType("value type")
		if err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
		v, err := r.value(t, 0)
		if err != nil {
			return fmt.Errorf("key %q: %w", key, err)
		}
		f.kvIndex[key] = len(f.kvs)
		f.kvs = append(f.kvs, KV{Key: key, Value: v})
	}
	return nil
}

func (f *File) setAlignment() error {
	f.Alignment = DefaultAlignment
	v, ok := f.Lookup(AlignmentKey)
	if !ok {
		return nil
	}
	if v.Type() != TypeUint32 {
		return fmt.Errorf("%w: %s is %s, want uint32", ErrFormat, AlignmentKey, v.Type())
	}
	a := v.bits
	if a == 0 || a&(a-1) != 0 {
		return fmt.Errorf("%w: %s %d is not a power of two", ErrFormat, AlignmentKey, a)
	}
	f.Alignment = int(a)
	return nil
}

func (f *File) parseTensorInfos(r *reader, n int) error {
	f.tensors = make([]TensorInfo, 0, min(n, maxPrealloc))
	f.tensorIndex = make(map[string]int, min(n, maxPrealloc))
	for i := range n {
		at := r.off
		name, err := r.name("tensor name")
		if err != nil {
			return fmt.Errorf("tensor %d: %w", i, err)
		}
		if j, dup := f.tensorIndex[name]; dup {
			return fmt.Errorf("tensor %d: %w", i, errorf(ErrFormat, at, "duplicate tensor name %q (first is tensor %d)", name, j))
		}
		t, err := parseTensorInfo(r, name)
		if err != nil {
			return fmt.Errorf("tensor %d %q: %w", i, name, err)
		}
		f.tensorIndex[name] = len(f.tensors)
		f.tensors = append(f.tensors, t)
	}
	return nil
}

// parseTensorInfo reads the rest of a tensor info after its name and sizes
// the tensor. Offset is still relative to the data section.
func parseTensorInfo(r *reader, name string) (TensorInfo, error) {
	t := TensorInfo{Name: name}
	at := r.off
	nDims, err := r.u32("n_dims")
	if err != nil {
		return t, err
	}
	if nDims < 1 || nDims > maxDims {
		return t, errorf(ErrFormat, at, "n_dims %d is not in 1..%d", nDims, maxDims)
	}
	t.Dims = make([]uint64, nDims)
	elements := uint64(1)
	for d := range t.Dims {
		at := r.off
		ne, err := r.u64("ne")
		if err != nil {
			return t, err
		}
		if ne == 0 {
			return t, errorf(ErrFormat, at, "ne[%d] is 0", d)
		}
		hi, lo := bits.Mul64(elements, ne)
		if hi != 0 || lo > math.MaxInt64 {
			return t, errorf(ErrFormat, at, "element count overflows at ne[%d] = %d", d, ne)
		}
		elements = lo
		t.Dims[d] = ne
	}
	at = r.off
	typ, err := r.u32("type")
	if err != nil {
		return t, err
	}
	t.Type = tensor.Type(typ)
	if !tensor.Known(t.Type) {
		return t, errorf(ErrUnsupported, at, "unknown tensor type %d", typ)
	}
	block, err := tensor.BlockSize(t.Type)
	if err != nil {
		return t, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	if t.Dims[0]%uint64(block) != 0 {
		return t, errorf(ErrFormat, at, "row length ne[0] = %d is not a multiple of %v's block size %d", t.Dims[0], t.Type, block)
	}
	at = r.off
	off, err := r.u64("offset")
	if err != nil {
		return t, err
	}
	// Sizes and offsets past the whole file fail later; cap them here so the
	// arithmetic below stays inside int.
	limit := uint64(r.size)
	if off > limit {
		return t, errorf(ErrTruncated, at, "offset %d is past the end of the %d-byte file", off, limit)
	}
	t.Offset = int(off)
	if t.Dims[0] > limit*uint64(block) {
		return t, errorf(ErrTruncated, at, "%v row of %d elements is larger than the %d-byte file", t.Type, t.Dims[0], limit)
	}
	rowBytes, err := tensor.RowBytes(t.Type, int(t.Dims[0]))
	if err != nil {
		return t, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	hi, size := bits.Mul64(uint64(rowBytes), elements/t.Dims[0])
	if hi != 0 || size > limit {
		return t, errorf(ErrTruncated, at, "%v tensor of %d elements is larger than the %d-byte file", t.Type, elements, limit)
	}
	t.Size = int(size)
	return t, nil
}

// placeTensors fixes the data section of a file of size bytes after the
// header ending at headerEnd and checks each tensor's range in it: aligned,
// inside, and not overlapping another tensor. It points each tensor's Data
// into data, unless data is nil.
func (f *File) placeTensors(data []byte, size, headerEnd int) error {
	f.DataOffset = alignUp(headerEnd, f.Alignment)
	if len(f.tensors) == 0 {
		// Vocab-only files from llama.cpp end right after the header, with
		// no padding: their data section is empty.
		f.DataOffset = min(f.DataOffset, size)
		return nil
	}
	if f.DataOffset > size {
		return errorf(ErrTruncated, headerEnd, "file ends before the data section at byte %d", f.DataOffset)
	}
	section := size - f.DataOffset
	for i := range f.tensors {
		t := &f.tensors[i]
		if t.Offset%f.Alignment != 0 {
			return fmt.Errorf("%w: tensor %q offset %d is not a multiple of the alignment %d", ErrFormat, t.Name, t.Offset, f.Alignment)
		}
		if t.Offset > section || t.Size > section-t.Offset {
			return fmt.Errorf("%w: tensor %q bytes [%d, %d) of the data section end past its %d bytes",
				ErrTruncated, t.Name, t.Offset, t.Offset+t.Size, section)
		}
		if data != nil {
			start := f.DataOffset + t.Offset
			t.Data = data[start : start+t.Size : start+t.Size]
		}
	}
	// Sorted by offset, each tensor must end before the next begins.
	order := make([]int, len(f.tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(f.tensors[a].Offset, f.tensors[b].Offset) })
	for i := 1; i < len(order); i++ {
		a, b := &f.tensors[order[i-1]], &f.tensors[order[i]]
		if a.Offset+a.Size > b.Offset {
			return fmt.Errorf("%w: tensors %q [%d, %d) and %q [%d, %d) overlap",
				ErrFormat, a.Name, a.Offset, a.Offset+a.Size, b.Name, b.Offset, b.Offset+b.Size)
		}
	}
	return nil
}

// alignUp rounds n up to a multiple of align (a power of two).
func alignUp(n, align int) int { return (n + align - 1) &^ (align - 1) }
