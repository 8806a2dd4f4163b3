//go:build !(js && wasm)

package main

import (
	"fmt"
	"os"
)

// main explains how to build the worker: natively it has nothing to serve
// (syumai/workers' native fallback would listen on every interface).
func main() {
	fmt.Fprintln(os.Stderr, "cmd/worker is an edge worker: build it with `make worker` (GOOS=js GOARCH=wasm);\nfor a native server run `wasmlm serve`.")
	os.Exit(2)
}
