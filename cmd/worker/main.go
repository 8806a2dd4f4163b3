//go:build js && wasm

package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"syscall/js"

	"github.com/syumai/workers/cloudflare"
	"github.com/wasmlm/wasmlm/cmd/worker/internal/edgelimit"
	"github.com/wasmlm/wasmlm/cmd/worker/internal/modelsource"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
)

// limitsGlobal is the globalThis property holding the isolate's limits
// (edgelimit.Store).
const limitsGlobal = "wasmlmLimits"

// main starts the isolate's Go instance: worker.mjs runs it once and hands
// it every request of the isolate. The runtime context worker.mjs gives
// go.run (syumai/workers' wasm_exec.js makes it the global "context")
// carries the env, read here once, and the object the instance registers
// its entry point in: binding.serve(request, onResponse, done, signal) (see
// instance.serveJS). binding.ordinal is the how-many-th instance of the
// isolate this is; binding.ready() says the entry point is there. main
// then returns to JavaScript for good: the instance lives on in the
// callbacks, until the isolate goes or the program exits.
func main() {
	// GOGC alone lets the heap grow to twice the live data before a
	// collection: the limit collects sooner instead, so that the Go
	// instance's WebAssembly memory stays within the budget the model was
	// admitted under (modelsource.DefaultBudget: the isolate's 128 MiB less
	// what JavaScript keeps).
	// The limit sits modelsource.CollectorHeadroom below the budget: with
	// the live data of a model that fills the budget (its context is the
	// longest the estimate admits), the collector otherwise starts only
	// once the heap reaches the budget, and what requests allocate while it
	// runs, and the free spans too small for a new allocation, grew the
	// memory past it.
	debug.SetMemoryLimit(modelsource.DefaultBudget - modelsource.CollectorHeadroom)
	binding := js.Global().Get("context").Get("binding")
	in := newInstance(binding.Get("ordinal").Int(), getenv)
	in.live = binding.Get("live").Int()
	in.memory = binding.Get("memory")
	in.handler() // the model loads before the first request is served
	binding.Set("serve", js.FuncOf(in.serveJS))
	binding.Call("ready")
	select {}
}

// newHandler loads the model through loadModel and wraps it in the API for
// cfg; notice says what of cfg it could not apply as asked (maxTokensFor).
// ended is told of every completion, embeddings and rerank request that
// ended (httpapi.Options.OnCompletion). The handler keeps serve's queue: one slot (the isolate has one
// thread), httpapi.DefaultQueueSize requests waiting, 503 beyond. What
// wasmlm serve adds for a server on a machine is left out on purpose: no
// Host allow-list (AllowHost), since the worker is reached under its own
// *.workers.dev or custom name and has no loopback to keep pages from; no
// WriteTimeout, since its ResponseWriter takes no deadlines (the platform
// bounds a request's time). The handler's JSON-only POSTs and CORS
// preflights hold here too.
func newHandler(cfg edgeConfig, limiter httpapi.Limiter, ended func(httpapi.Completion)) (h http.Handler, notice string, err error) {
	model, name, err := loadModel(getenv, cloudflare.GetBinding)
	if err != nil {
		return nil, "", err
	}
	kv, context := sessionFit(model)
	maxTokens, notice := maxTokensFor(cfg, model.Generates(), context)
	opts := httpapi.Options{
		ModelName:   name,
		Slots:       1,
		QueueSize:   httpapi.DefaultQueueSize,
		AllowOrigin: "*", // an edge API is there to be called from pages of any origin
		MaxTokens:   maxTokens,
		// The session the budget admitted the model with (loadModel).
		ContextLength: context,
		KVType:        kv,
		// The variable's 0 is no cap; Options' 0 is the default cap.
		MaxEmbedTokens: cmp.Or(cfg.maxEmbed, -1),
		Limiter:        limiter,
		ContextShift:   cfg.shift,
		ContextHint:    contextHint,
		OnCompletion:   ended,
	}
	if len(cfg.keys) > 0 {
		if opts.Keys, err = httpapi.NewKeyRing(cfg.keys...); err != nil {
			return nil, "", fmt.Errorf("%w: the secret %s is malformed", errMisconfigured, envKeys) // splitKeys checked them
		}
	}
	api, err := httpapi.New(model, opts)
	return api, notice, err
}

// contextHint ends the worker's error for a prompt that leaves no room
// for a completion: no variable lengthens the context, which is the most
// of the model's that the isolate's memory holds (sessionFit).
const contextHint = "The worker's context is the limit: as much of its model's as its memory holds."

// sessionFit is the session the worker serves model with, the one
// loadModel admitted it with (modelsource.Fit): the KV cache in F32 when
// the model's whole context (at most engine.DefaultContextLength) fits the
// budget with it, as a native session of a small model; otherwise in F16
// with the longest context the budget holds beside the weights:
// (budget − weights − fixed costs) / bytes per position.
func sessionFit(model *engine.Model) (engine.KVType, int) {
	return modelsource.Fit(model.Config(), int64(model.FileSize()), modelsource.DefaultBudget)
}

// newLimiter is the limiter cfg and the environment ask for, or nil:
// Cloudflare's Rate Limiting binding when bound, in front of the isolate's
// limits when set. Clients are API keys, or without keys addresses: the
// CF-Connecting-IP header's, which serveJS makes the request's RemoteAddr
// (without the header, as in a local workerd, every client counts as one).
func newLimiter(cfg edgeConfig) (httpapi.Limiter, error) {
	var next httpapi.Limiter
	if cfg.limits != (httpapi.Limits{}) {
		l, err := httpapi.NewLimiter(cfg.limits, edgelimit.NewStore(limitsGlobal))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errMisconfigured, err)
		}
		next = l
	}
	binding := cloudflare.GetBinding(envLimiter)
	if binding.IsUndefined() {
		return next, nil
	}
	b, err := edgelimit.NewBinding(binding, cfg.period, next)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errMisconfigured, envLimiter, err)
	}
	return b, nil
}

// getenv reads a variable or secret of the worker's env as text: wrangler
// makes a [vars] number a JavaScript number, which is written back in
// decimal.
func getenv(name string) (string, error) {
	v := cloudflare.GetBinding(name)
	switch v.Type() {
	case js.TypeUndefined, js.TypeNull:
		return "", nil
	case js.TypeString:
		return v.String(), nil
	case js.TypeNumber:
		return strconv.FormatFloat(v.Float(), 'f', -1, 64), nil
	}
	return "", fmt.Errorf("%s is a binding of another kind (%s), not text", name, v.Type())
}

// failure answers every request with an OpenAI error object saying why the
// worker cannot serve, rather than failing opaquely or serving without the
// keys or limits it was given.
func failure(err error) http.Handler {
	code := "model_load_failed"
	var coded interface{ Code() string } // a model source's failure (modelsource.Error)
	if errors.As(err, &coded) {
		code = coded.Code()
	} else if errors.Is(err, errMisconfigured) {
		code = "worker_misconfigured"
	}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": err.Error(), "type": "server_error", "param": nil, "code": code,
	}})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write(body)
	})
}
