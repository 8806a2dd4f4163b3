package modelsource

import (
	"context"
	"fmt"
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

// call calls method on v, a JavaScript exception becoming an error.
func call(v js.Value, method string, args ...any) (result js.Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s() threw: %v", method, p)
		}
	}()
	return v.Call(method, args...), nil
}

// await waits for a promise (or any value: Promise.resolve adopts it) to
// settle, or for ctx to end. While it blocks, the Go program returns
// control to the isolate, which settles the promise and calls back; it
// must not be called from inside a js.Func callback.
func await(ctx context.Context, p js.Value) (js.Value, error) {
	type settled struct {
		v   js.Value
		err error
	}
	done := make(chan settled, 1)
	var resolved, rejected js.Func
	release := func() { resolved.Release(); rejected.Release() }
	resolved = js.FuncOf(func(_ js.Value, args []js.Value) any {
		done <- settled{v: arg0(args)}
		release()
		return nil
	})
	rejected = js.FuncOf(func(_ js.Value, args []js.Value) any {
		done <- settled{err: fmt.Errorf("rejected: %s", describe(arg0(args)))}
		release()
		return nil
	})
	js.Global().Get("Promise").Call("resolve", p).Call("then", resolved, rejected)
	select {
	case s := <-done:
		return s.v, s.err
	case <-ctx.Done():
		return js.Undefined(), ctx.Err()
	}
}

// awaitCall calls method on v and awaits its promise.
func awaitCall(ctx context.Context, v js.Value, method string, args ...any) (js.Value, error) {
	p, err := call(v, method, args...)
	if err != nil {
		return p, err
	}
	return await(ctx, p)
}

func arg0(args []js.Value) js.Value {
	if len(args) == 0 {
		return js.Undefined()
	}
	return args[0]
}

// describe is a JavaScript value as text: String(v).
func describe(v js.Value) string {
	return js.Global().Get("String").Invoke(v).String()
}

// isNullish is v === null || v === undefined.
func isNullish(v js.Value) bool { return v.IsNull() || v.IsUndefined() }
