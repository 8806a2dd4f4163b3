package gpu

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Matrix is a weight matrix on the device in its stored form: the rows'
// bytes exactly as the file holds them (quantized blocks, F16 halves, …),
// one row after another, padded to a multiple of 4 bytes (and 4 more, so
// a kernel reading a 32-bit word at any even byte offset of a row never
// reads past the buffer). Kernels address a row by its byte offset,
// r·RowBytes.
type Matrix struct {
	Type       tensor.Type
	Rows, Cols int
	RowBytes   int    // bytes of one stored row
	Buffer     Buffer // Rows·RowBytes bytes, then the padding
}

// uploadChunk is how many bytes UploadMatrix hands Write at a time: a
// packed matrix's rows are gathered into a staging slice of this size.
const uploadChunk = 4 << 20

// UploadMatrix makes a device buffer holding m's stored bytes. A matrix
// packed for the SIMD kernels (tensor.Pack) is uploaded in the file's row
// layout, read back row by row.
func UploadMatrix(h Host, label string, m *tensor.Matrix) (*Matrix, error) {
	if m == nil || m.Rows <= 0 {
		return nil, fmt.Errorf("gpu: matrix %s: no rows", label)
	}
	rb, err := tensor.RowBytes(m.Type, m.Cols)
	if err != nil {
		return nil, fmt.Errorf("gpu: matrix %s: %w", label, err)
	}
	if w := floatWidth(m.Type); w > 0 && m.Cols%floatChunk != 0 {
		return uploadPadded(h, label, m, w)
	}
	size := m.Rows * rb
	padded := (size+3)&^3 + 4
	if limit := h.Adapter().MaxStorageBufferBindingSize; limit > 0 && padded > limit {
		return nil, fmt.Errorf("%w: matrix %s takes %d bytes, over maxStorageBufferBindingSize %d", ErrUnsupported, label, padded, limit)
	}
	b, err := h.NewBuffer(label, padded, UsageStorage|UsageCopyDst)
	if err != nil {
		return nil, fmt.Errorf("gpu: matrix %s: %w", label, err)
	}
	if m.Packed() {
		writeRows(h, b, m)
	} else {
		writeBytes(h, b, 0, m.Data[:size])
	}
	return &Matrix{Type: m.Type, Rows: m.Rows, Cols: m.Cols, RowBytes: rb, Buffer: b}, nil
}

// writeBytes writes data into b at byte at (a multiple of 4), in chunks,
// the last one padded with zeros to a multiple of 4 bytes.
func writeBytes(h Host, b Buffer, at int, data []byte) {
	off := 0
	for len(data)-off >= 4 {
		n := min(uploadChunk, len(data)-off) &^ 3
		h.Write(b, at+off, data[off:off+n])
		off += n
	}
	if off < len(data) {
		var tail [4]byte
		copy(tail[:], data[off:])
		h.Write(b, at+off, tail[:])
	}
}

// writeRows writes a packed matrix's rows in the file's layout, gathered
// into a staging slice of about uploadChunk bytes.
func writeRows(h Host, b Buffer, m *tensor.Matrix) {
	var stage []byte
	off := 0
	for r := range m.Rows {
		stage = m.AppendRow(stage, r)
		n := len(stage) &^ 3 // whole words, but for the last row
		if r == m.Rows-1 {
			n = len(stage)
		}
		if len(stage) >= uploadChunk || r == m.Rows-1 {
			writeBytes(h, b, off, stage[:n])
			off += n
			stage = append(stage[:0], stage[n:]...)
		}
	}
}

// Bytes is the size of the matrix's buffer on the device.
func (m *Matrix) Bytes() int { return m.Buffer.Size() }

// Destroy frees the device buffer.
func (m *Matrix) Destroy() { m.Buffer.Destroy() }

// floatChunk is how many values the float types' kernels read at once;
// a float matrix whose rows are not whole chunks (stories260K's 172
// columns) is uploaded with each row padded with zeros to whole chunks,
// and the kernels read the activation's values past Cols as zeros.
const floatChunk = 8

// floatWidth is the bytes of one value of a float type, 0 for the others.
func floatWidth(t tensor.Type) int {
	switch t {
	case tensor.F32:
		return 4
	case tensor.F16, tensor.BF16:
		return 2
	}
	return 0
}

// uploadPadded uploads float matrix m with each row padded with zeros to
// a whole number of chunks.
func uploadPadded(h Host, label string, m *tensor.Matrix, width int) (*Matrix, error) {
	rb := (m.Cols + floatChunk - 1) / floatChunk * floatChunk * width // a multiple of 16
	size := m.Rows*rb + 4
	if limit := h.Adapter().MaxStorageBufferBindingSize; limit > 0 && size > limit {
		return nil, fmt.Errorf("%w: matrix %s takes %d bytes, over maxStorageBufferBindingSize %d", ErrUnsupported, label, size, limit)
	}
	b, err := h.NewBuffer(label, size, UsageStorage|UsageCopyDst)
	if err != nil {
		return nil, fmt.Errorf("gpu: matrix %s: %w", label, err)
	}
	stage := make([]byte, 0, uploadChunk+rb)
	off := 0
	for r := range m.Rows {
		stage = append(stage, m.RowData(r)...)
		stage = append(stage, make([]byte, rb-m.Cols*width)...)
		if len(stage) >= uploadChunk || r == m.Rows-1 {
			h.Write(b, off, stage)
			off += len(stage)
			stage = stage[:0]
		}
	}
	return &Matrix{Type: m.Type, Rows: m.Rows, Cols: m.Cols, RowBytes: rb, Buffer: b}, nil
}
