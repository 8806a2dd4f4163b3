package modelgen

import (
	"bufio"
	"fmt"
	"io"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Header returns the layout of the file Build would write for sp — its
// header bytes, its size and where each tensor lies — without drawing a
// weight: for tests of hosts that must judge a model before reading it (a
// header that claims gigabytes costs nothing to make).
func Header(sp Spec) (*gguf.Layout, error) {
	sp = sp.withDefaults()
	if err := sp.validate(); err != nil {
		return nil, err
	}
	g := newGenerator(sp)
	g.headerOnly = true
	g.emit = func(name string, t tensor.Type, dims []uint64, _ []byte) {
		g.b.AddTensorRef(name, t, dims, gguf.TensorRef{})
	}
	g.metadata()
	g.tensors()
	if g.err != nil {
		return nil, g.err
	}
	return g.b.Layout()
}

// Write writes the file Build would return for sp to w, drawing one tensor
// at a time, so that it takes memory in proportion to the largest tensor,
// not to the file: for the multi-gigabyte models of benchmarks and tests.
// It returns the bytes written.
func Write(w io.Writer, sp Spec) (int64, error) {
	l, err := Header(sp)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	written, _ := bw.Write(l.Header)
	at := int64(written)
	g := newGenerator(sp.withDefaults())
	i := 0
	g.emit = func(name string, _ tensor.Type, _ []uint64, data []byte) {
		if g.err != nil {
			return
		}
		seg := l.Segments[i]
		i++
		if seg.Len != len(data) {
			g.err = fmt.Errorf("%w: tensor %s: %d bytes drawn, %d laid out", ErrSpec, name, len(data), seg.Len)
			return
		}
		for pad := int64(seg.Dst) - at; pad > 0; pad-- {
			if err := bw.WriteByte(0); err != nil {
				g.err = err
				return
			}
		}
		n, err := bw.Write(data)
		at = int64(seg.Dst + n)
		g.err = err
	}
	g.tensors()
	// The file ends padded to the alignment, as Build's (a last tensor of
	// 4 bytes, a reranker's output bias, leaves 28).
	for ; at < int64(l.Size) && g.err == nil; at++ {
		g.err = bw.WriteByte(0)
	}
	if g.err == nil {
		g.err = bw.Flush()
	}
	return at, g.err
}
