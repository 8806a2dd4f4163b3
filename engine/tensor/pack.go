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
// (SIMD) and have one for m's type (Q8_0, Q4_0, Q5_0, Q4_K, Q6_K), and
// reports whether it did. A packed matrix computes the same products, bit
// for bit; its rows still read back by Row, RowData (a copy) and
// AppendRow, but Slice refuses it, and its Data is no longer in the file's layout (so no
// longer what a GGUF writer or another reader of those bytes expects).
// Packing an already packed matrix does nothing and reports true.
func Pack(m *Matrix) bool {
	if m.packed {
		return true
	}
	if !(SIMD() || packNative(m)) || !packable(m.Type) {
		return false
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

// packable reports whether the SIMD kernels of t read the packed layout.
func packable(t Type) bool {
	switch t {
	case Q8_0, Q4_0, Q5_0, Q4_K, Q6_K:
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
	for b := range m.rowBytes / layouts[m.Type].blockBytes {
		dst = append(dst, m.packedBlock(r, b)...)
	}
	return dst
}

// packedBlock is block b of row r of a packed matrix: in r's group of t
// rows (four, or fewer for the last), at (t·b + r's place in it) blocks.
func (m *Matrix) packedBlock(r, b int) []byte {
	bb := layouts[m.Type].blockBytes
	g := r &^ 3
	t, j := min(4, m.Rows-g), r-g
	off := g*m.rowBytes + (t*b+j)*bb
	return m.Data[off : off+bb]
}

// errPacked is the error of what a packed matrix cannot do.
func errPacked(what string) error {
	return fmt.Errorf("%w: %s of a matrix packed for the SIMD kernels (tensor.Pack)", ErrShape, what)
}
