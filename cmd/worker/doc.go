// Command worker is wasmlm's edge worker: the OpenAI-compatible API of
// package httpapi with the embedded default model (stories260K), served on
// Cloudflare Workers through github.com/syumai/workers.
//
// It builds only with GOOS=js GOARCH=wasm (make worker, which also writes
// the JavaScript glue with syumai/workers' workers-assets-gen into
// build/worker/). make worker-run serves that build locally in workerd; the
// repository's wrangler.toml deploys it with npx wrangler deploy.
//
// make worker builds it with -tags wasmlm_simd, so its matrix products run
// on the SIMD128 kernels of internal/simdgen: worker.mjs here replaces
// syumai/workers' entry module to give the Go instance their imports (from
// web/simd.js) and attach them before the Go program starts. GET /v1/models
// reports it as meta.simd.
//
// syumai/workers instantiates a fresh Go program for every request, so
// main runs once per request: it parses the model in place from the bytes
// embedded in the binary (no copy, no dequantisation) and allocates one
// session, which keeps that per-request start-up small.
package main
