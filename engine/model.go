// Package engine runs llama-family language models: it loads weights from
// model bytes without copying them, runs the transformer forward pass with a
// KV cache, and drives generation (sampling, streaming text, stop conditions).
//
// The engine knows nothing of JavaScript, HTTP or files: it takes []byte and
// reports through callbacks, so the same code runs natively, in a browser's
// Web Worker and in an edge worker.
package engine

import (
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

// Model is a loaded model: hyper-parameters, weights and tokenizer. It is
// immutable and safe to share between sessions.
type Model struct {
	Config    Config
	Weights   *Weights
	Tokenizer tokenizer.Tokenizer
	Format    Format
	// Architecture is the model family, e.g. "llama".
	Architecture string
	// FileSize is the size of the model bytes.
	FileSize int
	// chatTemplate is the file's tokenizer.chat_template (Jinja source), if any.
	chatTemplate string
	// metadata is the file's own key/value metadata, for Info (GGUF only).
	metadata map[string]any
	// shard, for a shard of a model (Shard, ShardGGUF), says which rows of
	// every matrix its weights hold; nil for a whole model.
	shard *shardPlan
}

// LoadOptions are what Load needs besides the model bytes.
type LoadOptions struct {
	// Tokenizer is a llama2.c tokenizer.bin; required for llama2.c
	// checkpoints, which carry no vocabulary.
	Tokenizer []byte
}

// Load reads a model from its bytes, detecting the format. The weights are
// views into data, which must not be modified while the model is in use.
func Load(data []byte, opts LoadOptions) (*Model, error) {
	if len(data) >= 4 && string(data[:4]) == "GGUF" {
		return LoadGGUF(data)
	}
	return LoadLlama2C(data, opts.Tokenizer)
}

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
		Config: c, Weights: w, Tokenizer: tok, Format: FormatLlama2C,
		Architecture: "llama", FileSize: len(checkpoint),
	}, nil
}
