package gguf

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Layout is a GGUF file to assemble in memory from byte ranges of other
// files (its sources), so that a host can read only what the file needs, a
// chunk at a time, straight into the file's final place: a part of a model
// split across workers, or the parts of a split GGUF joined into one file.
//
// The file is Size bytes: Header first, then each Segment's bytes at its
// Dst; the bytes no segment covers (alignment padding) are zero.
type Layout struct {
	Size     int
	Header   []byte
	Segments []Segment // sorted by Dst, not overlapping
}

// Segment is Len bytes of source file Source, from Offset, that go to Dst
// of the assembled file.
type Segment struct {
	Source int
	Offset int64
	Dst    int
	Len    int
}

// Read is a range [Start, End) of source file Source.
type Read struct {
	Source     int
	Start, End int64
}

// TensorRef names where a tensor's bytes lie: Size bytes of source file
// Source from Offset.
type TensorRef struct {
	Source int
	Offset int64
}

// AddTensorRef adds a tensor as AddTensor does, whose bytes are not given
// but lie at ref; only Layout lays such tensors out (Bytes fails).
func (b *Builder) AddTensorRef(name string, t tensor.Type, dims []uint64, ref TensorRef) {
	b.AddTensorPieces(name, t, dims, []TensorPiece{{Source: ref.Source, Offset: ref.Offset, Len: wholeTensor}})
}

// TensorPiece is Len bytes of source file Source from Offset: one of the
// ranges a tensor's bytes are gathered from (AddTensorPieces).
type TensorPiece struct {
	Source int
	Offset int64
	Len    int
}

// wholeTensor is the Len of AddTensorRef's one piece: the tensor's size.
const wholeTensor = -1

// AddTensorPieces adds a tensor as AddTensorRef does, whose bytes are those
// of pieces, one after another (rows of a fused tensor that a part of a
// split model holds: its rows of the queries, of the keys, of the values).
// The pieces' lengths must add up to the tensor's size.
func (b *Builder) AddTensorPieces(name string, t tensor.Type, dims []uint64, pieces []TensorPiece) {
	if len(pieces) == 0 {
		b.fail("tensor %q: no pieces", name)
		return
	}
	for _, p := range pieces {
		if p.Source < 0 || p.Offset < 0 || (p.Len < 0 && !(p.Len == wholeTensor && len(pieces) == 1)) {
			b.fail("tensor %q: source %d offset %d length %d", name, p.Source, p.Offset, p.Len)
			return
		}
	}
	b.addTensor(name, t, dims, nil, slices.Clone(pieces))
}

// Layout returns the layout of the file built: the header as Bytes writes
// it, and a segment for each tensor, from its TensorRef. Every tensor must
// have been added with AddTensorRef.
func (b *Builder) Layout() (*Layout, error) {
	if b.err != nil {
		return nil, b.err
	}
	head := b.header()
	align := b.alignment()
	l := &Layout{}
	dataStart := alignUp(len(head), align)
	if len(b.tensors) == 0 {
		l.Header, l.Size = head, len(head)
		return l, nil
	}
	l.Header = make([]byte, dataStart) // zeroed: the padding
	copy(l.Header, head)
	offset := 0
	for i, t := range b.tensors {
		pieces := b.refs[i]
		if pieces == nil {
			return nil, fmt.Errorf("%w: tensor %q has bytes, not a source: use Bytes", ErrInvalid, t.Name)
		}
		at := dataStart + offset
		for _, p := range pieces {
			l.Segments = append(l.Segments, Segment{Source: p.Source, Offset: p.Offset, Dst: at, Len: p.Len})
			at += p.Len
		}
		offset = alignUp(offset+t.Size, align)
	}
	l.Size = dataStart + offset
	return l, nil
}

// WholeLayout is the layout of a file assembled from all of itself: source
// 0, read whole.
func WholeLayout(size int) *Layout {
	return &Layout{Size: size, Segments: []Segment{{Source: 0, Offset: 0, Dst: 0, Len: size}}}
}

// Reads returns the ranges of the sources to read to fill the layout, by
// source then offset; ranges closer than gap bytes are merged into one (a
// host that reads over HTTP makes fewer requests for a few bytes more).
func (l *Layout) Reads(gap int64) []Read {
	var out []Read
	segs := slices.Clone(l.Segments)
	slices.SortFunc(segs, func(a, b Segment) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Offset, b.Offset))
	})
	for _, s := range segs {
		if s.Len == 0 {
			continue
		}
		end := s.Offset + int64(s.Len)
		if n := len(out); n > 0 && out[n-1].Source == s.Source && s.Offset-out[n-1].End <= gap {
			out[n-1].End = max(out[n-1].End, end)
			continue
		}
		out = append(out, Read{Source: s.Source, Start: s.Offset, End: end})
	}
	return out
}

