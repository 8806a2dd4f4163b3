package gguf

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"unicode/utf8"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Builder assembles a GGUF file in memory. Its methods record the first
// error and make the later calls no-ops; Bytes and WriteTo report it, so a
// test can add many values and check one error.
//
// Tensors are laid out in the order added, each at an offset aligned to the
// file's alignment, as llama.cpp lays them out.
type Builder struct {
	version     uint32
	kvs         []KV
	kvIndex     map[string]int
	tensors     []TensorInfo
	tensorIndex map[string]int
	refs        [][]TensorPiece // per tensor: where its bytes lie (AddTensorRef, AddTensorPieces), or nil
	err         error
}

// NewBuilder returns a Builder for an empty version-3 file.
func NewBuilder() *Builder {
	return &Builder{version: MaxVersion, kvIndex: map[string]int{}, tensorIndex: map[string]int{}}
}

func (b *Builder) fail(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
}

// SetVersion sets the version written: 3 (the default) or 2, which has the
// same encoding.
func (b *Builder) SetVersion(v uint32) {
	if v < MinVersion || v > MaxVersion {
		b.fail("version %d is not %d or %d", v, MinVersion, MaxVersion)
		return
	}
	b.version = v
}

// SetAlignment sets the data alignment by setting general.alignment; it
// must be a power of two that fits a uint32.
func (b *Builder) SetAlignment(align int) {
	if align <= 0 || align > math.MaxUint32 || align&(align-1) != 0 {
		b.fail("alignment %d is not a power of two in uint32 range", align)
		return
	}
	b.Set(AlignmentKey, ValueOf(uint32(align)))
}

// Set sets key to v: a new key goes last, an existing one keeps its place.
// Values are written as given, so a test can write a general.alignment that
// Parse must refuse (the layout then uses the default alignment).
func (b *Builder) Set(key string, v Value) {
	if b.err != nil {
		return
	}
	if key == "" || !utf8.ValidString(key) {
		b.fail("key %q is empty or not valid UTF-8", key)
		return
	}
	if err := checkValue(v, 0); err != nil {
		b.fail("key %q: %v", key, err)
		return
	}
	if i, ok := b.kvIndex[key]; ok {
		b.kvs[i].Value = v
		return
	}
	b.kvIndex[key] = len(b.kvs)
	b.kvs = append(b.kvs, KV{Key: key, Value: v})
}

// checkValue checks what the Value constructors cannot: that the elements of
// an array of arrays are arrays, nested no deeper than Parse reads.
func checkValue(v Value, depth int) error {
	if v.typ != TypeArray {
		return nil
	}
	if depth >= maxNesting {
		return fmt.Errorf("arrays nested more than %d deep", maxNesting)
	}
	elems, ok := v.arr.([]Value)
	if !ok {
		return nil
	}
	for i, e := range elems {
		if e.typ != TypeArray {
			return fmt.Errorf("element %d of an array of arrays is %s", i, e.typ)
		}
		if err := checkValue(e, depth+1); err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
	}
	return nil
}

// AddTensor adds a tensor of type t with ggml dims (row length first) whose
// bytes are data; len(data) must be what tensor.RowBytes gives for the
// shape. The bytes are kept, not copied, until Bytes or WriteTo.
func (b *Builder) AddTensor(name string, t tensor.Type, dims []uint64, data []byte) {
	b.addTensor(name, t, dims, data, nil)
}

