// Package jspromise is how Go code in a JavaScript host (the edge worker,
// the npm package's `wasmlm serve`) calls and waits for JavaScript:
// a method called with its exception as an error, a promise awaited with
// a context. It builds only for GOOS=js GOARCH=wasm.
package jspromise

import (
	"context"
	"fmt"
	"syscall/js"
)

// Call calls v[method](args...), turning a JavaScript exception (which
// syscall/js raises as a Go panic) into an error.
func Call(v js.Value, method string, args ...any) (result js.Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s() threw: %v", method, p)
		}
	}()
	return v.Call(method, args...), nil
}

// Invoke calls the function fn with this undefined, as a plain call fn(args...)
// does in a module, turning a JavaScript exception into an error named name.
// Functions of the global scope such as fetch must be called so: called as a
// method of js.Global(), which a host may wrap in a Proxy, they throw
// "Illegal invocation".
func Invoke(fn js.Value, name string, args ...any) (result js.Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s() threw: %v", name, p)
		}
	}()
	return fn.Invoke(args...), nil
}

// Await waits for a promise (or any value: Promise.resolve adopts it) to
// settle, or for ctx to end. It hands JavaScript two callbacks and blocks on
// a channel they fill; while it blocks, the Go program returns control to
// the isolate, which settles the promise and calls back, so it must not be
// called from inside a js.Func callback. The callbacks are released once
// called; should ctx end first, they stay until the promise settles.
func Await(ctx context.Context, p js.Value) (js.Value, error) {
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
		done <- settled{err: fmt.Errorf("rejected: %s", Describe(arg0(args)))}
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

// AwaitCall calls v[method](args...) and awaits the promise it returns.
func AwaitCall(ctx context.Context, v js.Value, method string, args ...any) (js.Value, error) {
	p, err := Call(v, method, args...)
	if err != nil {
		return p, err
	}
	return Await(ctx, p)
}

// AwaitInvoke invokes fn (see Invoke) and awaits the promise it returns.
func AwaitInvoke(ctx context.Context, fn js.Value, name string, args ...any) (js.Value, error) {
	p, err := Invoke(fn, name, args...)
	if err != nil {
		return p, err
	}
	return Await(ctx, p)
}

func arg0(args []js.Value) js.Value {
	if len(args) == 0 {
		return js.Undefined()
	}
	return args[0]
}

// Describe is a JavaScript value as text: String(v).
func Describe(v js.Value) string {
	return js.Global().Get("String").Invoke(v).String()
}
