package tensor

import "fmt"

// Packing: the SIMD kernels take a matrix's rows four at a time, block by
// block, so in the file's layout (row after row) they read four streams of
// memory at once, 18 to 210 bytes from each in turn. For a matrix that
// fits in the caches that costs nothing; for one that does not (a 1B
// model's, hundreds of megabytes) the hardware prefetchers keep up with
// one stream far better than with four: in V8 on the build machine a
// Q4_0 matrix–vector product over 75 MB ran at 5.5 GB/s in the file's
// layout and at 11 GB/s packed, twice as fast, where in the caches both
// run at the same speed. Packed, each group of four rows is stored block
// by block — block b of the group's row j at group + (4b + j)·blockBytes,
// a last group of t < 4 rows likewise with t for 4 — so the kernels read
// one stream. A group occupies the same bytes either way, so packing is a
// permutation within each group, made in place.

// Pack reorders m's bytes in place into the packed layout the SIMD
// matrix–vector and batched kernels read fastest, where those kernels run
// (SIMD) and have one for m's type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
// Q5_K, Q6_K, MXFP4; natively Q8_0, Q4_0, Q5_0, Q4_K, Q6_K, MXFP4), and
// reports whether it did. A packed matrix computes the same products, bit
// for bit; its rows still read back by Row, RowData (a copy) and
// AppendRow, but Slice refuses it, and its Data is no longer in the file's layout (so no
// longer what a GGUF writer or another reader of those bytes expects).
// Packing an already packed matrix does nothing and reports true. Where
// the SIMD kernels run, Pack also makes the checks of m's bytes they need
// (finiteScales, minQuants), so that a model pays them at its load.
func Pack(m *Matrix) bool {
	if m.packed {
		return true
	}
	if !(SIMD() || packNative(m)) || !packable(m.Type) {
		return false
	}
	if SIMD() {
		m.checkBlocks() // the SIMD kernels' checks of the bytes, at load rather than at the first token
	}
	if interleaves(m.Type) {
		packRows8(m)
		m.packed, m.rows8 = true, true
		return true
	}
	bb := layouts[m.Type].blockBytes
	blocks := m.rowBytes / bb
	group := make([]byte, 4*m.rowBytes)
	for r := 0; r < m.Rows; r += 4 {
		t := min(4, m.Rows-r)
		g := m.Data[r*m.rowBytes : (r+t)*m.rowBytes]
		copy(group, g)
		for j := range t {
			for b := range blocks {
				copy(g[(t*b+j)*bb:(t*b+j+1)*bb], group[j*m.rowBytes+b*bb:])
			}
		}
	}
	m.packed = true
	return true
}

// PackedGroupRows is the rows of a group in every packed layout, or a
// multiple of them: the SIMD128 kernels' groups of four, the native
// kernels' of eight. Slice cuts a packed matrix along such groups, where
// the packed layout of the view is the view of the packed layout.
const PackedGroupRows = 8

// packable reports whether the SIMD kernels of t read the packed layout.
func packable(t Type) bool {
	switch t {
	case Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4:
		return true
	}
	return false
}

// Packed reports whether m is in the packed layout (Pack).
func (m *Matrix) Packed() bool { return m.packed }

// AppendRow appends the stored bytes of row r to dst, in the file's layout
// whether or not m is packed.
func (m *Matrix) AppendRow(dst []byte, r int) []byte {
	if !m.packed {
		return append(dst, m.Data[r*m.rowBytes:(r+1)*m.rowBytes]...)
	}
	if dst == nil {
		dst = make([]byte, 0, m.rowBytes) // appendBlock appends to nil by returning a view
	}
	for b := range m.rowBytes / layouts[m.Type].blockBytes {
		dst = m.appendBlock(dst, r, b)
	}
	return dst
}

// appendBlock appends block b of row r of a packed matrix to dst. In
// groups of four, it is in r's group of t rows (four, or fewer for the
// last), at (t·b + r's place in it) blocks; interleaved, see packRows8.
// Appending to nil, it may return a view of m's bytes.
func (m *Matrix) appendBlock(dst []byte, r, b int) []byte {
	bb := layouts[m.Type].blockBytes
	if m.rows8 {
		blk := m.Data[(r&^7)*m.rowBytes+8*b*bb:][:8*bb]
		j := r & 7
		var block [q6KBlockBytes]byte
		f := interleaved[m.Type]
		for i, off := range f.halves {
			copy(block[off:off+2], blk[16*i+2*j:])
		}
		for i, off := range f.bytes {
			block[off] = blk[f.bytesAt()+8*i+j]
		}
		for k, off := range f.words {
			copy(block[off:off+4], blk[f.wordsAt()+32*k+4*j:])
		}
		return append(dst, block[:bb]...)
	}
	g := r &^ 3
	t, j := min(4, m.Rows-g), r-g
	off := g*m.rowBytes + (t*b+j)*bb
	if dst == nil {
		return m.Data[off : off+bb : off+bb] // a view: nothing to copy
	}
	return append(dst, m.Data[off:off+bb]...)
}