// Fill copies chunk, the bytes of source src from offset, into dst (the
// assembled file, Size bytes) where segments take them, and returns how
// many bytes it placed. Bytes no segment takes are skipped.
func (l *Layout) Fill(dst []byte, src int, offset int64, chunk []byte) int {
	placed := 0
	l.Place(src, offset, len(chunk), func(lo, hi, at int) {
		placed += copy(dst[at:], chunk[lo:hi])
	})
	return placed
}

// Place calls put for every piece of the n bytes of source src from offset
// that a segment takes: bytes [lo, hi) of those n go to byte at of the
// assembled file. For a host whose chunk is not a Go slice (a JavaScript
// Uint8Array, copied in piece by piece).
func (l *Layout) Place(src int, offset int64, n int, put func(lo, hi, at int)) {
	end := offset + int64(n)
	for _, s := range l.Segments {
		if s.Source != src {
			continue
		}
		lo, hi := max(offset, s.Offset), min(end, s.Offset+int64(s.Len))
		if lo < hi {
			put(int(lo-offset), int(hi-offset), s.Dst+int(lo-s.Offset))
		}
	}
}

// Covered is how many bytes of the file the segments fill: what Fill must
// place in all for the file to be complete.
func (l *Layout) Covered() int {
	n := 0
	for _, s := range l.Segments {
		n += s.Len
	}
	return n
}

// Through re-expresses l, a layout whose source 0 is the file that under
// assembles, in terms of under's sources: each segment is split where
// under's segments meet. Bytes of under's file that no segment of under
// covers (its header and padding) come from under's Header; Through keeps
// them by moving them into l's Header, which must then cover them.
func (l *Layout) Through(under *Layout) (*Layout, error) {
	out := &Layout{Size: l.Size, Header: slices.Clone(l.Header)}
	for _, s := range l.Segments {
		if s.Source != 0 {
			return nil, fmt.Errorf("%w: segment of source %d; Through takes source 0 only", ErrInvalid, s.Source)
		}
		lo, hi := int(s.Offset), int(s.Offset)+s.Len
		if hi > under.Size {
			return nil, fmt.Errorf("%w: segment [%d, %d) past the %d-byte file", ErrInvalid, lo, hi, under.Size)
		}
		// From under's header, then its segments; the rest is zero padding.
		if lo < len(under.Header) {
			if s.Dst+min(hi, len(under.Header))-lo > len(out.Header) {
				return nil, fmt.Errorf("%w: segment [%d, %d) reads the header of the file beneath", ErrInvalid, lo, hi)
			}
			copy(out.Header[s.Dst:], under.Header[lo:min(hi, len(under.Header))])
		}
		for _, u := range under.Segments {
			a, b := max(lo, u.Dst), min(hi, u.Dst+u.Len)
			if a >= b {
				continue
			}
			out.Segments = append(out.Segments, Segment{
				Source: u.Source, Offset: u.Offset + int64(a-u.Dst), Dst: s.Dst + (a - lo), Len: b - a,
			})
		}
	}
	slices.SortFunc(out.Segments, func(a, b Segment) int { return cmp.Compare(a.Dst, b.Dst) })
	return out, nil
}

// header encodes the header: magic, version, counts, KVs and tensor infos,
// each tensor at its aligned offset in the data section.
func (b *Builder) header() []byte {
	le := binary.LittleEndian
	head := append([]byte(Magic), 0, 0, 0, 0)
	le.PutUint32(head[len(Magic):], b.version)
	head = le.AppendUint64(head, uint64(len(b.tensors)))
	head = le.AppendUint64(head, uint64(len(b.kvs)))
	for _, kv := range b.kvs {
		head = appendString(head, kv.Key)
		head = le.AppendUint32(head, uint32(kv.Value.typ))
		head = appendValue(head, kv.Value)
	}
	align := b.alignment()
	offset := 0
	for _, t := range b.tensors {
		head = appendString(head, t.Name)
		head = le.AppendUint32(head, uint32(len(t.Dims)))
		for _, d := range t.Dims {
			head = le.AppendUint64(head, d)
		}
		head = le.AppendUint32(head, uint32(t.Type))
		head = le.AppendUint64(head, uint64(offset))
		offset = alignUp(offset+t.Size, align)
	}
	return head
}
