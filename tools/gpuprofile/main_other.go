//go:build !js

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "gpuprofile runs in a browser's Web Worker (GOOS=js GOARCH=wasm): make bench BENCH=webgpu starts it there")
	os.Exit(2)
}