// addTensor adds a tensor with its bytes (data) or, for a ref, with none.
func (b *Builder) addTensor(name string, t tensor.Type, dims []uint64, data []byte, ref []TensorPiece) {
	if b.err != nil {
		return
	}
	if name == "" || !utf8.ValidString(name) {
		b.fail("tensor name %q is empty or not valid UTF-8", name)
		return
	}
	if _, dup := b.tensorIndex[name]; dup {
		b.fail("duplicate tensor %q", name)
		return
	}
	if len(dims) < 1 || len(dims) > maxDims {
		b.fail("tensor %q has %d dims, want 1..%d", name, len(dims), maxDims)
		return
	}
	rows := uint64(1)
	for _, d := range dims[1:] {
		hi, lo := bits.Mul64(rows, d)
		if d == 0 || hi != 0 {
			b.fail("tensor %q dims %v: a dim is 0 or the shape overflows", name, dims)
			return
		}
		rows = lo
	}
	if dims[0] == 0 || dims[0] > math.MaxInt {
		b.fail("tensor %q row length %d is out of range", name, dims[0])
		return
	}
	rowBytes, err := tensor.RowBytes(t, int(dims[0]))
	if err != nil {
		b.fail("tensor %q: %v", name, err)
		return
	}
	hi, need := bits.Mul64(uint64(rowBytes), rows)
	switch {
	case hi != 0 || need > math.MaxInt:
		b.fail("tensor %q: %v %v is too large", name, t, dims)
		return
	case ref == nil && need != uint64(len(data)):
		b.fail("tensor %q: %v %v does not take the %d bytes given", name, t, dims, len(data))
		return
	case len(ref) == 1 && ref[0].Len == wholeTensor:
		ref[0].Len = int(need)
	case ref != nil:
		n := uint64(0)
		for _, p := range ref {
			n += uint64(p.Len)
		}
		if n != need {
			b.fail("tensor %q: %v %v does not take the %d bytes of its pieces", name, t, dims, n)
			return
		}
	}
	b.tensorIndex[name] = len(b.tensors)
	b.tensors = append(b.tensors, TensorInfo{Name: name, Type: t, Dims: append([]uint64(nil), dims...), Size: int(need), Data: data})
	b.refs = append(b.refs, ref)
}

// alignment is the layout alignment: general.alignment when it is a valid
// uint32, else the default.
func (b *Builder) alignment() int {
	if i, ok := b.kvIndex[AlignmentKey]; ok {
		v := b.kvs[i].Value
		if a := v.bits; v.typ == TypeUint32 && a != 0 && a&(a-1) == 0 {
			return int(a)
		}
	}
	return DefaultAlignment
}

// Bytes returns the encoded file, or the first error a method recorded. The
// file is allocated once, at its final size (tensor data can be most of a
// model: a growing buffer would briefly need twice that).
func (b *Builder) Bytes() ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	for i, ref := range b.refs {
		if ref != nil {
			return nil, fmt.Errorf("%w: tensor %q has a source, not bytes: use Layout", ErrInvalid, b.tensors[i].Name)
		}
	}
	head := b.header()
	align := b.alignment()
	if len(b.tensors) == 0 {
		return head, nil // as llama.cpp writes vocab-only files: no padding
	}
	dataStart, offset := alignUp(len(head), align), 0
	for _, t := range b.tensors {
		offset = alignUp(offset+t.Size, align)
	}
	out := make([]byte, dataStart+offset) // zeroed: the padding
	copy(out, head)
	offset = 0
	for _, t := range b.tensors {
		copy(out[dataStart+offset:], t.Data)
		offset = alignUp(offset+t.Size, align)
	}
	return out, nil
}

// WriteTo writes the encoded file to w.
func (b *Builder) WriteTo(w io.Writer) (int64, error) {
	data, err := b.Bytes()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(data)
	return int64(n), err
}

func appendString(buf []byte, s string) []byte {
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(s)))
	return append(buf, s...)
}

// appendValue appends v's encoding without its type tag.
func appendValue(buf []byte, v Value) []byte {
	le := binary.LittleEndian
	switch v.typ {
	case TypeString:
		return appendString(buf, v.str)
	case TypeArray:
		buf = le.AppendUint32(buf, uint32(v.elem))
		buf = le.AppendUint64(buf, uint64(v.Len()))
		for i := range v.Len() {
			buf = appendValue(buf, v.index(i))
		}
		return buf
	}
	switch v.typ.size() {
	case 1:
		return append(buf, byte(v.bits))
	case 2:
		return le.AppendUint16(buf, uint16(v.bits))
	case 4:
		return le.AppendUint32(buf, uint32(v.bits))
	}
	return le.AppendUint64(buf, v.bits)
}
