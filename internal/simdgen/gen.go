//go:build ignore

// gen writes kernels.wasm: go generate ./internal/simdgen
package main

import (
	"fmt"
	"os"

	"github.com/wasmlm/wasmlm/internal/simdgen"
)

func main() {
	b, err := simdgen.Module()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile("kernels.wasm", b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
