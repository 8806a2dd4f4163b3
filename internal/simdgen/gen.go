//go:build ignore

// gen writes kernels.wasm and kernels-relaxed.wasm: go generate ./internal/simdgen
package main

import (
	"fmt"
	"os"

	"github.com/wasmlm/wasmlm/internal/simdgen"
)

func main() {
	for file, module := range map[string]func() ([]byte, error){
		"kernels.wasm":         simdgen.Module,
		"kernels-relaxed.wasm": simdgen.RelaxedModule,
	} {
		b, err := module()
		if err == nil {
			err = os.WriteFile(file, b, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}