// rowInterleaved is Row for the interleaved layout: each block gathered
// on the stack, then decoded by its type's (statically called) decoder,
// so that nothing is allocated.
func (m *Matrix) rowInterleaved(dst []float32, r int) {
	var buf [q6KBlockBytes]byte
	l := layouts[m.Type]
	for b := range m.rowBytes / l.blockBytes {
		blk := m.appendBlock(buf[:0], r, b)
		y := dst[b*l.blockSize : (b+1)*l.blockSize]
		switch m.Type {
		case Q8_0:
			dequantizeQ8_0(y, blk)
		case Q4_0:
			dequantizeQ4_0(y, blk)
		case Q5_0:
			dequantizeQ5_0(y, blk)
		case Q4_K:
			dequantizeQ4K(y, blk)
		case MXFP4:
			dequantizeMXFP4(y, blk)
		default:
			dequantizeQ6K(y, blk)
		}
	}
}

// interleavedLayout is where the interleaved layout puts the fields of
// a type's block: the offsets in a block of its fp16 scales (halves), of
// its single-byte scales (bytes: MXFP4's exponent) and of the words of
// four bytes that make up the rest of it, in the order the layout stores
// them.
type interleavedLayout struct{ halves, bytes, words []int }

// bytesAt and wordsAt are where, in a group's block, the single-byte
// fields and the words start: after 16 bytes for each fp16 field, then 8
// for each single byte.
func (f interleavedLayout) bytesAt() int { return 16 * len(f.halves) }
func (f interleavedLayout) wordsAt() int { return f.bytesAt() + 8*len(f.bytes) }

// interleaved has the layout of the types it takes.
var interleaved = map[Type]interleavedLayout{
	Q8_0:  {halves: []int{0}, words: wordsFrom(2, q8_0BlockBytes)},
	Q4_0:  {halves: []int{0}, words: wordsFrom(2, q4_0BlockBytes)},
	Q5_0:  {halves: []int{0}, words: wordsFrom(2, q5_0BlockBytes)},
	Q4_K:  {halves: []int{0, 2}, words: wordsFrom(4, q4KBlockBytes)},
	Q6_K:  {halves: []int{208}, words: q6KWords()},
	MXFP4: {bytes: []int{0}, words: wordsFrom(1, mxfp4BlockBytes)},
}

// q6KWords is the order of Q6_K's words in the interleaved layout: the
// order its kernel reads them (internal/asmgen's interleavedQ6K), so that
// it reads a group's blocks from start to end, as the hardware prefetchers
// like: the scales (at 192), then for each half h, pair g and chunk c the
// low nibbles of elements 128h + 16g + 4c… (and those 64 on) and of the
// elements 32 on, and their high bits.
func q6KWords() []int {
	w := wordsFrom(192, 208)
	for h := range 2 {
		for g := range 2 {
			for c := range 4 {
				w = append(w, 64*h+16*g+4*c, 64*h+32+16*g+4*c, 128+32*h+16*g+4*c)
			}
		}
	}
	return w
}

// wordsFrom is the offsets of the words of four bytes in [from, to).
func wordsFrom(from, to int) []int {
	var w []int
	for off := from; off < to; off += 4 {
		w = append(w, off)
	}
	return w
}

// packRows8 reorders m into the interleaved layout of the native kernels
// (Q8_0, Q4_0, Q5_0, Q4_K, Q6_K, MXFP4): each group of eight rows block by
// block, and in each group's block b (at group + 8·b·blockBytes) every
// field of a block eight times over, one from each row: first the fp16
// scales (scale i of row j at 16·i + 2·j), then the single-byte scales
// (byte i of row j at bytesAt + 8·i + j), then the rest four bytes at a
// time (word k of row j at wordsAt + 32·k + 4·j; see interleavedLayout): a
// YMM register of four bytes from each row at once. A group occupies the same
// bytes either way, so this too is a permutation within each group, made
// in place. m's rows are whole groups of eight (packNative).
func packRows8(m *Matrix) {
	bb := layouts[m.Type].blockBytes
	f := interleaved[m.Type]
	group := make([]byte, 8*m.rowBytes)
	for g := 0; g < m.Rows; g += 8 {
		data := m.Data[g*m.rowBytes : (g+8)*m.rowBytes]
		copy(group, data)
		for b := range m.rowBytes / bb {
			blk := data[8*b*bb:][:8*bb]
			for j := range 8 {
				src := group[j*m.rowBytes+b*bb:][:bb]
				for i, off := range f.halves {
					copy(blk[16*i+2*j:], src[off:off+2])
				}
				for i, off := range f.bytes {
					blk[f.bytesAt()+8*i+j] = src[off]
				}
				for k, off := range f.words {
					copy(blk[f.wordsAt()+32*k+4*j:], src[off:off+4])
				}
			}
		}
	}
}

// errPacked is the error of what a packed matrix cannot do.
func errPacked(what string) error {
	return fmt.Errorf("%w: %s of a matrix packed for the SIMD kernels (tensor.Pack)", ErrShape, what)
}
