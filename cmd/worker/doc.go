// Command worker is wasmlm's edge worker: the OpenAI-compatible API of
// package httpapi over one model (loadModel, source.go: the embedded
// default, stories260K, unless the env names another), served on
// Cloudflare Workers by one long-lived Go instance per isolate.
//
// It builds only with GOOS=js GOARCH=wasm (make worker, which also writes
// the JavaScript glue with syumai/workers' workers-assets-gen into
// build/worker/). make worker-run serves that build locally in miniflare
// (tools/worker-run.mjs: workerd with a local R2 bucket); the
// repository's wrangler.toml deploys it with npx wrangler deploy.
//
// make worker builds it with -tags wasmlm_simd, so its matrix products run
// on the SIMD128 kernels of internal/simdgen: worker.mjs here replaces
// syumai/workers' entry module to give the Go instance their imports (from
// web/simd.js) and attach them before the Go program starts. GET /v1/models
// reports it as meta.simd.
//
// # One instance per isolate
//
// worker.mjs starts the Go program when the isolate's first request comes
// (requests arriving meanwhile wait for it) and hands every later request
// to the same instance. main reads the env once (an isolate's env does not
// change: a changed secret or variable is a new deployment, served by new
// isolates), loads the model, builds the handler and registers the entry
// point worker.mjs calls (instance.serveJS); it never returns. The
// handler has wasmlm serve's queue: one slot (one session: the isolate has
// one thread), httpapi.DefaultQueueSize requests waiting, one more refused
// with 503; a client (its key or address) may hold a quarter of the queue,
// beyond it 429, and waiting requests are served round-robin between
// clients. The KV prefix cache, compiled grammars and tokenizer caches live
// in that one handler, so they persist across requests. A model load that
// fails is not kept: that request is answered with the failure and the
// next one loads again. GET /health adds "instance": {"ordinal": N,
// "requests": R, "loads": L, "in_flight": F, "completions": {...}}: N the
// how-many-th Go instance of the isolate (1 for the first), R the
// requests it was given (this one included), L the model loads that
// succeeded, F the requests other than GET /health it is serving (queued
// or running), completions the API requests that ended, by how (done;
// dropped from the queue because the client left; aborted in the slot
// because the client left; failed) and the tokens generated; "notice",
// when the loaded model is not served as the env asked (WASMLM_MAX_TOKENS,
// below); and "memory": {"wasm_bytes": W, "js_heap_bytes": J,
// "budget_bytes": B}: W the instance's WebAssembly
// memory, which never shrinks (so it is the peak), J the JavaScript heap
// where the runtime reports it (workerd does not: null), B the budget
// (below).
//
// Memory: an isolate has 128 MiB; the model and its session must fit
// modelsource.DefaultBudget (112 MiB: 16 MiB kept for JavaScript). The Go
// heap is held modelsource.CollectorHeadroom (8 MiB) below it with
// debug.SetMemoryLimit, so that what requests allocate while the
// collector runs stays within the budget. A response leaves in parts of
// 64 KiB as it is written (jsbridge/jshttp), and an embeddings answer is
// encoded one vector at a time, so the largest request accepted (2,048
// texts) holds its vectors, not their JSON. The session's KV cache is F32 when the model's
// whole context (at most engine.DefaultContextLength) fits the budget with
// it, as a native session of a small model; otherwise F16, with the
// longest context the budget holds beside the weights (modelsource.Fit).
// A model that fits with fewer than modelsource.MinContextLength
// positions is refused as model_too_large.
//
// The HTTP transport between a JavaScript Request and Response and the
// handler is package jsbridge/jshttp, the one the page's serveHTTP uses
// (package jsbridge): the request's parts go in, the response comes back a
// part at a time, each flushed Server-Sent Event as it is written.
// worker.mjs handles each part in the request's own context and resumes
// the instance in a task of its own, so that the chunk reaches the client
// and new requests reach the queue between tokens; it resumes only while
// the response's stream holds less than 64 KiB the client has not read. A
// wake-up a local workerd runs in another request's context is left to the
// request's own next wake (docs/edge-models.md says when that happens). A request's context
// hands control back the same way at every generated token, prompt block
// and embedding pass of a request's work (turningContext): a call
// from JavaScript into Go returns only once every goroutine waits, so
// without it the queue's non-streamed requests would all run in one call,
// holding the thread while workerd reads no request and drops those sent
// on keep-alive connections it closes as idle. Another request takes a few
// turns to be read, served and written, so turning only every few prompt
// blocks or passes kept /health waiting for nearly all of a long prompt or
// a large embeddings request. The engine asks the context's Err between
// those steps (httpapi's generation context asks the request's too), and
// workerd's clock stands still while code runs, so the turns follow those
// steps, not time.
//
// A client that leaves while its request waits in the queue: worker.mjs
// aborts the request when request.signal aborts (compatibility flag
// enable_request_signal), and it leaves the queue without generating
// (completions' "dropped"). A local workerd, miniflare's too, was seen
// never to abort request.signal for a client that left before the
// response's head: there the request takes the slot in its turn and is
// stopped by its first write ("aborted"): a stream after its prompt and a
// token, a non-streamed request once its whole reply is generated.
//
// If the Go program exits (a panic outside the handler's recovery, an
// os.Exit), worker.mjs drops the instance first (never two models in
// memory), answers the requests in flight with a 500 OpenAI error object
// (code worker_restarted; a stream that had started is cut), and the next
// request starts a fresh instance (ordinal 2, and so on). A test build
// (-tags wasmlm_testhooks, testhooks.go) adds a route that panics so the
// tests can prove it.
//
// Of syumai/workers the worker keeps the build glue (workers-assets-gen's
// runtime.mjs and wasm_exec.js, whose go.run makes the runtime context the
// global "context") and cloudflare.GetBinding for the env; it no longer uses
// workers.Serve, which serves one request per Go program (its closer
// panics on a second close), nor its HTTP conversion, which split header
// values at their commas.
//
// # The model
//
// loadModel (source.go) loads the model through package modelsource, from
// the first source the env names:
//
//   - WASMLM_MODEL: the key of an object in the R2 bucket bound as
//     MODEL_BUCKET ([[r2_buckets]] in wrangler.toml), read with the
//     binding's ranged get, a few MiB at a time, straight into the model's
//     buffer in Go memory (one copy). A key ending in -00001-of-0000N.gguf
//     is the first part of a split GGUF set: every part is read.
//   - WASMLM_MODEL_URL: an http(s) URL read with Range requests (the server
//     must answer 206 with Content-Range; a whole-file 200 only when it fits
//     beside the model), or a path of the static assets bound as ASSETS,
//     whose files of up to 25 MiB can hold a split set's parts.
//   - Neither: the embedded default, stories260K, parsed in place.
//
// WASMLM_MODEL_SHA256 (optional) is the file's SHA-256 in hexadecimal, or
// a split set's parts', comma-separated; it is checked as the bytes arrive.
// Each file's header is read first: a model whose weights, KV cache (the
// session's context and type) and Go runtime would not fit the isolate's 128 MiB
// (modelsource.DefaultBudget: 112 MiB, 16 MiB kept for JavaScript) is
// refused before its weights are read. A failed load answers 500 with an
// OpenAI error object whose code says why: model_not_found,
// model_checksum_mismatch, model_too_large, model_load_failed (truncated,
// corrupt, unsupported) or worker_misconfigured (a variable or binding
// missing or malformed), and its message names the file and the cause.
//
// # Keys and limits
//
// The env is read once, when the isolate's instance starts:
//
//   - WASMLM_API_KEYS, a secret (npx wrangler secret put WASMLM_API_KEYS):
//     API keys separated by commas, spaces around each trimmed, empty
//     entries skipped. /v1/*, /tokenize and /detokenize then need one, sent
//     as "Authorization: Bearer KEY" or "x-api-key: KEY", or answer 401
//     invalid_api_key; /health and CORS preflights stay open. Unset or
//     blank: no keys, the API is open.
//   - WASMLM_RATE_LIMIT and WASMLM_TOKEN_LIMIT, variables: the requests
//     (POSTs) and the tokens (prompt and completion) a client may use per
//     minute; beyond them 429 rate_limit_exceeded with Retry-After and
//     Retry-After-Ms. A client is its key, or without keys its address
//     (the CF-Connecting-IP header, which the worker makes the request's
//     RemoteAddr; where it is missing, as in a local workerd, all clients
//     are one). Unset or 0: no limit.
//   - WASMLM_MAX_TOKENS: the most max_tokens a request may ask for (unset:
//     no limit but the context, 512 tokens, which a request that shifts
//     its context may run past). A value beyond the context the model is
//     served with is capped at it (maxTokensFor), which the log and GET
//     /health's instance "notice" say once, unless WASMLM_CONTEXT_SHIFT
//     lets replies run past the context; a model that does not generate
//     (embeddings, reranking) ignores it.
//   - WASMLM_CONTEXT_SHIFT: "true" makes context_shift every completion
//     request's default (docs/context.md); unset or "false": a request asks
//     for it itself.
//   - WASMLM_MAX_EMBED_TOKENS: the most tokens an embeddings or rerank
//     request may have the model evaluate, special tokens included; beyond
//     it 400 max_tokens_per_request (unset: 16,384; 0: no cap).
//   - WASMLM_RATE_LIMITER, Cloudflare's Rate Limiting binding, declared in
//     wrangler.toml as [[ratelimits]] (name, namespace_id, simple = { limit,
//     period }): when bound, each POST is first the binding's to allow,
//     with the same client as its key; a refusal is 429 with Retry-After
//     WASMLM_RATE_LIMIT_PERIOD seconds (default 60: set it to the binding's
//     period, which the worker cannot read). Then WASMLM_RATE_LIMIT and
//     WASMLM_TOKEN_LIMIT, if set, apply as well.
//
// A variable is text, or a number where wrangler's [vars] makes it one. A
// malformed secret or variable makes the worker answer every request with
// a 500 OpenAI error object (code worker_misconfigured) that names it,
// never quoting the secret: it does not serve open or unlimited instead.
//
// Where the counts live: a limiter's counts are kept out of Go, which
// forgets them when its instance is replaced, so WASMLM_RATE_LIMIT and
// WASMLM_TOKEN_LIMIT are counted in the isolate's JavaScript, a Map on
// globalThis (package edgelimit) shared by the requests one isolate
// serves. Cloudflare runs many isolates of a worker, in every location and
// several in a busy one, each with its own Map, so these limits hold per
// isolate: a client whose requests reach n isolates may use up to n times
// them. Only the binding counts across isolates (per location, and
// approximately, as Cloudflare documents it), so use it for requests; the
// token limit is per isolate only. workerd has no such binding: the tests
// (tests/e2e) bind a stand-in of their own, a fixed window in a workerd
// extension.
package main
