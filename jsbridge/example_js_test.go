package jsbridge_test

import (
	"fmt"
	"syscall/js"

	"github.com/wasmlm/wasmlm/jsbridge"
	"github.com/wasmlm/wasmlm/models"
)

// await blocks until p settles. Blocking is fine in a goroutine: the Go
// runtime returns to the event loop meanwhile. (Never block inside a js.Func.)
func await(p js.Value) (js.Value, bool) {
	done := make(chan struct {
		v  js.Value
		ok bool
	}, 1)
	onResolve := js.FuncOf(func(_ js.Value, a []js.Value) any {
		done <- struct {
			v  js.Value
			ok bool
		}{a[0], true}
		return nil
	})
	onReject := js.FuncOf(func(_ js.Value, a []js.Value) any {
		done <- struct {
			v  js.Value
			ok bool
		}{a[0], false}
		return nil
	})
	defer onResolve.Release()
	defer onReject.Release()
	p.Call("then", onResolve, onReject)
	r := <-done
	return r.v, r.ok
}

// The binding as JavaScript uses it: load the default model, then stream a
// greedy completion (its chunks are the pieces of the tokens llama2.c
// generates for this prompt, internal/golden's runc_stories260K.json). cmd/wasm does the first two lines and puts the binding
// at globalThis.wasmlm.
func Example() {
	b := jsbridge.New()
	defer b.Release()
	lm := b.Value()

	bytes := func(data []byte) js.Value {
		u8 := js.Global().Get("Uint8Array").New(len(data))
		js.CopyBytesToJS(u8, data)
		return u8
	}
	info, ok := await(lm.Call("load", bytes(models.Default())))
	if !ok {
		fmt.Println("load failed:", info.Get("message").String())
		return
	}
	fmt.Println("vocabulary:", info.Get("vocabSize").Int())

	// The chunks are printed afterwards: a js.Func must not block, and
	// printing to the example's captured stdout can.
	var chunks []string
	onToken := js.FuncOf(func(_ js.Value, a []js.Value) any {
		chunks = append(chunks, a[0].Get("text").String())
		return nil
	})
	defer onToken.Release()
	res, ok := await(lm.Call("stream", "Once upon a time", map[string]any{"temperature": 0, "maxTokens": 11}, onToken))
	if !ok {
		fmt.Println("stream failed:", res.Get("message").String())
		return
	}
	fmt.Printf("%q\n", chunks)
	fmt.Println(res.Get("finishReason").String()+":", res.Get("text").String())

	_, ok = await(lm.Call("generate", "Once", map[string]any{"topK": -1}))
	fmt.Println("topK -1 accepted:", ok)
	// Output:
	// vocabulary: 512
	// ["," " there" " was" " a" " little" " g" "ir" "l" " named" " Lily" "."]
	// length: , there was a little girl named Lily.
	// topK -1 accepted: false
}
