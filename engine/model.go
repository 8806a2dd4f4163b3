package engine

import (
	"errors"
	"fmt"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// Format names the kind of file a model was loaded from.
type Format string

// The model file formats Load understands.
const (
	FormatLlama2C Format = "llama2c"
	FormatGGUF    Format = "gguf"
)

// Model is a loaded model: hyper-parameters, weights and tokenizer. It does
// not change after Load, and sessions share it.
type Model struct {
	config    Config
	weights   *modelWeights
	tokenizer tokenizer.Tokenizer
	// tokenizerFamily is the tokenizer's kind: GGUF's tokenizer.ggml.model
	// ("llama", "gpt2"); "llama" for llama2.c's.
	tokenizerFamily string
	format          Format
	arch            *architecture
	fileSize        int            // the size of the model bytes
	chatTemplate    string         // the file's tokenizer.chat_template (Jinja source), if any
	metadata        map[string]any // the file's own key/value metadata, for Info (GGUF only)
	part            *Part          // which rows a part of a split model holds; nil for a whole model
	maxTokenBytes   int            // the longest token's text (MaxTokenBytes)
}

// Config is the model's hyper-parameters.
func (m *Model) Config() Config { return m.config }

// Tokenizer is the model's tokenizer.
func (m *Model) Tokenizer() tokenizer.Tokenizer { return m.tokenizer }

// Format is the kind of file the model was loaded from.
func (m *Model) Format() Format { return m.format }

// Architecture is the model family, e.g. "llama".
func (m *Model) Architecture() string { return m.arch.name }

// FileSize is the size of the model bytes.
func (m *Model) FileSize() int { return m.fileSize }

// LoadOptions are what Load needs besides the model bytes.
type LoadOptions struct {
	// Tokenizer is a llama2.c tokenizer.bin; required for llama2.c
	// checkpoints, which carry no vocabulary.
	Tokenizer []byte
	// Part, for a GGUF file that holds one part of a split model (written
	// by engine/shard), says which rows of the whole model's split tensors
	// the file holds; the shapes are checked against it.
	Part *Part
}

// Load reads a model from its bytes, detecting the format. The weights are
// views into data, which must not be modified while the model is in use.
// Where the SIMD kernels run (wasm builds with the wasmlm_simd tag, and
// natively on amd64 CPUs with AVX2 unless tensor.SetNativeSIMD(false) or
// the purego tag), the model's first session reorders the bytes of its
// layer matrices in data, in place, into the layout those kernels read
// fastest (tensor.Pack): after that, data is no longer the file (see
// Model.WeightsPacked), and loading the same bytes again gives a broken
// model; load a copy instead.
func Load(data []byte, opts LoadOptions) (*Model, error) {
	if len(data) >= 4 && string(data[:4]) == "GGUF" {
		return loadGGUF(data, opts.Part)
	}
	if opts.Part != nil {
		return nil, fmt.Errorf("%w: LoadOptions.Part is for GGUF files", ErrInvalidOption)
	}
	m, err := LoadLlama2C(data, opts.Tokenizer)
	if errors.Is(err, ErrFormat) && !errors.Is(err, ErrTokenizerMismatch) {
		// Not GGUF's magic, so read as llama2.c's headerless format: say
		// so, for a damaged GGUF file.
		return nil, fmt.Errorf("%w (the file does not start with \"GGUF\", so it was read as a llama2.c checkpoint)", err)
	}
	return m, err
}

// LoadGGUF reads a GGUF model (see Load).
func LoadGGUF(data []byte) (*Model, error) { return loadGGUF(data, nil) }

// LoadLlama2C reads a legacy llama2.c checkpoint and its tokenizer.bin.
func LoadLlama2C(checkpoint, tokenizerBin []byte) (*Model, error) {
	if len(checkpoint) >= 4 && string(checkpoint[:4]) == "GGUF" {
		return nil, fmt.Errorf("%w: this is a GGUF file, not a llama2.c checkpoint", ErrFormat)
	}
	c, w, err := parseLlama2C(checkpoint)
	if err != nil {
		return nil, err
	}
	if len(tokenizerBin) == 0 {
		return nil, fmt.Errorf("%w: a llama2.c checkpoint needs its tokenizer.bin", ErrTokenizerMismatch)
	}
	tok, err := tokenizer.LoadLlama2C(tokenizerBin)
	if err != nil {
		return nil, fmt.Errorf("llama2.c tokenizer: %w", err)
	}
	if tok.VocabSize() != c.VocabSize {
		return nil, fmt.Errorf("%w: tokenizer has %d tokens, model has %d", ErrTokenizerMismatch, tok.VocabSize(), c.VocabSize)
	}
	return &Model{
		config: c, weights: w, tokenizer: tok, tokenizerFamily: "llama", format: FormatLlama2C,
		arch: architectures["llama"], fileSize: len(checkpoint), maxTokenBytes: longestToken(tok),
	}, nil
}
