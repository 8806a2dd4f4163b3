package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/models"
)

// splitLikeSyumai sets a request header as syumai/workers' jshttp.ToHeader
// does: the value split at every comma.
func splitLikeSyumai(r *http.Request, name, value string) {
	for _, v := range strings.Split(value, ",") {
		r.Header.Add(name, v)
	}
}

// TestJoinHeaders: behind joinHeaders the API sees each header whole, so a
// key followed by a comma and more is not the key, and list headers keep
// every item.
func TestJoinHeaders(t *testing.T) {
	model, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	keys, err := httpapi.NewKeyRing("sk-a")
	require.NoError(t, err)
	api, err := httpapi.New(model, httpapi.Options{Keys: keys, AllowOrigin: "*"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name, header, value string
		status              int
	}{
		{"the key", "Authorization", "Bearer sk-a", http.StatusOK},
		{"the key, a comma and more", "Authorization", "Bearer sk-a,sk-b", http.StatusUnauthorized},
		{"the key and a comma", "Authorization", "Bearer sk-a,", http.StatusUnauthorized},
		{"as x-api-key", "X-Api-Key", "sk-a, sk-b", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/models", nil)
			splitLikeSyumai(r, tc.header, tc.value)
			w := httptest.NewRecorder()
			joinHeaders(api).ServeHTTP(w, r)
			assert.Equal(t, tc.status, w.Code, "%s", w.Body)
			assert.Equal(t, []string{tc.value}, r.Header.Values(tc.header))
		})
	}

	r := httptest.NewRequest("OPTIONS", "/v1/chat/completions", nil)
	r.Header.Set("Origin", "https://app.example")
	r.Header.Set("Access-Control-Request-Method", "POST")
	splitLikeSyumai(r, "Access-Control-Request-Headers", "authorization, content-type, x-stainless-os")
	w := httptest.NewRecorder()
	joinHeaders(api).ServeHTTP(w, r)
	require.Equal(t, http.StatusNoContent, w.Code)
	allowed := strings.ToLower(strings.Join(w.Header().Values("Access-Control-Allow-Headers"), ","))
	for _, h := range []string{"authorization", "content-type", "x-stainless-os"} {
		assert.Contains(t, allowed, h)
	}
}
