//go:build !wasmlm_serve

package jsbridge

import (
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeHTTPUnavailable: without the build tag wasmlm_serve, serveHTTP
// is there but rejects with serve_failed, saying why, and never calls
// onResponse.
func TestServeHTTPUnavailable(t *testing.T) {
	b := newLoaded(t)
	called := false
	onResponse := js.FuncOf(func(js.Value, []js.Value) any { called = true; return nil })
	defer onResponse.Release()
	req := obj(map[string]any{"method": "GET", "url": "/v1/models"})
	_, err := call(t, b, "serveHTTP", req, js.Undefined(), onResponse)
	require.Error(t, err)
	assert.Equal(t, "serve_failed", err.(*jsError).Code)
	assert.Contains(t, err.(*jsError).Message, "{ serve: true }")
	assert.False(t, called, "onResponse")
}
