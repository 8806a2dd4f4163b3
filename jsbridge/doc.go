// Package jsbridge exposes the engine to JavaScript through syscall/js: a
// GOOS=js GOARCH=wasm build (cmd/wasm) registers one binding object whose
// methods load a model, describe it, tokenize, detokenize, generate, stream,
// chat, embed and rerank.
//
// Every method returns a Promise, runs its work in a goroutine, recovers any
// panic and rejects with a JavaScript Error whose message says what went
// wrong, so the Go runtime outlives every failed call: a Go wasm program that
// panics or exits can never be called again. Generations run one at a time,
// in the order they were asked for (a FIFO queue, not ErrBusy), and so do
// embeddings and rerankings, which share the session; each can be aborted
// with an AbortSignal, also while it waits its turn. Between tokens
// the generating goroutine yields to the JavaScript event loop, so a message
// that aborts the generation is received mid-generation and the host stays
// responsive.
//
// Options cross the boundary as flat JavaScript objects and are validated
// here, once, with errors that name the JavaScript field
// ("topK must be an integer >= 0, got -1"); wrong types are errors, never
// coerced — a BigInt too, on which js.Value.Type panics (typeOf). A chat is the exception: its request is OpenAI's JSON, which
// package openai reads and checks as the HTTP API does. See the Binding type for the methods and their arguments, and
// web/wasmlm.d.ts for the same contract in TypeScript.
//
// Only files named *_js.go import syscall/js; this package is the only one
// besides cmd/ that does, and no js.Value appears in any other package's API.
package jsbridge
