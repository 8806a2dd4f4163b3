// Package wasmlm is a language-model runtime in pure Go that runs a model
// entirely on the client: natively, in a web page (GOOS=js GOARCH=wasm behind
// a Web Worker) and at the edge (Cloudflare Workers). ARCHITECTURE.md is the
// map; README.md and docs/ say how to use it.
//
// The product's packages, from the top of the dependency graph down (each
// imports only packages below it; cmd/wasmlm also uses internal/modelgen,
// for bench -gen):
//
//	cmd/wasmlm          the command-line tool: generate, tokenize, info, serve, bench
//	cmd/wasm            the browser build: registers the jsbridge binding (the serving build also runs the npm package's `wasmlm serve` in Node.js)
//	cmd/worker          the edge build: httpapi on Cloudflare Workers
//	cmd/worker/internal/edgelimit  its rate limits, kept in the isolate's JavaScript
//	cmd/worker/internal/modelsource  its model from R2, a URL or static assets, read by range into Go memory
//	cmd/internal/servecli  what every host of `wasmlm serve` shares: its flags and their checks, the handler's options, its log lines
//	cmd/internal/jspromise  calls into JavaScript (edge worker, the npm package's serve): exceptions as errors, promises awaited
//	jsbridge            the engine as a JavaScript object (syscall/js)
//	jsbridge/jshttp     HTTP between JavaScript and an http.Handler: the page's serveHTTP and the edge worker share it
//	webgpu              engine/gpu's Host over the browser's navigator.gpu (syscall/js)
//	httpapi             the OpenAI-compatible HTTP API
//	openai              OpenAI's requests as engine calls, the engine's output as OpenAI's replies and chunks
//	policy              host policy: chat prompts, grammars as engine constraints, error codes
//	engine/shard        a model split across workers: plan, step protocol, followers, shard files
//	engine/gpu          the forward pass on a WebGPU device: WGSL kernels, passes, the Host they run on
//	engine              models, architecture tables, forward pass, sessions, generation
//	engine/vocab        tokenizers from GGUF metadata
//	engine/gguf         the GGUF container: reader and writer
//	engine/tensor       storage types and matrix–vector kernels
//	tokenizer/bpe       byte-level BPE, pre-tokenizers, tokenizer.json
//	tokenizer/wordpiece  WordPiece of BERT-family vocabularies, with llama.cpp's Unicode tables
//	tokenizer           SentencePiece tokenizer, decoding, streaming decoder
//	sampling            logit processors, samplers, the seeded PRNG
//	chat                chat templates, as llama.cpp recognises them
//	grammar             GBNF grammars: parser, matcher, token masks for constrained sampling
//	grammar/jsonschema  JSON Schemas to llama.cpp's GBNF grammars, for constrained sampling
//	models              the embedded default model
//	internal/fmath      float maths that gives the same bits on every platform
//
// Beside them, the tools that test, measure and build them (they may import
// what they work on):
//
//	internal/modelgen   random-weight GGUF models (decoders, BERT-family embedders) for tests and benchmarks
//	internal/golden     llama2.c's reference outputs, for tests
//	internal/testmodel  the models several packages' tests share (stories260K as a llama2.c checkpoint)
//	internal/race       whether the race detector is built in: the tests that count allocations skip under it
//	internal/longtest   whether make test-long runs the exhaustive sets (WASMLM_LONG) and the every-k-th subset make test runs
//	internal/simdgen    the generator of the SIMD128 kernel module (go generate)
//	internal/asmgen     the generator of engine/tensor's amd64 (avo) and arm64 assembly (go generate)
//	internal/wasmgen    a WebAssembly module emitter, for internal/simdgen
//	internal/headless   the headless-Chromium launcher of tests and benchmarks
//	internal/webfiles   web/files.txt: the files the site and the npm package ship
//	internal/llamacppref  llama.cpp's output on random models, the parity harness of every architecture
//	internal/grammarref  llama.cpp's and ajv's verdicts on texts, for grammar/jsonschema's tests
//	internal/embedref   llama.cpp's embeddings, rerank scores and embedding speed, the reference of embedding models
//	tests/e2e           end-to-end tests in headless Chromium and workerd
//	tools/benchdoc      the benchmark page's tables, rewritten from the results files
//	tools/benchrun      make bench: every host, one table
//	tools/gpuprofile    make bench BENCH=webgpu's GPU half: dispatches, bytes and kernel times of the forward pass on WebGPU
//	tools/npmpack       make npm: the npm package wasmlm (build/npm)
//	tools/servebench    make bench-serve: wasmlm serve under concurrent streaming clients
//	tools/wasmbrowser   go test -exec runner: GOOS=js test binaries in a Web Worker of Chromium with WebGPU
//
// deps_test.go holds every package to what it may import, and doc_test.go
// keeps these lists complete.
package wasmlm
