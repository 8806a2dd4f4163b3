// Package models embeds wasmlm's default model, so every build can generate
// text with no file to download: stories260K, a 260K-parameter llama model
// trained on TinyStories, with its 512-token SentencePiece vocabulary, as a
// GGUF file with F16 weights (MIT licence; see LICENSE in this directory).
package models

import _ "embed"

// DefaultName names the default model in listings and APIs.
const DefaultName = "stories260K"

// DefaultFile is the default model's file name, as the web build ships it.
const DefaultFile = "stories260K-F16.gguf"

//go:embed stories260K-F16.gguf
var stories260K []byte

// Default returns the default model, a GGUF file (llama architecture, dim 64,
// 5 layers, 8 heads, 4 kv heads, vocab 512, context 512, F16 weights; 601 KB).
// The slice is the embedded bytes themselves, not a copy: the engine views
// the weights in place, and nothing may modify them.
func Default() []byte {
	return stories260K
}
