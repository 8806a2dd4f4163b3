//go:build js && wasm

package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"syscall/js"

	"github.com/syumai/workers"
	"github.com/syumai/workers/cloudflare"
	"github.com/wasmlm/wasmlm/cmd/worker/internal/edgelimit"
	"github.com/wasmlm/wasmlm/httpapi"
)

// limitsGlobal is the globalThis property holding the isolate's limits
// (edgelimit.Store).
const limitsGlobal = "wasmlmLimits"

func main() {
	h, err := newHandler()
	if err != nil {
		h = failure(err)
	}
	workers.Serve(joinHeaders(h))
}

// newHandler reads the worker's configuration from its environment, loads
// the embedded model in place and wraps it in the API. Each Go instance
// serves exactly one request, so the environment is read afresh for each
// (a new secret takes effect at once), one slot suffices and no request
// ever waits. What wasmlm serve adds for a server on a machine is left out
// on purpose: no Host allow-list (AllowHost), since the worker is reached
// under its own *.workers.dev or custom name and has no loopback to keep
// pages from; no WriteTimeout, since syumai/workers' ResponseWriter takes no
// deadlines (the platform bounds a request's time). The handler's JSON-only
// POSTs and CORS preflights hold here too.
func newHandler() (http.Handler, error) {
	cfg, err := readConfig(getenv)
	if err != nil {
		return nil, err
	}
	model, name, err := loadModel(getenv, cloudflare.GetBinding)
	if err != nil {
		return nil, err
	}
	if context, err := model.SessionContextLength(0); err == nil && cfg.maxTokens > context {
		return nil, fmt.Errorf("%w: %s = %d exceeds the model's context of %d tokens", errMisconfigured, envMaxTokens, cfg.maxTokens, context)
	}
	opts := httpapi.Options{
		ModelName:   name,
		Slots:       1,
		QueueSize:   -1,
		AllowOrigin: "*", // an edge API is there to be called from pages of any origin
		MaxTokens:   cfg.maxTokens,
		// The variable's 0 is no cap; Options' 0 is the default cap.
		MaxEmbedTokens: cmp.Or(cfg.maxEmbed, -1),
	}
	if len(cfg.keys) > 0 {
		if opts.Keys, err = httpapi.NewKeyRing(cfg.keys...); err != nil {
			return nil, fmt.Errorf("%w: the secret %s is malformed", errMisconfigured, envKeys) // splitKeys checked them
		}
	}
	if opts.Limiter, err = newLimiter(cfg); err != nil {
		return nil, err
	}
	return httpapi.New(model, opts)
}

// newLimiter is the limiter cfg and the environment ask for, or nil:
// Cloudflare's Rate Limiting binding when bound, in front of the isolate's
// limits when set. Clients are API keys, or without keys addresses: the
// CF-Connecting-IP header's, which syumai/workers makes the request's
// RemoteAddr (without the header, as in a local workerd, every client
// counts as one).
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
