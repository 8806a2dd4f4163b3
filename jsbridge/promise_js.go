package jsbridge

import (
	"errors"
	"fmt"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/openai"
	"github.com/wasmlm/wasmlm/policy"
)

// work is the asynchronous part of a method: it runs in its own goroutine and
// returns what the Promise resolves to (anything js.ValueOf accepts).
type work func() (any, error)

// funcOf wraps fn as a js.Func that recovers a panic (a panic in a callback
// would kill the runtime for the rest of the page's life) and counts the
// func as live until release, so tests can prove every one is released.
// What a recovered panic returns to JavaScript is undefined: callbacks that
// need to report it do so themselves.
func (b *Binding) funcOf(fn func(this js.Value, args []js.Value) any) js.Func {
	b.live.Add(1)
	return js.FuncOf(func(this js.Value, args []js.Value) (ret any) {
		defer func() {
			if r := recover(); r != nil {
				ret = nil
			}
		}()
		return fn(this, args)
	})
}

// release releases a func made by funcOf.
func (b *Binding) release(f js.Func) {
	f.Release()
	b.live.Add(-1)
}

// LiveFuncs is the number of js.Funcs the binding holds: its methods, plus
// one or two per generation in progress. After Release it is 0.
func (b *Binding) LiveFuncs() int { return int(b.live.Load()) }

// export sets obj[name] to a method that parses its arguments synchronously
// (so bad arguments reject at once, before any queueing) and runs the
// returned work in a goroutine, settling the Promise it returns.
func (b *Binding) export(name string, parse func(args []js.Value) (work, error)) {
	f := b.funcOf(func(_ js.Value, args []js.Value) any {
		return b.promise(name, func() (work, error) { return parse(args) })
	})
	b.methods = append(b.methods, f)
	b.obj.Set(name, f)
}

// promise returns a Promise settled by start's work. Panics in start, in the
// work and in converting its result are recovered and reject the Promise
// with ErrInternal.
func (b *Binding) promise(name string, start func() (work, error)) js.Value {
	var resolve, reject js.Value
	executor := b.funcOf(func(_ js.Value, args []js.Value) any {
		resolve, reject = args[0], args[1]
		return nil
	})
	p := b.promiseCtor.New(executor) // the executor runs synchronously, inside New
	b.release(executor)

	var w work
	err := b.recovered(name, func() (err error) {
		w, err = start()
		return err
	})
	if err != nil {
		reject.Invoke(b.jsError(err))
		return p
	}
	go func() {
		var v js.Value
		err := b.recovered(name, func() error {
			res, err := w()
			if err == nil {
				v = js.ValueOf(res)
			}
			return err
		})
		if err != nil {
			reject.Invoke(b.jsError(err))
			return
		}
		resolve.Invoke(v)
	}()
	return p
}

// recovered runs fn, turning a panic into an error wrapping ErrInternal (or,
// for an exception thrown by JavaScript that fn called, ErrJSException).
func (b *Binding) recovered(name string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = b.panicError(name, r)
		}
	}()
	return fn()
}

// panicError describes a recovered panic. syscall/js panics with a js.Error
// when a JavaScript function it calls (or a getter it reads) throws.
func (b *Binding) panicError(where string, r any) error {
	if jsErr, ok := r.(js.Error); ok {
		return fmt.Errorf("%w in %s: %s", ErrJSException, where, b.describeThrown(jsErr.Value))
	}
	return fmt.Errorf("%w in %s: %v", ErrInternal, where, r)
}

// jsError makes a JavaScript Error with err's message and a code property
// that programs can test (policy.CodeOf: "invalid_argument", "no_model",
// ...). An invalid option also says which one: the message names it as
// JavaScript spells it ("maxTokens must be ..."), and the properties field
// (that name), param (the snake_case one, as OpenAI's API spells it) and
// problem (what is wrong) let a host word it another way. An OpenAI error
// object (a chat's request) is openaiError's.
func (b *Binding) jsError(err error) js.Value {
	var oa *openai.Error
	if errors.As(err, &oa) {
		return b.openaiError(oa)
	}
	msg := err.Error()
	var oe *engine.OptionError
	isOption := errors.As(err, &oe)
	if isOption {
		msg = fmt.Sprintf("%v: %s %s", ErrInvalidArgument, jsField(oe.Field), oe.Problem)
	}
	e := b.errorCtor.New(msg)
	e.Set("code", string(policy.CodeOf(err)))
	if isOption {
		e.Set("field", jsField(oe.Field))
		e.Set("param", oe.Field)
		e.Set("problem", oe.Problem)
	}
	return e
}
