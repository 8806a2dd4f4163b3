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

	"github.com/wasmlm/wasmlm/models"
)

// hfSourceCase is a row of cmd/wasmlm/testdata/hf_sources.json, the table
// the CLI's hf: resolution is held to as well: a shorthand, the endpoint
// (default https://huggingface.co), and the URL it resolves to or a phrase
// of the error it is.
type hfSourceCase struct {
	Source   string `json:"source"`
	Endpoint string `json:"endpoint"`
	URL      string `json:"url"`
	Error    string `json:"error"`
}

// The library resolves hf: sources as the CLI does, by the same table.
func TestBrowserHFSources(t *testing.T) {
	b, err := os.ReadFile("../../cmd/wasmlm/testdata/hf_sources.json")
	require.NoError(t, err)
	var cases []hfSourceCase
	require.NoError(t, json.Unmarshal(b, &cases))
	tb := newTab(t, blankPage)
	type result struct{ URL, Code, Message string }
	got := eval[[]result](t, tb, `(async () => {
		const { hfURL, checkHFEndpoint } = await import('/load.js');
		return `+string(b)+`.map((c) => {
			try {
				return { URL: hfURL(c.source, checkHFEndpoint(c.endpoint ?? 'https://huggingface.co'), 'source'), Code: '', Message: '' };
			} catch (err) {
				return { URL: '', Code: err.code, Message: err.message };
			}
		});
	})()`)
	require.Len(t, got, len(cases))
	for i, c := range cases {
		if c.Error != "" {
			assert.Equal(t, "invalid_argument", got[i].Code, c.Source)
			assert.Contains(t, got[i].Message, c.Error, c.Source)
			continue
		}
		assert.Equal(t, result{URL: c.URL}, got[i], c.Source)
	}
}

// WasmLM.load and WasmLM.inspect take an hf: source, downloaded from the
// endpoint the hfEndpoint option names (here a stand-in for the Hub on
// 127.0.0.1, another origin); a malformed one or a bad endpoint rejects
// before anything downloads.
func TestBrowserHFLoad(t *testing.T) {
	model, err := os.ReadFile(filepath.Join(webSite(t).dist, "models", models.DefaultFile))
	require.NoError(t, err)
	hub := newHFStandIn(t, model)

	tb := newTab(t, blankPage)
	type answer struct {
		Name, Architecture string
		Tokens             []int
		Weights            int
		Codes              []string
		Messages           []string
	}
	got := eval[answer](t, tb, apiScript(`
		const src = 'hf:acme/stories-GGUF/stories260K-F16.gguf';
		const hfEndpoint = `+jsonString(t, hub.URL)+`;
		const inspection = await WasmLM.inspect(src, { hfEndpoint });
		const lm = await WasmLM.load(src, { hfEndpoint, cache: false });
		const r = await lm.generate('Once upon a time', { maxTokens: 8, temperature: 0 });
		const codes = [], messages = [];
		for (const [s, o] of [['hf:acme/stories-GGUF', { hfEndpoint }], [src, { hfEndpoint: 'ftp://mirror.example' }], [src, { hfEndpoint: 42 }]]) {
			try { await WasmLM.load(s, o); codes.push('loaded'); } catch (err) { codes.push(err.code); messages.push(err.message); }
		}
		const out = { Name: lm.name, Tokens: r.tokens, Architecture: inspection.architecture, Weights: inspection.memory.weights, Codes: codes, Messages: messages };
		lm.unload();
		return out;
	`))
	assert.Equal(t, "stories260K-F16.gguf", got.Name, "the model is named by its file")
	assert.Equal(t, nativeGreedy(t, model, "Once upon a time", 8), got.Tokens, "the model from the stand-in generates as the native engine")
	assert.Equal(t, "llama", got.Architecture)
	assert.Equal(t, len(model), got.Weights)
	assert.Equal(t, []string{"invalid_argument", "invalid_argument", "invalid_argument"}, got.Codes)
	require.Len(t, got.Messages, 3)
	assert.Contains(t, got.Messages[0], "source names no file in the repository")
	assert.Contains(t, got.Messages[1], "hfEndpoint must be an http: or https: URL")
	assert.Contains(t, got.Messages[2], "hfEndpoint must be an http: or https: URL")
	assert.Positive(t, hub.hits(), "the model came from the stand-in")
}

// hfStandIn stands in for the Hugging Face Hub on 127.0.0.1, to pages of
// any origin: it serves one file at every download path
// (/owner/repo/resolve/revision/file) and counts the requests for each.
type hfStandIn struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]int
}

func newHFStandIn(t *testing.T, file []byte) *hfStandIn {
	t.Helper()
	s := &hfStandIn{seen: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if parts := strings.Split(r.URL.Path, "/"); len(parts) < 6 || parts[3] != "resolve" {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.seen[r.URL.Path]++
		s.mu.Unlock()
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(file))
	}))
	t.Cleanup(s.Close)
	return s
}

// hits is how many requests asked for a file.
func (s *hfStandIn) hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, k := range s.seen {
		n += k
	}
	return n
}

// hitsAt is how many requests asked for the file at path.
func (s *hfStandIn) hitsAt(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[path]
}
