package modelsource

import (
	"context"
	"fmt"
	"runtime"
	"syscall/js"

	"github.com/wasmlm/wasmlm/cmd/internal/jspromise"
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

// reader reads response bodies (a fetch Response's, an R2 object's) into
// one ArrayBuffer that it reuses for every chunk, through the stream's
// BYOB reader: the isolate then holds one chunk's memory however many
// chunks are read, where a fresh ArrayBuffer per chunk (arrayBuffer())
// leaves each to V8's collector, which lets tens of MiB of them pile up
// before it runs. A chunk it returns is valid until the next read.
type reader struct{ buf js.Value }

// read reads the n bytes of the body of r (an object with a body stream
// and an arrayBuffer method) from its start; a body that ends first gives
// fewer. Where the body is no byte stream, it falls back to arrayBuffer.
func (rd *reader) read(ctx context.Context, r js.Value, n int) (jsChunk, error) {
	stream := r.Get("body")
	var byob js.Value
	if !isNullish(stream) {
		byob, _ = jspromise.Call(stream, "getReader", map[string]any{"mode": "byob"})
	}
	if isNullish(byob) {
		buffer, err := jspromise.AwaitCall(ctx, r, "arrayBuffer")
		if err != nil {
			return jsChunk{}, fmt.Errorf("reading the body: %w", err)
		}
		return bytesOf(buffer), nil
	}
	if isNullish(rd.buf) || rd.buf.Get("byteLength").Int() < n {
		rd.buf = js.Global().Get("ArrayBuffer").New(n)
	}
	u8 := js.Global().Get("Uint8Array")
	filled := 0
	for filled < n {
		res, err := jspromise.AwaitCall(ctx, byob, "read", u8.New(rd.buf, filled, n-filled))
		if err != nil {
			return jsChunk{}, fmt.Errorf("reading the body: %w", err)
		}
		v := res.Get("value")
		if !isNullish(v) {
			rd.buf = v.Get("buffer") // the read transferred it
			filled += v.Get("byteLength").Int()
		}
		if res.Get("done").Bool() {
			break
		}
	}
	if filled == n {
		_, _ = jspromise.Call(byob, "cancel") // anything past the n bytes
	}
	return jsChunk{u8.New(rd.buf, 0, filled)}, nil
}
