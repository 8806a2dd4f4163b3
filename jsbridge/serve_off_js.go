//go:build !wasmlm_serve

package jsbridge

import "syscall/js"

// served is empty in a build without the OpenAI endpoint: serveHTTP and
// httpapi (with net/http, some 2.8 MB of the binary) are only in builds
// tagged wasmlm_serve (serve_js.go), which the page loads when a model is
// loaded with { serve: true }.
//
//lint:ignore U1000 the type of Binding.served, a field only a build tagged wasmlm_serve uses
type served struct{}

// parseServeHTTP rejects: this build serves no HTTP (ErrServeUnavailable).
// The page does not call it (lm.serve refuses a model loaded without
// { serve: true } first); the method is here so that the binding has the
// same methods in both builds.
func (b *Binding) parseServeHTTP([]js.Value) (work, error) {
	return nil, ErrServeUnavailable
}
