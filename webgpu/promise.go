//go:build js

package webgpu

import (
	"errors"
	"fmt"
	"strings"
	"syscall/js"
)

// await blocks until the Promise p settles and returns its value, or its
// rejection as an error. The goroutine waits on a channel that the
// Promise's then and catch callbacks feed; the callbacks themselves never
// block, so the event loop keeps running while it waits.
func await(p js.Value) (js.Value, error) {
	type settled struct {
		v   js.Value
		err error
	}
	ch := make(chan settled, 1)
	then := js.FuncOf(func(_ js.Value, args []js.Value) any {
		ch <- settled{v: arg0(args)}
		return nil
	})
	catch := js.FuncOf(func(_ js.Value, args []js.Value) any {
		ch <- settled{err: jsError(arg0(args))}
		return nil
	})
	defer then.Release()
	defer catch.Release()
	p.Call("then", then, catch)
	s := <-ch
	return s.v, s.err
}

func arg0(args []js.Value) js.Value {
	if len(args) == 0 {
		return js.Undefined()
	}
	return args[0]
}

// jsError is a JavaScript exception or rejection reason as a Go error:
// "Name: message" for an Error, its text otherwise.
func jsError(v js.Value) error {
	if v.Type() == js.TypeObject {
		name, msg := v.Get("name"), v.Get("message")
		if msg.Type() == js.TypeString {
			if name.Type() == js.TypeString && name.String() != "" {
				return fmt.Errorf("%s: %s", name.String(), strings.TrimSpace(msg.String()))
			}
			return errors.New(strings.TrimSpace(msg.String()))
		}
	}
	return errors.New(js.Global().Call("String", v).String())
}

// catchJS turns a JavaScript exception thrown by a call in the deferring
// function (syscall/js panics with a js.Error) into *err; other panics
// go on.
func catchJS(err *error, what string) {
	r := recover()
	if r == nil {
		return
	}
	if e, ok := r.(js.Error); ok {
		*err = fmt.Errorf("webgpu: %s: %w", what, jsError(e.Value))
		return
	}
	panic(r)
}
