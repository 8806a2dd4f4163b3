//go:build ignore

// gen writes kernels.wasm: go generate ./engine/tensor/simd
package main

import (
	"fmt"
	"os"

	"github.com/wasmlm/wasmlm/engine/tensor/simd"
)

func main() {
	b, err := simd.Module()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile("kernels.wasm", b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
