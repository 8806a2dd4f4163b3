package modelsource

import (
	"runtime"
	"syscall/js"
)

// jsChunk is bytes in a JavaScript Uint8Array.
type jsChunk struct{ u8 js.Value }

// Len is the array's length.
func (c jsChunk) Len() int { return c.u8.Length() }

// CopyTo copies the array's bytes from from into dst: the one copy from
// JavaScript to Go memory.
func (c jsChunk) CopyTo(dst []byte, from int) {
	if from == 0 && len(dst) == c.Len() {
		js.CopyBytesToGo(dst, c.u8)
		return
	}
	js.CopyBytesToGo(dst, c.u8.Call("subarray", from, from+len(dst)))
}

// bytesOf is an ArrayBuffer as a chunk.
func bytesOf(buffer js.Value) jsChunk {
	return jsChunk{js.Global().Get("Uint8Array").New(buffer)}
}

// release lets JavaScript collect the chunks already copied: a js.Value
// that reached Go keeps its JavaScript object alive until Go's collector
// finalizes it, and copying allocates nothing in Go, so no collection
// would come by itself and every chunk read would stay in the isolate's
// memory. Collecting before each read keeps one chunk alive at a time.
func release() { runtime.GC() }

// isNullish is v === null || v === undefined.
func isNullish(v js.Value) bool { return v.IsNull() || v.IsUndefined() }
