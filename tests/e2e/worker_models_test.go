//go:build !js

package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// The edge worker's model from R2, in miniflare (Cloudflare's simulator,
// whose workerd has a local R2): an object put into the bucket MODEL_BUCKET
// and named by WASMLM_MODEL is served as the native server serves the same
// file; a missing key, a truncated object and a wrong SHA-256 are 500s
// naming the cause, healed by fixing the object; a split set is read whole;
// a model too large for the isolate is refused from its header.

// flags are worker-run.mjs's arguments for the env vars (--var NAME=VALUE)
// and the bucket's objects (--put KEY=FILE) given as name, value pairs.
func flags(flag string, pairs ...string) []string {
	var args []string
	for i := 0; i+1 < len(pairs); i += 2 {
		args = append(args, flag, pairs[i]+"="+pairs[i+1])
	}
	return args
}

// greedyCompletion is a greedy completion of base's /v1/completions: the status
// and, for a 200, the text; otherwise the error's code and message.
func greedyCompletion(t *testing.T, base string) (status int, text, code string) {
	t.Helper()
	resp, err := http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Choices []struct{ Text string } `json:"choices"`
		Error   struct{ Code, Message string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	if resp.StatusCode == http.StatusOK {
		require.Len(t, body.Choices, 1)
		return resp.StatusCode, body.Choices[0].Text, ""
	}
	return resp.StatusCode, body.Error.Message, body.Error.Code
}

// servedModel is the id /v1/models names.
func servedModel(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/v1/models")
	require.NoError(t, err)
	defer resp.Body.Close()
	var list struct{ Data []struct{ ID string } }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	require.Len(t, list.Data, 1)
	return list.Data[0].ID
}

// writeModel writes a small random-weight model (seed picks its weights)
// into dir as name and returns its path and bytes.
func writeModel(t *testing.T, dir, name string, seed uint64) (string, []byte) {
	t.Helper()
	b, err := modelgen.Build(modelgen.Spec{
		Shape:       modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, KVHeads: 4, VocabSize: 512, ContextLength: 256},
		MuteSpecial: true, Seed: seed,
	})
	require.NoError(t, err)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path, b
}

// TestWorkerModelFromR2: a model put into the local bucket is served under
// its key's name, with the native server's greedy text on the same file,
// whole and as a split set of three parts.
func TestWorkerModelFromR2(t *testing.T) {
	dir := t.TempDir()
	path, b := writeModel(t, dir, "tiny.gguf", 7)
	_, want := nativeCompletion(t, path, "tiny")
	parts, err := modelgen.Split(b, 3)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, key string
		files     map[string][]byte // key → bytes
		served    string
	}{
		{"whole", "models/tiny.gguf", map[string][]byte{"models/tiny.gguf": b}, "tiny"},
		{"split set", gguf.SplitPath("models/tiny", 1, 3), map[string][]byte{
			gguf.SplitPath("models/tiny", 1, 3): parts[0], gguf.SplitPath("models/tiny", 2, 3): parts[1], gguf.SplitPath("models/tiny", 3, 3): parts[2],
		}, "tiny"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := flags("--var", "WASMLM_MODEL", tc.key)
			for key, data := range tc.files {
				f := filepath.Join(t.TempDir(), filepath.Base(key))
				require.NoError(t, os.WriteFile(f, data, 0o644))
				args = append(args, flags("--put", key, f)...)
			}
			w := serveMiniflare(t, edgeWorker(t).build, nil, args...)
			status, text, _ := greedyCompletion(t, w.url)
			require.Equal(t, http.StatusOK, status, text)
			assert.Equal(t, want, text, "the worker's greedy text against the native server's")
			assert.Equal(t, tc.served, servedModel(t, w.url))
		})
	}
}

// nativeCompletion is the native server's greedy completion of the model
// at path, served as name.
func nativeCompletion(t *testing.T, path, name string) (int, string) {
	t.Helper()
	status, text, _ := greedyCompletion(t, nativeModelServer(t, path, name))
	require.Equal(t, http.StatusOK, status, text)
	return status, text
}

