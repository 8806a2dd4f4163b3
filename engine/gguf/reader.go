package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// maxNesting bounds how deep arrays of arrays may nest. Files in the wild
// do not nest at all; the bound keeps recursion depth independent of the
// file size.
const maxNesting = 8

// reader walks the header of a file. Every read checks the bytes left
// first; the methods return errors that name the byte offset.
type reader struct {
	b   []byte
	off int
	// size is the whole file's length: len(b), or more when b is only the
	// first bytes of the file (ParseHeader). A read past b but within size
	// fails with ErrNeedMore rather than ErrTruncated.
	size int
}

func (r *reader) left() int { return len(r.b) - r.off }

// shortBy is the error of a read of n bytes (of what, at the current
// offset) that b cannot satisfy: ErrNeedMore when the file goes on past b
// far enough, else ErrTruncated.
func (r *reader) shortBy(n int, what string, format string, args ...any) error {
	if r.off+n <= r.size && n >= 0 {
		return errorf(ErrNeedMore, r.off, "%s needs bytes up to %d, %d given", what, r.off+n, len(r.b))
	}
	return errorf(ErrTruncated, r.off, format, args...)
}

// errorf returns err wrapping sentinel, citing byte offset at.
func errorf(sentinel error, at int, format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", sentinel, at, fmt.Sprintf(format, args...))
}

func (r *reader) need(n int, what string) error {
	if r.left() < n {
		return r.shortBy(n, what, "%s needs %d bytes, %d left", what, n, r.left())
	}
	return nil
}

func (r *reader) u32(what string) (uint32, error) {
	if err := r.need(4, what); err != nil {
		return 0, err
	}
	x := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return x, nil
}

func (r *reader) u64(what string) (uint64, error) {
	if err := r.need(8, what); err != nil {
		return 0, err
	}
	x := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return x, nil
}

// count reads a u64 count of things each at least minSize bytes long and
// checks that the rest of the file could hold them, so that a count can be
// used to size an allocation.
func (r *reader) count(what string, minSize int) (int, error) {
	at := r.off
	n, err := r.u64(what)
	if err != nil {
		return 0, err
	}
	if n > uint64(r.left()/minSize) {
		if n <= uint64((r.size-r.off)/minSize) {
			return 0, errorf(ErrNeedMore, at, "%s is %d, which needs more than the %d bytes given", what, n, len(r.b))
		}
		return 0, errorf(ErrTruncated, at, "%s is %d, but %d bytes left hold at most %d", what, n, r.size-r.off, (r.size-r.off)/minSize)
	}
	return int(n), nil
}

// bytes reads a GGUF string (u64 length, bytes) without copying it.
func (r *reader) bytes(what string) ([]byte, error) {
	at := r.off
	if r.left() < 8 {
		return nil, r.shortBy(8, what+" length", "%s length needs 8 bytes, %d left", what, r.left())
	}
	n := binary.LittleEndian.Uint64(r.b[r.off:])
	if n > uint64(r.left()-8) {
		if n <= uint64(r.size-r.off-8) {
			return nil, errorf(ErrNeedMore, at, "%s of %d bytes goes past the %d bytes given", what, n, len(r.b))
		}
		return nil, errorf(ErrTruncated, at, "%s length %d exceeds the %d bytes left", what, n, r.size-r.off-8)
	}
	r.off += 8
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s, nil
}

// name reads a key or tensor name: non-empty, valid UTF-8.
func (r *reader) name(what string) (string, error) {
	at := r.off
	b, err := r.bytes(what)
	if err != nil {
		return "", err
	}
	if len(b) == 0 {
		return "", errorf(ErrFormat, at, "empty %s", what)
	}
	if !utf8.Valid(b) {
		return "", errorf(ErrFormat, at, "%s %q is not valid UTF-8", what, b[:min(len(b), 64)])
	}
	return string(b), nil
}

// valueType reads a u32 value type and checks that GGUF defines it.
func (r *reader) valueType(what string) (ValueType, error) {
	at := r.off
	t, err := r.u32(what)
	if err != nil {
		return 0, err
	}
	if !ValueType(t).valid() {
		return 0, errorf(ErrUnsupported, at, "unknown %s %d", what, t)
	}
	return ValueType(t), nil
}

