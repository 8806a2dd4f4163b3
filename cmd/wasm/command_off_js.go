//go:build !wasmlm_serve

package main

import (
	"fmt"
	"os"
)

// runCommand refuses: only the serving build (wasmlm-serve.wasm) runs the
// npm package's `wasmlm serve` (command_js.go).
func runCommand([]string) int {
	fmt.Fprintln(os.Stderr, "wasmlm: this build (wasmlm.wasm) runs no command: wasmlm-serve.wasm runs `wasmlm serve`")
	return 2
}
