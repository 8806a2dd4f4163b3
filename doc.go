// Package wasmlm is a language-model runtime in pure Go that runs a model
// entirely on the client: natively, in a web page (GOOS=js GOARCH=wasm behind
// a Web Worker) and at the edge (Cloudflare Workers).
//
// The packages, from the top of the dependency graph down:
//
//	cmd/wasmlm      the command-line tool
//	engine          model loading, forward pass, KV cache, generation
//	engine/gguf     the GGUF container
//	engine/tensor   storage types and matrix–vector kernels
//	tokenizer       SentencePiece tokenizer, decoding, streaming decoder
//	sampling        logit processors, samplers, the seeded PRNG
//	models          the embedded default model
//	internal/fmath  platform-independent float maths
//
// deps_test.go keeps imports pointing down this list.
package wasmlm
