package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/vocab"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// Header is what a GGUF model's header says, read without its tensor data
// (gguf.ParseHeader): enough to describe the model, to know what loading it
// costs (Memory) and to lay out a part of a split model (engine/shard)
// before a byte of its weights is read.
type Header struct {
	arch         *architecture
	config       Config
	tok          tokenizer.Tokenizer
	family       string // tokenizer.ggml.model
	chatTemplate string
	file         *gguf.File
}

// ReadHeader reads the model that the GGUF header f describes: its
// architecture, hyper-parameters and tokenizer, checked as Load checks them
// (the tensors' shapes and values are checked only when the data is there,
// by Load). Errors wrap ErrFormat or ErrUnsupported, as Load's do.
func ReadHeader(f *gguf.File) (*Header, error) {
	return readHeader(f)
}

func readHeader(f *gguf.File) (*Header, error) {
	name, err := f.String("general.architecture")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	arch, ok := architectures[name]
	if !ok {
		return nil, fmt.Errorf("%w: architecture %q (supported: %s)", ErrUnsupported, name, strings.Join(slices.Sorted(maps.Keys(architectures)), ", "))
	}
	if len(f.Tensors()) == 0 {
		return nil, fmt.Errorf("%w: the file has no tensors (a vocabulary-only GGUF?)", ErrFormat)
	}
	c, err := ggufConfig(f, arch)
	if err != nil {
		return nil, err
	}
	tok, err := vocab.FromGGUF(f)
	if err != nil {
		return nil, vocabError(err)
	}
	c.VocabSize = tok.VocabSize()
	if err := c.validate(); err != nil {
		return nil, err
	}
	tmpl, err := f.StringOr("tokenizer.chat_template", "")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	family, err := f.String("tokenizer.ggml.model") // vocab.FromGGUF has read it already
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return &Header{arch: arch, config: c, tok: tok, family: family, chatTemplate: tmpl, file: f}, nil
}

// Config is the model's hyper-parameters.
func (h *Header) Config() Config { return h.config }

// ChatTemplate is the file's tokenizer.chat_template (Jinja source), or "".
func (h *Header) ChatTemplate() string { return h.chatTemplate }

// Tensors lists every tensor the architecture uses and how a split model
// divides it, as Model.Tensors does.
func (h *Header) Tensors() []TensorSplit {
	return tensorSplits(h.arch, h.config.Layers)
}

// Info describes the model as Model.Info would once loaded, counting the
// parameters and tensor types from the header. fileSize is the file's size
// in bytes (all parts of a split GGUF together).
func (h *Header) Info(fileSize int) Info {
	c, f := h.config, h.file
	sp := h.tok.Special()
	_, hasOutput := f.Tensor(nameOutput)
	info := Info{
		Format: FormatGGUF, Architecture: h.arch.name,
		VocabSize: c.VocabSize, ContextLength: c.ContextLength, Dim: c.Dim, HiddenDim: c.HiddenDim,
		Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim(), RopeTheta: c.RopeTheta, NormEps: c.NormEps,
		SlidingWindow: c.slidingWindow(), SharedOutput: !hasOutput && !c.Encoder, TensorTypes: map[string]int{}, TensorBytes: map[string]int64{},
		FileSize: fileSize, BOS: sp.BOS, EOS: sp.EOS, Metadata: f.Summary(8), TokenizerFamily: h.family,
	}
	info.whatItDoes(h.arch, c, h.arch.has("cls.output.weight") && hasTensor(f, "cls.output.weight"))
	info.familyInfo(h.arch, c, ropeFactorsName(hasTensor(f, "rope_freqs.weight") && h.arch.has("rope_freqs.weight"),
		hasTensor(f, "rope_factors_long.weight") && h.arch.has("rope_factors_long.weight")))
	h.arch.walk(c.Layers, func(t tensorRef) {
		ti, ok := f.Tensor(t.name)
		if !ok || t.spec.piece > 0 { // a fused tensor counts once
			return
		}
		if t.isMatrix() {
			info.TensorTypes[ti.Type.String()]++
			info.TensorBytes[ti.Type.String()] += int64(ti.Size)
		} else {
			info.TensorTypes["F32"]++ // vectors are held as float32
			info.TensorBytes["F32"] += 4 * ti.Elements()
		}
		info.Parameters += ti.Elements()
	})
	return info
}

// SplitError is why the model cannot be split across workers, as
// Model.SplitError says, or nil when it can.
func (h *Header) SplitError() error { return h.arch.splitError() }

// tensorSplits lists the tensors of an architecture for a model of layers
// layers and how a split model divides each: a fused tensor once, with its
// pieces' axes.
func tensorSplits(a *architecture, layers int) []TensorSplit {
	var out []TensorSplit
	a.walk(layers, func(t tensorRef) {
		if t.spec.piece > 0 {
			return // listed with its first piece
		}
		ts := TensorSplit{Name: t.name, Split: t.spec.split}
		if ts.Split {
			ts.Axis = Axis(t.spec.rows)
		}
		for _, d := range t.spec.fused {
			ts.Fused = append(ts.Fused, Axis(d))
		}
		out = append(out, ts)
	})
	return out
}
