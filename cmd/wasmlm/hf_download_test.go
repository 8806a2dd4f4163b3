//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// hfStandIn is a stand-in for the Hugging Face Hub on 127.0.0.1: it serves
// files at /owner/repo/resolve/revision/path and counts the requests for
// each path.
type hfStandIn struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newHFStandIn(t *testing.T, files map[string][]byte) *hfStandIn {
	t.Helper()
	s := &hfStandIn{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.EscapedPath()]++
		s.mu.Unlock()
		b, ok := files[r.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *hfStandIn) requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// TestHFModelDownloadsOnce: -m hf:… downloads the file from HF_ENDPOINT into
// WASMLM_CACHE_DIR once, and every command then runs it as the local file:
// the same tokens; a split model's parts all come; errors name what failed.
func TestHFModelDownloadsOnce(t *testing.T) {
	whole, first, parts := splitModel(t)
	data, err := os.ReadFile(whole)
	require.NoError(t, err)
	files := map[string][]byte{"/acme/tiny-GGUF/resolve/main/tiny.gguf": data}
	for i, p := range parts {
		files["/acme/tiny-GGUF/resolve/v1/"+filepath.Base(gguf.SplitPath("m", i+1, 3))] = p
	}
	hub := newHFStandIn(t, files)
	cache := t.TempDir()
	t.Setenv("HF_ENDPOINT", hub.URL+"/")
	t.Setenv("WASMLM_CACHE_DIR", cache)

	generate := func(model string) (generateJSON, string) {
		code, out, errOut := runCLI(t, "generate", "-m", model, "-p", "Once upon a time", "-temp", "0", "-n", "12", "-json")
		require.Equal(t, exitOK, code, errOut)
		var res generateJSON
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		return res, errOut
	}
	want, _ := generate(whole)
	got, errOut := generate("hf:acme/tiny-GGUF/tiny.gguf")
	assert.Equal(t, want.Tokens, got.Tokens)
	assert.Contains(t, errOut, "downloading "+hub.URL+"/acme/tiny-GGUF/resolve/main/tiny.gguf")
	local := filepath.Join(cache, "hf", "acme", "tiny-GGUF", "main", "tiny.gguf")
	kept, err := os.ReadFile(local)
	require.NoError(t, err)
	assert.Equal(t, data, kept)
	got, errOut = generate("hf:acme/tiny-GGUF/tiny.gguf")
	assert.Equal(t, want.Tokens, got.Tokens)
	assert.NotContains(t, errOut, "downloading", "the second run reads the cache")
	assert.Equal(t, 1, hub.requests("/acme/tiny-GGUF/resolve/main/tiny.gguf"))

	// A split model by its first part, at a revision.
	got, _ = generate("hf:acme/tiny-GGUF/" + filepath.Base(first) + "@v1")
	assert.Equal(t, want.Tokens, got.Tokens)
	for i := range parts {
		assert.Equal(t, 1, hub.requests("/acme/tiny-GGUF/resolve/v1/"+filepath.Base(gguf.SplitPath("m", i+1, 3))), "part %d", i+1)
	}

	code, _, errOut := runCLI(t, "info", "-m", "hf:acme/tiny-GGUF/missing.gguf")
	assert.NotEqual(t, exitOK, code)
	assert.Contains(t, errOut, "GET "+hub.URL+"/acme/tiny-GGUF/resolve/main/missing.gguf: 404 Not Found")
	entries, err := os.ReadDir(filepath.Join(cache, "hf", "acme", "tiny-GGUF", "main"))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "a failed download leaves nothing in the cache")

	code, _, errOut = runCLI(t, "info", "-m", "hf:acme/tiny-GGUF")
	assert.NotEqual(t, exitOK, code)
	assert.Contains(t, errOut, `"hf:acme/tiny-GGUF" names no file in the repository`)

	t.Setenv("HF_ENDPOINT", "ftp://mirror.example")
	code, _, errOut = runCLI(t, "info", "-m", "hf:acme/tiny-GGUF/tiny.gguf")
	assert.NotEqual(t, exitOK, code)
	assert.Contains(t, errOut, `HF_ENDPOINT "ftp://mirror.example" is not an http:// or https:// URL`)
}

// TestServeHFModel: serve -m hf:… serves the downloaded model under the
// file's name.
func TestServeHFModel(t *testing.T) {
	whole, _, _ := splitModel(t)
	data, err := os.ReadFile(whole)
	require.NoError(t, err)
	hub := newHFStandIn(t, map[string][]byte{"/acme/tiny-GGUF/resolve/main/tiny-Q8_0.gguf": data})
	t.Setenv("HF_ENDPOINT", hub.URL)
	t.Setenv("WASMLM_CACHE_DIR", t.TempDir())

	ctx, interrupt := context.WithCancel(context.Background())
	var stderr lockedBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-m", "hf:acme/tiny-GGUF/tiny-Q8_0.gguf"}, io.Discard, &stderr)
	}()
	base := servedAt(t, &stderr)
	model, tokens := greedyCompletion(t, base, 3)
	assert.Equal(t, "tiny-Q8_0", model)
	assert.Equal(t, 3, tokens)
	assert.Equal(t, 1, hub.requests("/acme/tiny-GGUF/resolve/main/tiny-Q8_0.gguf"))
	stopServe(t, interrupt, exit, &stderr)
}
