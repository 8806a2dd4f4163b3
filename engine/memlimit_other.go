//go:build !wasm

package engine

// memoryLimit is the most memory a session and its model may take: 1 TiB,
// more than a machine this runs on has, a bound on a context beyond the
// trained one whose KV cache could never be allocated.
const memoryLimit = 1 << 40
