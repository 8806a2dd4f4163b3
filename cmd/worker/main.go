//go:build js && wasm

package main

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/syumai/workers"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/models"
)

func main() {
	h, err := newHandler()
	if err != nil {
		h = loadFailure(err)
	}
	workers.Serve(joinHeaders(h))
}

// newHandler loads the embedded model in place and wraps it in the API.
// Each Go instance serves exactly one request, so one slot suffices and no
// request ever waits. What wasmlm serve adds for a server on a machine is
// left out on purpose: no Host allow-list (AllowHost), since the worker is
// reached under its own *.workers.dev or custom name and has no loopback to
// keep pages from; no WriteTimeout, since syumai/workers' ResponseWriter
// takes no deadlines (the platform bounds a request's time). The handler's
// JSON-only POSTs and CORS preflights hold here too.
func newHandler() (http.Handler, error) {
	model, err := engine.Load(models.Default(), engine.LoadOptions{})
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", models.DefaultName, err)
	}
	return httpapi.New(model, httpapi.Options{
		ModelName:   models.DefaultName,
		Slots:       1,
		QueueSize:   -1,
		AllowOrigin: "*", // an edge API is there to be called from pages of any origin
	})
}

// loadFailure answers every request with an OpenAI error object saying why
// the worker cannot serve, rather than failing opaquely.
func loadFailure(err error) http.Handler {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": err.Error(), "type": "server_error", "param": nil, "code": "model_load_failed",
	}})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write(body)
	})
}