// value reads one value of type t; depth counts enclosing arrays.
func (r *reader) value(t ValueType, depth int) (Value, error) {
	switch t {
	case TypeString:
		b, err := r.bytes("string")
		if err != nil {
			return Value{}, err
		}
		return Value{typ: TypeString, str: string(b)}, nil
	case TypeArray:
		return r.array(depth)
	}
	at := r.off
	size := t.size()
	if err := r.need(size, t.String()); err != nil {
		return Value{}, err
	}
	p := r.b[r.off : r.off+size]
	r.off += size
	v := Value{typ: t}
	switch t {
	case TypeUint8:
		v.bits = uint64(p[0])
	case TypeInt8:
		v.bits = uint64(int64(int8(p[0])))
	case TypeBool:
		if p[0] > 1 {
			return Value{}, errorf(ErrFormat, at, "bool value %d is not 0 or 1", p[0])
		}
		v.bits = uint64(p[0])
	case TypeUint16:
		v.bits = uint64(binary.LittleEndian.Uint16(p))
	case TypeInt16:
		v.bits = uint64(int64(int16(binary.LittleEndian.Uint16(p))))
	case TypeUint32, TypeFloat32:
		v.bits = uint64(binary.LittleEndian.Uint32(p))
	case TypeInt32:
		v.bits = uint64(int64(int32(binary.LittleEndian.Uint32(p))))
	default: // TypeUint64, TypeInt64, TypeFloat64
		v.bits = binary.LittleEndian.Uint64(p)
	}
	return v, nil
}

// array reads an array value (element type, count, elements) into a typed
// slice. The count is checked against the bytes left before allocating.
func (r *reader) array(depth int) (Value, error) {
	at := r.off
	if depth >= maxNesting {
		return Value{}, errorf(ErrUnsupported, at, "arrays nested more than %d deep", maxNesting)
	}
	elem, err := r.valueType("array element type")
	if err != nil {
		return Value{}, err
	}
	n, err := r.count(fmt.Sprintf("count of array of %s", elem), elem.minSize())
	if err != nil {
		return Value{}, err
	}
	v := Value{typ: TypeArray, elem: elem}
	// Each case consumes exactly n*size bytes, which count has checked.
	p := r.b[r.off : r.off+n*elem.size()]
	switch elem {
	case TypeUint8:
		v.arr = append([]uint8{}, p...)
	case TypeInt8:
		v.arr = decode(p, 1, func(b []byte) int8 { return int8(b[0]) })
	case TypeUint16:
		v.arr = decode(p, 2, binary.LittleEndian.Uint16)
	case TypeInt16:
		v.arr = decode(p, 2, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) })
	case TypeUint32:
		v.arr = decode(p, 4, binary.LittleEndian.Uint32)
	case TypeInt32:
		v.arr = decode(p, 4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })
	case TypeFloat32:
		v.arr = decode(p, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
	case TypeUint64:
		v.arr = decode(p, 8, binary.LittleEndian.Uint64)
	case TypeInt64:
		v.arr = decode(p, 8, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })
	case TypeFloat64:
		v.arr = decode(p, 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	case TypeBool:
		a := make([]bool, n)
		for i, c := range p {
			if c > 1 {
				return Value{}, errorf(ErrFormat, r.off+i, "element %d: bool value %d is not 0 or 1", i, c)
			}
			a[i] = c == 1
		}
		v.arr = a
	case TypeString:
		a, err := r.strings(n)
		if err != nil {
			return Value{}, err
		}
		v.arr = a
		return v, nil
	case TypeArray:
		a := make([]Value, n)
		for i := range a {
			if a[i], err = r.array(depth + 1); err != nil {
				return Value{}, fmt.Errorf("element %d: %w", i, err)
			}
		}
		v.arr = a
		return v, nil
	}
	r.off += len(p)
	return v, nil
}

// decode converts n fixed-size little-endian elements.
func decode[T any](p []byte, size int, conv func([]byte) T) []T {
	a := make([]T, len(p)/size)
	for i := range a {
		a[i] = conv(p[i*size:])
	}
	return a
}

// strings reads n strings. All of their bytes are copied into one string
// and the elements are substrings of it: a 150k-token vocabulary costs two
// allocations, not 150k.
func (r *reader) strings(n int) ([]string, error) {
	start := r.off
	total := 0
	for i := range n {
		b, err := r.bytes("string")
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		total += len(b)
	}
	var sb strings.Builder
	sb.Grow(total)
	r.off = start
	for range n {
		b, _ := r.bytes("string") // checked by the first pass
		sb.Write(b)
	}
	all := sb.String()
	a := make([]string, n)
	r.off = start
	pos := 0
	for i := range a {
		l := int(binary.LittleEndian.Uint64(r.b[r.off:]))
		r.off += 8 + l
		a[i] = all[pos : pos+l]
		pos += l
	}
	return a, nil
}
