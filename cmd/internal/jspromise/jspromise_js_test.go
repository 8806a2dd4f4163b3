package jspromise

import (
	"context"
	"errors"
	"strings"
	"syscall/js"
	"testing"
	"time"
)

// TestAwait: a resolved promise's value, a rejection's reason as an error,
// a plain value adopted, and a promise that never settles not holding the
// caller once its context ends.
func TestAwait(t *testing.T) {
	promise := js.Global().Get("Promise")
	never := promise.New(js.Global().Get("Function").New("resolve", "reject", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Await(ctx, never); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Await(never): %v, want the context's deadline", err)
	}
	for _, tc := range []struct {
		name string
		p    js.Value
		want int
		err  string
	}{
		{"plain value", js.ValueOf(7), 7, ""},
		{"resolved", promise.Call("resolve", 8), 8, ""},
		{"rejected", promise.Call("reject", js.Global().Get("Error").New("no")), 0, "rejected: Error: no"},
	} {
		v, err := Await(context.Background(), tc.p)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || v.Int() != tc.want):
			t.Errorf("%s: %v, %v; want %d", tc.name, v, err, tc.want)
		}
	}
}

// TestCall: a method's exception is an error, not a panic.
func TestCall(t *testing.T) {
	if _, err := Call(js.Global().Get("JSON"), "parse", "{"); err == nil || !strings.Contains(err.Error(), "parse() threw") {
		t.Errorf("Call(JSON.parse, \"{\"): %v, want the exception", err)
	}
	v, err := AwaitCall(context.Background(), js.Global().Get("Promise"), "resolve", 3)
	if err != nil || v.Int() != 3 {
		t.Errorf("AwaitCall(Promise.resolve, 3) = %v, %v", v, err)
	}
}
