// Package models embeds wasmlm's default model, so every build can generate
// text with no file to download: stories260K, a 260K-parameter llama model
// trained on TinyStories, with its 512-token tokenizer (MIT licence; see
// LICENSE in this directory).
package models

import _ "embed"

// DefaultName names the default model in listings and APIs.
const DefaultName = "stories260K"

var (
	//go:embed stories260K.bin
	stories260K []byte
	//go:embed tok512.bin
	tok512 []byte
)

// Default returns the default model: a llama2.c checkpoint (dim 64, 5 layers,
// 8 heads, 4 kv heads, vocab 512, context 512) and its tokenizer.bin. The
// slices are the embedded bytes themselves, not copies: the engine views the
// weights in place, and nothing may modify them.
func Default() (checkpoint, tokenizerBin []byte) {
	return stories260K, tok512
}
