package jsbridge

import (
	"syscall/js"
	"time"
)

// yielder hands control back to the JavaScript event loop between tokens.
//
// Go on js/wasm runs on the JavaScript thread: while a goroutine computes,
// no JavaScript runs, so a worker could not receive the message that aborts
// a generation until it ended. Blocking the goroutine on something only the
// event loop can deliver lets the runtime return to JavaScript, which runs
// its queued tasks (an abort message, say) before calling back.
//
// The wake-up is a MessageChannel message, a macrotask: a microtask (a
// resolved Promise) would run before any queued task, and setTimeout(0) is
// clamped to 4 ms once nested, which would cap generation at 250 tokens/s.
// setTimeout is the fallback for hosts without MessageChannel.
//
// Where the host has setImmediate (Node.js, Deno, Bun), that is the
// wake-up: Node.js delivers a port's messages in one go, those posted while
// it delivers included (up to a thousand), so a MessageChannel ping-pong
// would starve the worker thread's other port, the one an abort comes by,
// for a whole generation. An immediate runs after the event loop has
// polled for messages.
type yielder struct {
	b          *Binding
	send, recv js.Value // the channel's two ports; undefined without MessageChannel or with setImmediate
	wake       chan struct{}
	fn         js.Func
	spent      time.Duration // total time spent yielding
}

// promptYieldInterval is how long prompt evaluation may keep the event loop
// waiting: short enough that an abort lands promptly, long enough that the
// yields (~50 µs each in Chromium) cost little.
const promptYieldInterval = 2 * time.Millisecond

// newYielder opens a channel for one generation; close releases it.
func (b *Binding) newYielder() *yielder {
	y := &yielder{b: b, wake: make(chan struct{}, 1), send: js.Undefined(), recv: js.Undefined()}
	y.fn = b.funcOf(func(js.Value, []js.Value) any {
		select {
		case y.wake <- struct{}{}:
		default:
		}
		return nil
	})
	if b.setImmediate.Type() != js.TypeFunction && b.messageChannel.Type() == js.TypeFunction {
		ch := b.messageChannel.New()
		y.recv, y.send = ch.Get("port1"), ch.Get("port2")
		y.recv.Set("onmessage", y.fn)
	}
	return y
}

// yield returns to the event loop and comes back after the tasks already
// queued have run.
func (y *yielder) yield() {
	start := time.Now()
	switch {
	case y.b.setImmediate.Type() == js.TypeFunction:
		y.b.setImmediate.Invoke(y.fn)
	case y.send.IsUndefined():
		y.b.setTimeout.Invoke(y.fn, 0)
	default:
		y.send.Call("postMessage", js.Null())
	}
	<-y.wake
	y.spent += time.Since(start)
}

// close closes the channel's ports (an open port keeps Node.js alive) and
// releases the callback.
func (y *yielder) close() {
	if !y.recv.IsUndefined() {
		y.recv.Set("onmessage", js.Null())
		y.recv.Call("close")
		y.send.Call("close")
	}
	y.b.release(y.fn)
}
