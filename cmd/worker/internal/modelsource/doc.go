// Package modelsource loads the edge worker's model from storage: an
// object of an R2 bucket, a URL, or a static asset, read by range straight
// into Go memory.
//
// # Sources
//
// FromEnv reads the worker's env, in this order:
//
//   - WASMLM_MODEL set: the object of that key in the R2 bucket bound as
//     MODEL_BUCKET, read with the binding's own head(key) and
//     get(key, {range: {offset, length}}) (syumai/workers' R2 wrapper takes
//     no range).
//   - WASMLM_MODEL_URL set: that http(s) URL, read with Range requests
//     through fetch. The server must honour ranges (206 with a
//     Content-Range naming the file's size); one that answers with the whole
//     file (200) is accepted only when that file, held once in JavaScript
//     while it is copied (one file of a split set at a time), fits the
//     budget beside the model. A path
//     ("/models/m.gguf") names a static asset of the binding ASSETS, read
//     the same way through its fetch.
//   - Neither: ok is false, and the worker serves its embedded default.
//
// WASMLM_MODEL_SHA256, optional, is the file's SHA-256 in hexadecimal (a
// split set's: each part's, comma-separated, in order); each file is hashed
// as its bytes arrive, so the check costs no second pass over the model.
//
// A key or URL whose name ends in -00001-of-0000N.gguf is the first part of
// a split GGUF set (llama-gguf-split's names): every part is read, from
// the same bucket or the same server with the part's number in the name,
// and joined as engine/gguf's Join joins them, into one buffer.
//
// Static assets: Cloudflare serves files of up to 25 MiB each as a
// worker's static assets, so a split set whose parts are each under that
// can be deployed with the worker itself ([assets] directory and binding =
// "ASSETS" in wrangler.toml, WASMLM_MODEL_URL the first part's path). That
// path is read through the binding's fetch with the same Range requests as
// a URL. Miniflare's assets answer them with the whole file (200), which
// the worker then holds in JavaScript one part at a time (each part is
// fetched twice: for its header, then for its weights); tests/e2e serves a
// split set so, and whether Cloudflare's own assets honour Range is not
// verified here. Assets are public at their path unless the worker runs
// first (run_worker_first): prefer R2 for a model that is not to be
// downloadable.
//
// # Memory
//
// Each file's header comes first (a first read of DefaultHeaderBytes,
// more while it goes on). From the headers alone the engine's estimate
// (engine.EstimateMemory: the weights as the file holds them, a KV cache
// of the context and type the worker's session uses, the session's
// buffers, the tokenizer and the Go runtime's share) is checked against DefaultBudget,
// the isolate's 128 MiB less what JavaScript keeps; a model over it is
// refused (model_too_large, naming every number) before a byte of its
// weights is read. Then the model's buffer is allocated once at its final
// size, and each chunk of DefaultChunkBytes read (one R2 get, one HTTP
// request) is copied once from JavaScript to its place there. The chunks
// are read through the body stream's BYOB reader into one ArrayBuffer,
// reused for every chunk, so JavaScript holds one chunk's memory however
// large the model (a fresh ArrayBuffer per chunk would be garbage that V8
// collects late: under Node, loading a 60 MB model left up to 33 MiB of
// them in the heap at once, against 13 MiB with the reused one, which
// includes the test's own garbage); Go collects between chunks so that the
// JavaScript values each chunk's reads made are released too.
//
// # Errors
//
// Every failure is an *Error whose Code is the OpenAI error code the
// worker answers with (status 500): model_not_found (no such key, part or
// URL), model_checksum_mismatch, model_too_large, model_load_failed
// (truncated, corrupt, unsupported, or the storage failing), and
// worker_misconfigured (the variables or bindings naming the model are
// wrong). Messages name the file (a URL without its query, which may hold
// a token) and the cause.
//
// Load, the Store interface and the in-memory Bytes chunk are pure Go and
// tested natively; the stores (R2, Fetch) and FromEnv build only for
// GOOS=js GOARCH=wasm, tested under Node against a real HTTP server
// (testdata/rangeserver, started with go run) and stand-in bindings, and in
// tests/e2e against miniflare's local R2.
package modelsource