// TestWorkerModelFailuresHeal: a missing key, a truncated object and an
// object whose SHA-256 is not WASMLM_MODEL_SHA256's each answer a 500
// naming the cause; once the right object is put under the key, the next
// request is served by the same isolate's same Go instance (GET /health's
// instance), which tried the load again.
func TestWorkerModelFailuresHeal(t *testing.T) {
	dir := t.TempDir()
	path, b := writeModel(t, dir, "tiny.gguf", 7)
	_, want := nativeCompletion(t, path, "tiny")
	truncated := filepath.Join(dir, "truncated.gguf")
	require.NoError(t, os.WriteFile(truncated, b[:len(b)-4096], 0o644))
	other, _ := writeModel(t, dir, "other.gguf", 8)
	for _, tc := range []struct {
		name   string
		env    []string // NAME, VALUE, ...
		before string   // what is under the key first ("": nothing)
		code   string
		says   []string
	}{
		{"missing key", nil, "", "model_not_found", []string{`MODEL_BUCKET object "tiny.gguf"`, "not found"}},
		{"truncated object", nil, truncated, "model_load_failed", []string{`MODEL_BUCKET object "tiny.gguf"`, "truncated"}},
		{"wrong SHA-256", []string{"WASMLM_MODEL_SHA256", sha256Hex(b)}, other, "model_checksum_mismatch", []string{sha256Hex(b)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := flags("--var", append([]string{"WASMLM_MODEL", "tiny.gguf"}, tc.env...)...)
			if tc.before != "" {
				args = append(args, flags("--put", "tiny.gguf", tc.before)...)
			}
			w := serveMiniflare(t, edgeWorker(t).build, nil, args...)
			status, msg, code := greedyCompletion(t, w.url)
			assert.Equal(t, http.StatusInternalServerError, status)
			assert.Equal(t, tc.code, code, msg)
			for _, s := range tc.says {
				assert.Contains(t, msg, s)
			}
			w.put(t, "tiny.gguf", path)
			status, text, _ := greedyCompletion(t, w.url)
			require.Equal(t, http.StatusOK, status, "after the object was fixed: %s", text)
			assert.Equal(t, want, text)
			in := health(t, w.url)
			assert.Equal(t, 1, in.Ordinal, "the first Go instance of the isolate healed")
			assert.Equal(t, 1, in.Loads, "one load succeeded")
		})
	}
}

// TestWorkerModelChangeNeedsNewIsolate: a changed WASMLM_MODEL takes effect
// in a new isolate (a restarted miniflare over the same bucket).
func TestWorkerModelChangeNeedsNewIsolate(t *testing.T) {
	dir, persist := t.TempDir(), t.TempDir()
	a, _ := writeModel(t, dir, "a.gguf", 1)
	bPath, _ := writeModel(t, dir, "b.gguf", 2)
	_, wantB := nativeCompletion(t, bPath, "b")
	t.Run("a", func(t *testing.T) {
		w := serveMiniflare(t, edgeWorker(t).build, nil, append(flags("--var", "WASMLM_MODEL", "a.gguf"),
			append(flags("--put", "a.gguf", a, "b.gguf", bPath), "--r2", persist)...)...)
		assert.Equal(t, "a", servedModel(t, w.url))
	}) // miniflare stops: the isolate goes
	t.Run("b", func(t *testing.T) {
		w := serveMiniflare(t, edgeWorker(t).build, nil, append(flags("--var", "WASMLM_MODEL", "b.gguf"), "--r2", persist)...)
		assert.Equal(t, "b", servedModel(t, w.url))
		status, text, _ := greedyCompletion(t, w.url)
		require.Equal(t, http.StatusOK, status, text)
		assert.Equal(t, wantB, text)
	})
}

// TestWorkerModelTooLarge: a model whose header says it cannot fit the
// isolate (F32 weights of 121 MiB, which leave no room for the shortest
// context the worker serves with, 256 positions in F16) is refused with
// model_too_large naming the numbers, before any weight is read: the
// object's SHA-256 is wrong too, which reading the weights would have
// found.
func TestWorkerModelTooLarge(t *testing.T) {
	b, err := modelgen.Build(modelgen.Spec{
		Shape: modelgen.Shape{Dim: 512, HiddenDim: 1024, Layers: 12, Heads: 8, KVHeads: 8, VocabSize: 512, ContextLength: 4096},
		Type:  tensor.F32, Seed: 3,
	})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "deep.gguf")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	w := serveMiniflare(t, edgeWorker(t).build, nil, append(flags("--var", "WASMLM_MODEL", "deep.gguf", "WASMLM_MODEL_SHA256", strings.Repeat("0", 64)),
		flags("--put", "deep.gguf", path)...)...)
	status, msg, code := greedyCompletion(t, w.url)
	assert.Equal(t, http.StatusInternalServerError, status)
	assert.Equal(t, "model_too_large", code, msg)
	for _, s := range []string{`MODEL_BUCKET object "deep.gguf"`, "weights", "KV cache", "256 positions, F16", "128.0 MiB", "112.0 MiB"} {
		assert.Contains(t, msg, s)
	}
}

