//go:build js && wasm

package main

import (
	"fmt"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/models"
)

// loadModel loads the model the worker's environment names and the name it is served under.
// getenv reads a variable of the env as text ("" when unset); binding
// returns a binding of the env (undefined when it is not bound). Without a
// model named it loads the embedded default in place.
func loadModel(getenv func(name string) (string, error), binding func(name string) js.Value) (*engine.Model, string, error) {
	model, err := engine.LoadGGUF(models.Default())
	if err != nil {
		return nil, "", fmt.Errorf("loading %s: %w", models.DefaultName, err)
	}
	return model, models.DefaultName, nil
}
