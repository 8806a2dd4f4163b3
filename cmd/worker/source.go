//go:build js && wasm

package main

import (
	"fmt"
	"syscall/js"

	"github.com/wasmlm/wasmlm/cmd/worker/internal/modelsource"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/models"
)

// loadModel loads the model the worker's environment names and the name it is served under.
// getenv reads a variable of the env as text ("" when unset); binding
// returns a binding of the env (undefined when it is not bound). The
// model comes from the R2 bucket MODEL_BUCKET (key WASMLM_MODEL), a URL
// or static asset (WASMLM_MODEL_URL), or, when neither is set, is the
// embedded default, loaded in place (see package modelsource). A failure
// is a *modelsource.Error, whose Code is the error code to answer with.
// It blocks on JavaScript promises: call it from a goroutine, never inside
// a js.Func callback.
func loadModel(getenv func(name string) (string, error), binding func(name string) js.Value) (*engine.Model, string, error) {
	// The session newHandler's httpapi.Options make (sessionFit): its KV
	// cache type and the longest context the budget holds.
	model, name, ok, err := modelsource.FromEnv(getenv, binding, engine.SessionOptions{ContextLength: modelsource.FitContext})
	if err != nil || ok {
		return model, name, err
	}
	model, err = engine.LoadGGUF(models.Default())
	if err != nil {
		return nil, "", fmt.Errorf("loading %s: %w", models.DefaultName, err)
	}
	return model, models.DefaultName, nil
}
