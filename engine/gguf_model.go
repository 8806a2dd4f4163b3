package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/engine/vocab"
	"github.com/wasmlm/wasmlm/tokenizer/bpe"
)

// loadGGUF reads a GGUF model of an architecture in the tables, any
// supported tensor types, tokenizer from the file's metadata. Quantized
// weights stay quantized: the matrices are views into data. part, for the
// file of one part of a split model, says which rows it holds.
//
// Errors keep their kind: a malformed file wraps ErrFormat (and the gguf
// package's error, when it found the fault), something this engine cannot
// run wraps ErrUnsupported.
func loadGGUF(data []byte, part *Part) (*Model, error) {
	f, err := gguf.Parse(data)
	if err != nil {
		return nil, ggufError(err)
	}
	if si, ok, err := f.Split(); err == nil && ok && si.Count > 1 {
		return nil, fmt.Errorf("%w: this file is part %d of %d of a split model (llama-gguf-split's split.* keys): join the parts first (gguf.Join; wasmlm's -m takes the first part's path and finds the others)", ErrFormat, si.Index+1, si.Count)
	}
	h, err := readHeader(f)
	if err != nil {
		return nil, err
	}
	arch, c, tok := h.arch, h.config, h.tok
	if part != nil {
		if err := part.check(c); err != nil {
			return nil, err
		}
	}
	w, err := ggufWeights(f, arch, c, part)
	if err != nil {
		return nil, err
	}
	if err := w.checkShapes(arch, c, part); err != nil {
		return nil, err
	}
	if err := w.viewExperts(); err != nil {
		return nil, err
	}
	if err := w.checkFinite(arch, c.Layers); err != nil {
		return nil, err
	}
	return &Model{
		config: c, weights: w, tokenizer: tok, tokenizerFamily: h.family, format: FormatGGUF, arch: arch,
		fileSize: len(data), chatTemplate: h.chatTemplate, metadata: f.Summary(8), part: part, maxTokenBytes: longestToken(tok),
	}, nil
}

