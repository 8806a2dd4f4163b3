package engine

import (
	"encoding/binary"
	"fmt"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// llama2.c's legacy ("version 0") checkpoint: seven little-endian int32
// hyper-parameters, then float32 weights in a fixed order with no padding.
// A negative vocab_size means the classifier is stored separately at the end;
// otherwise it is the token embedding. Newer llama2.c exports start with the
// magic "ak42" and are not supported.
const (
	llama2cHeaderBytes = 7 * 4
	llama2cMagic       = 0x616b3432 // "ak42" read as a little-endian uint32
)

// llama2cLayout walks a checkpoint's weights in file order.
type llama2cLayout struct {
	data []byte
	off  int
	err  error
}

// take returns the next n float32 values as bytes, or records an error.
func (l *llama2cLayout) take(name string, n int) []byte {
	if l.err != nil {
		return nil
	}
	size := n * 4
	if size > len(l.data)-l.off {
		l.err = fmt.Errorf("%w: llama2.c checkpoint is truncated in %s: needs %d bytes at offset %d, file has %d", ErrFormat, name, size, l.off, len(l.data))
		return nil
	}
	b := l.data[l.off : l.off+size]
	l.off += size
	return b
}

func (l *llama2cLayout) matrix(name string, rows, cols int) *tensor.Matrix {
	b := l.take(name, rows*cols)
	if l.err != nil {
		return nil
	}
	m, err := tensor.NewMatrix(tensor.F32, rows, cols, b)
	if err != nil {
		l.err = fmt.Errorf("%w: %s: %v", ErrFormat, name, err)
	}
	return m
}

func (l *llama2cLayout) vector(name string, n int) []float32 {
	m := l.matrix(name, 1, n)
	if l.err != nil {
		return nil
	}
	return tensor.Float32s(m.Data)
}

// parseLlama2C reads a legacy llama2.c checkpoint. The weights are views into
// data (copied only if data is not 4-byte aligned).
func parseLlama2C(data []byte) (Config, *modelWeights, error) {
	if len(data) < llama2cHeaderBytes {
		return Config{}, nil, fmt.Errorf("%w: llama2.c checkpoint is %d bytes, shorter than its %d-byte header", ErrFormat, len(data), llama2cHeaderBytes)
	}
	if binary.LittleEndian.Uint32(data) == llama2cMagic {
		return Config{}, nil, fmt.Errorf("%w: llama2.c export version 1/2 (magic \"ak42\"); export with legacy_export (version 0) or use GGUF", ErrUnsupported)
	}
	var h [7]int32
	for i := range h {
		h[i] = int32(binary.LittleEndian.Uint32(data[4*i:]))
	}
	shared := h[5] > 0
	vocab := int(h[5])
	if vocab < 0 {
		vocab = -vocab
	}
	c := Config{
		Dim: int(h[0]), HiddenDim: int(h[1]), Layers: int(h[2]), Heads: int(h[3]), KVHeads: int(h[4]),
		VocabSize: vocab, ContextLength: int(h[6]),
		RopeTheta: 10000, RopeScale: 1, RopeStyle: RopeInterleaved, NormEps: 1e-5,
	}
	if err := c.validate(); err != nil {
		return Config{}, nil, fmt.Errorf("llama2.c header: %w", err)
	}
	// Check the total size before touching any weight: with every dimension
	// below 2^24, these int64 products cannot overflow.
	dim, hidden, layers, kv := int64(c.Dim), int64(c.HiddenDim), int64(c.Layers), int64(c.KVDim())
	floats := int64(vocab)*dim + layers*(2*dim+2*dim*dim+2*dim*kv+3*dim*hidden) + dim +
		int64(c.ContextLength)*int64(c.HeadDim()) // llama2.c's unused RoPE tables
	if !shared {
		floats += int64(vocab) * dim
	}
	if want := int64(llama2cHeaderBytes) + 4*floats; want != int64(len(data)) {
		return Config{}, nil, fmt.Errorf("%w: llama2.c header describes a %d-byte checkpoint, file has %d bytes", ErrFormat, want, len(data))
	}

	l := &llama2cLayout{data: data, off: llama2cHeaderBytes}
	w := &modelWeights{Layers: make([]layerWeights, c.Layers)}
	w.TokenEmbedding = l.matrix("token_embedding_table", c.VocabSize, c.Dim)
	// Each kind of weight is stored for all layers before the next kind.
	perLayerVector := func(name string, n int, set func(*layerWeights, []float32)) {
		for i := range w.Layers {
			set(&w.Layers[i], l.vector(fmt.Sprintf("%s[%d]", name, i), n))
		}
	}
	perLayerMatrix := func(name string, rows, cols int, set func(*layerWeights, *tensor.Matrix)) {
		for i := range w.Layers {
			set(&w.Layers[i], l.matrix(fmt.Sprintf("%s[%d]", name, i), rows, cols))
		}
	}
	perLayerVector("rms_att_weight", c.Dim, func(lw *layerWeights, v []float32) { lw.AttnNorm = v })
	perLayerMatrix("wq", c.Dim, c.Dim, func(lw *layerWeights, m *tensor.Matrix) { lw.Wq = m })
	perLayerMatrix("wk", c.KVDim(), c.Dim, func(lw *layerWeights, m *tensor.Matrix) { lw.Wk = m })
	perLayerMatrix("wv", c.KVDim(), c.Dim, func(lw *layerWeights, m *tensor.Matrix) { lw.Wv = m })
	perLayerMatrix("wo", c.Dim, c.Dim, func(lw *layerWeights, m *tensor.Matrix) { lw.Wo = m })
	perLayerVector("rms_ffn_weight", c.Dim, func(lw *layerWeights, v []float32) { lw.FFNNorm = v })
	perLayerMatrix("w1", c.HiddenDim, c.Dim, func(lw *layerWeights, m *tensor.Matrix) { lw.WGate = m })
	perLayerMatrix("w2", c.Dim, c.HiddenDim, func(lw *layerWeights, m *tensor.Matrix) { lw.WDown = m })
	perLayerMatrix("w3", c.HiddenDim, c.Dim, func(lw *layerWeights, m *tensor.Matrix) { lw.WUp = m })
	w.OutputNorm = l.vector("rms_final_weight", c.Dim)
	l.take("freq_cis", c.ContextLength*c.HeadDim())
	if shared {
		w.Output = w.TokenEmbedding
	} else {
		w.Output = l.matrix("wcls", c.VocabSize, c.Dim)
	}
	if l.err != nil {
		return Config{}, nil, l.err
	}
	if err := w.checkShapes(architectures["llama"], c, nil); err != nil {
		return Config{}, nil, err
	}
	if err := w.checkFinite(architectures["llama"], c.Layers); err != nil {
		return Config{}, nil, err
	}
	return c, w, nil
}
