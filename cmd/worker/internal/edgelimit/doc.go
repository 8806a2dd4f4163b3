// Package edgelimit keeps the edge worker's rate limits where its Go
// programs cannot: in JavaScript.
//
// syumai/workers runs a fresh Go program for every request, so a limiter's
// state kept in Go would be forgotten at the end of each. Store is an
// httpapi.LimitStore whose clients live in a JavaScript Map on the
// isolate's globalThis, which outlives the Go programs: consecutive
// requests served by one isolate share it. Cloudflare runs many isolates (in
// every location, and more than one in a busy one), each with its own Map,
// so these limits are per isolate: a client spread over n isolates gets up
// to n times its limit. Binding puts Cloudflare's Rate Limiting binding,
// which counts across the isolates of a location, in front of such a
// limiter.
//
// The package builds only for GOOS=js GOARCH=wasm; its tests run under
// Node (go_js_wasm_exec) with the binding played by a Go function.
package edgelimit