// ggufError classifies an error of gguf.Parse: a file it cannot read is
// unsupported, anything else malformed.
func ggufError(err error) error {
	if errors.Is(err, gguf.ErrUnsupported) {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return fmt.Errorf("%w: %w", ErrFormat, err)
}

// vocabError classifies an error of vocab.FromGGUF: a tokenizer this
// engine has not got is unsupported, anything else malformed.
func vocabError(err error) error {
	if errors.Is(err, vocab.ErrUnsupportedModel) || errors.Is(err, bpe.ErrUnknownPreTokenizer) {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return fmt.Errorf("%w: %w", ErrFormat, err)
}

// hyperParams are what a file's keys say: the model's Config, and what
// its layers' recipes are made from.
type hyperParams struct {
	Config
	layers layerKeys
}

// ggufConfig reads the hyper-parameters of architecture a, and makes each
// layer's recipe.
func ggufConfig(f *gguf.File, a *architecture) (Config, error) {
	p, err := ggufParams(f, a)
	if err == nil {
		err = p.layers.validate()
	}
	if err != nil {
		return Config{}, err
	}
	if p.Layers > 0 && p.Layers <= maxDimension { // else validate says what is wrong
		p.LayerSpecs = a.layerSpecs(p.Config, p.layers)
	}
	return p.Config, nil
}

// ggufParams reads the keys of architecture a.
func ggufParams(f *gguf.File, a *architecture) (*hyperParams, error) {
	p := &hyperParams{Config: Config{RopeStyle: a.ropeStyle, RopeScale: 1}}
	p.layers.noRopeInterval = a.noRopeInterval
	c := &p.Config
	key := func(k string) string { return a.name + "." + k }
	for _, k := range a.keys {
		var err error
		switch {
		case k.int != nil && k.defaultInt != nil:
			var v uint32
			v, err = f.Uint32Or(key(k.key), uint32(k.defaultInt(*c)))
			*k.int(p) = int(v)
		case k.int != nil:
			var v uint32
			v, err = f.Uint32(key(k.key))
			*k.int(p) = int(v)
		case k.defaultFloat != nil:
			*k.float(p), err = f.Float32Or(key(k.key), k.defaultFloat(*c))
		default:
			*k.float(p), err = f.Float32(key(k.key))
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFormat, err)
		}
	}
	scaling, err := f.StringOr(key("rope.scaling.type"), "none")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	switch scaling {
	case "none":
	case "linear":
		if c.RopeScale, err = f.Float32(key("rope.scaling.factor")); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFormat, err)
		}
	case "yarn":
		// llama.cpp's scale when the file says no factor is 1
		if c.RopeScale, err = f.Float32Or(key("rope.scaling.factor"), 1); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFormat, err)
		}
		c.RopeYaRN = true
	default:
		return nil, fmt.Errorf("%w: rope scaling %q (supported: none, linear, yarn)", ErrUnsupported, scaling)
	}
	if n, err := f.Uint32Or(key("expert_count"), 0); (err != nil || n > 0) && !a.readsKey(keyExpertCount) {
		return nil, fmt.Errorf("%w: %s with a mixture of experts (%d experts): the engine computes mixture-of-experts models of qwen3moe, qwen2moe, qwen35moe, lfm2moe, granitehybrid, gemma4 and gpt-oss only", ErrUnsupported, a.name, n)
	}
	if c.RopeOriginalContext, err = uint32Key(f, key("rope.scaling.original_context_length"), 0); err != nil {
		return nil, err
	}
	if c.RopeAttnFactor, err = f.Float32Or(key("rope.scaling.attn_factor"), 0); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	c.Encoder = a.encoder
	if err := readEmbeddingKeys(f, a, c); err != nil {
		return nil, err
	}
	// Optional facts that must agree with the head width (read or derived).
	if c.Heads > 0 && (c.KeyLength > 0 || c.Dim%c.Heads == 0) {
		headDim := uint32(c.HeadDim())
		d, err := f.Uint32Or(key("rope.dimension_count"), headDim)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: %w", ErrFormat, err)
		case d != headDim && !a.partialRope:
			return nil, fmt.Errorf("%w: rotary embeddings over %d of %d head dimensions (llama.cpp too refuses them in %s)", ErrUnsupported, d, headDim, a.name)
		case d != headDim:
			c.RopeDims = int(d)
		}
		if d, err := f.Uint32Or(key("attention.value_length"), headDim); err != nil || d != headDim {
			return nil, fmt.Errorf("%w: values of %d per head, keys of %d", ErrUnsupported, d, headDim)
		}
	}
	if a.configure != nil {
		if err := a.configure(f, p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// uint32Key reads an optional unsigned key, def when absent.
func uint32Key(f *gguf.File, key string, def int) (int, error) {
	v, err := f.Uint32Or(key, uint32(def))
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return int(v), nil
}

// ggufWeights binds the file's tensors to the weights, as the
// architecture's table says, for a model of config c (part: the rows of a
// part of a split model); checkShapes then checks them. A tensor the
// table lists as unsupported is an error.
func ggufWeights(f *gguf.File, a *architecture, c Config, part *Part) (*modelWeights, error) {
	for l := range c.Layers {
		for _, name := range a.unsupported {
			if strings.Contains(name, "%d") {
				name = fmt.Sprintf(name, l)
			}
			if hasTensor(f, name) {
				return nil, fmt.Errorf("%w: tensor %s, which %s models may have and this engine does not compute with", ErrUnsupported, name, a.name)
			}
		}
	}
	w := &modelWeights{Layers: make([]layerWeights, c.Layers)}
	fused := map[string]*tensor.Matrix{} // the fused tensors, whole, by name
	var firstErr error
	a.walk(c.Layers, func(t tensorRef) {
		if firstErr != nil {
			return
		}
		ti, ok := f.Tensor(t.name)
		if !ok {
			return // checkShapes reports the tensors that are not optional
		}
		if t.spec.experts {
			*t.matrixIn(w), firstErr = ggufExperts(ti, c)
			return
		}
		if t.spec.stacked {
			*t.matrixIn(w), firstErr = ggufStacked(ti)
			return
		}
		if t.spec.fused != nil {
			whole, ok := fused[t.name]
			if !ok {
				if whole, firstErr = ggufMatrix(ti, true); firstErr != nil {
					return
				}
				fused[t.name] = whole
			}
			*t.matrixIn(w), firstErr = t.spec.pieceOf(t.name, whole, c, part)
			return
		}
		stored := t.isMatrix() || t.spec.cols != dimNone // a vector the file stores as a matrix is read as its rows, in order
		m, err := ggufMatrix(ti, stored)
		switch {
		case err != nil:
			firstErr = err
		case t.isMatrix():
			*t.matrixIn(w) = m
		case stored && m.Cols != c.size(t.spec.cols):
			firstErr = fmt.Errorf("%w: tensor %s has rows of %d values, want %d", ErrFormat, t.name, m.Cols, c.size(t.spec.cols))
		case m.Type == tensor.F32:
			*t.vectorIn(w) = tensor.Float32s(m.Data)
		default:
			v := make([]float32, m.Rows*m.Cols) // small: decode once
			for r := range m.Rows {
				m.Row(v[r*m.Cols:(r+1)*m.Cols], r)
			}
			*t.vectorIn(w) = v
		}
	})
	if w.Output == nil && !a.encoder {
		w.Output = w.TokenEmbedding // tied embeddings
	}
	return w, firstErr
}

// hasTensor reports whether the file has a tensor of that name.
func hasTensor(f *gguf.File, name string) bool {
	_, ok := f.Tensor(name)
	return ok
}

// ggufMatrix views a tensor as a matrix (ggml dims [cols, rows]) or, for a
// vector, as one row.
func ggufMatrix(ti gguf.TensorInfo, matrix bool) (*tensor.Matrix, error) {
	want := 1
	if matrix {
		want = 2
	}
	if len(ti.Dims) != want {
		return nil, fmt.Errorf("%w: tensor %s has %d dimensions, want %d", ErrFormat, ti.Name, len(ti.Dims), want)
	}
	if !tensor.Supported(ti.Type) {
		return nil, fmt.Errorf("%w: tensor %s has type %v, which this engine cannot compute with", ErrUnsupported, ti.Name, ti.Type)
	}
	rows := 1
	if matrix {
		rows = int(ti.Dims[1])
	}
	m, err := tensor.NewMatrix(ti.Type, rows, int(ti.Dims[0]), ti.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: tensor %s: %w", ErrFormat, ti.Name, err)
	}
	return m, nil
}