// TestWorkerModelFromAssets: a split set whose parts are the worker's
// static assets (each under Cloudflare's 25 MiB), named by its first
// part's path in WASMLM_MODEL_URL, is served with the native server's
// greedy text. Miniflare's assets answer a Range request with the whole
// file (200): the worker holds one part at a time.
func TestWorkerModelFromAssets(t *testing.T) {
	dir := t.TempDir()
	path, b := writeModel(t, dir, "tiny.gguf", 7)
	_, want := nativeCompletion(t, path, "tiny")
	parts, err := modelgen.Split(b, 3)
	require.NoError(t, err)
	assets := t.TempDir()
	for i, p := range parts {
		require.NoError(t, os.WriteFile(filepath.Join(assets, filepath.Base(gguf.SplitPath("tiny", i+1, 3))), p, 0o644))
	}
	w := serveMiniflare(t, edgeWorker(t).build, nil, append(flags("--var", "WASMLM_MODEL_URL", "/"+gguf.SplitPath("tiny", 1, 3)), "--assets", assets)...)
	status, text, _ := greedyCompletion(t, w.url)
	require.Equal(t, http.StatusOK, status, text)
	assert.Equal(t, want, text)
	assert.Equal(t, "tiny", servedModel(t, w.url))
}

// TestWorkerModelFromURL: a split set served over HTTP, named by its first
// part's URL in WASMLM_MODEL_URL with each part's SHA-256, is read with
// Range requests (206s) and served with the native server's greedy text.
func TestWorkerModelFromURL(t *testing.T) {
	dir := t.TempDir()
	path, b := writeModel(t, dir, "tiny.gguf", 11)
	_, want := nativeCompletion(t, path, "tiny")
	parts, err := modelgen.Split(b, 2)
	require.NoError(t, err)
	files := map[string][]byte{}
	var sums []string
	for i, p := range parts {
		files["/"+filepath.Base(gguf.SplitPath("tiny", i+1, 2))] = p
		sums = append(sums, sha256Hex(p))
	}
	var mu sync.Mutex
	var ranged, whole int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		if r.Header.Get("Range") != "" {
			ranged++
		} else {
			whole++
		}
		mu.Unlock()
		http.ServeContent(w, r, r.URL.Path, time.Time{}, bytes.NewReader(b))
	}))
	t.Cleanup(srv.Close)
	url := srv.URL + "/" + filepath.Base(gguf.SplitPath("tiny", 1, 2))
	w := serveMiniflare(t, edgeWorker(t).build, nil, flags("--var", "WASMLM_MODEL_URL", url, "WASMLM_MODEL_SHA256", strings.Join(sums, ","))...)
	status, text, _ := greedyCompletion(t, w.url)
	require.Equal(t, http.StatusOK, status, text)
	assert.Equal(t, want, text)
	assert.Equal(t, "tiny", servedModel(t, w.url))
	mu.Lock()
	defer mu.Unlock()
	assert.Positive(t, ranged, "Range requests")
	assert.Zero(t, whole, "requests for a whole file")
}

// TestWorkerRunPutsEverySplitPart: worker-run's --model with the first part
// of a split set puts every part in the bucket, and the worker serves the
// set, named by its key's prefix, with the native server's greedy text.
func TestWorkerRunPutsEverySplitPart(t *testing.T) {
	dir := t.TempDir()
	path, b := writeModel(t, dir, "tiny.gguf", 13)
	_, want := nativeCompletion(t, path, "tiny")
	parts, err := modelgen.Split(b, 3)
	require.NoError(t, err)
	for i, p := range parts {
		require.NoError(t, os.WriteFile(gguf.SplitPath(filepath.Join(dir, "set"), i+1, 3), p, 0o644))
	}
	w := serveMiniflare(t, edgeWorker(t).build, nil, "--model", gguf.SplitPath(filepath.Join(dir, "set"), 1, 3))
	status, text, _ := greedyCompletion(t, w.url)
	require.Equal(t, http.StatusOK, status, text)
	assert.Equal(t, want, text)
	assert.Equal(t, "set", servedModel(t, w.url), "the set's name, from its key")
}
