//go:build !linux && !wasm

package engine

// hostMemory is the most memory a session and its model may take, and what
// bounds it: where the machine's memory is not read (outside Linux),
// fallbackMemory.
func hostMemory() (int64, string) { return fallbackMemory, fallbackMemoryWhat }
