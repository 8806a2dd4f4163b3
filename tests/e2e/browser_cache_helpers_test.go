//go:build !js

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The model cache's tests (browser_cache_test.go) run web/cache.js in
// Chromium against a server of their own: the site's files, and models
// served as a static host serves them (Range, If-Range, ETag,
// Last-Modified), which the test can make misbehave. Each test has its own
// server, so its own origin, so its own Origin Private File System and
// Cache Storage.

// cacheFiles are the model cache's files `make web` must write.
var cacheFiles = []string{"cache.js", "cache-opfs.js", "cache-io.js", "cache.worker.js", "sha256.js"}

// modelsPath is where a cache test's server serves its models.
const modelsPath = "/__cache__/"

// modelServer serves files with http.ServeContent (Range, If-Range, ETag,
// Last-Modified) and records the requests it gets. dropAfter makes the
// next response stop after n body bytes, the connection closed under it;
// holdAt makes it pause there; ignoreRange makes it answer every request
// with the whole file, 200.
type modelServer struct {
	mu          sync.Mutex
	files       map[string]modelFile
	drop        int           // > 0: the next response stops after this many bytes of its body
	hold        int           // > 0: the next response pauses after this many bytes of its body
	release     chan struct{} // closed by a request for releasePath: the dropped or held response goes on
	ignoreRange bool
	// dropWhole makes drop wait for a request without a Range header (a
	// download from the start, not a read of the header).
	dropWhole bool
	requests  []modelRequest
}

// releasePath is what the page fetches to let a held response go on, or a
// dropped one end once it has read the bytes before the drop (releaseAt
// in cacheScript). Chromium discards the bytes a response
// has received but the page has not read yet when its connection fails, so
// the server closes the connection only then, and the test knows how many
// bytes the page got.
const releasePath = modelsPath + "__release"

// releaseTimeout is how long a dropped response waits for the page.
const releaseTimeout = 10 * time.Second

type modelFile struct {
	data     []byte
	etag     string
	modified time.Time
}

// modelRequest is what the server saw of a request, and what it answered.
type modelRequest struct {
	Path, Range, IfRange string
	Status               int
	Dropped              bool // the connection was closed mid-body
}

// put serves data at modelsPath+name, with a new ETag, and returns the ETag.
func (m *modelServer) put(name string, data []byte) string {
	sum := sha256.Sum256(data)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[name] = modelFile{data: data, etag: etag, modified: time.Now().UTC().Truncate(time.Second)}
	return etag
}

// dropAfter makes the next response stop after n bytes of its body, once
// the page fetches releasePath (or releaseTimeout passes).
func (m *modelServer) dropAfter(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drop = n
	m.release = make(chan struct{})
}

// dropDownloadAfter is dropAfter for the next request without a Range
// header: a download from the start, not a load's read of the header.
func (m *modelServer) dropDownloadAfter(n int) {
	m.dropAfter(n)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropWhole = true
}

// holdAt makes the next response pause after n bytes of its body until the
// page fetches releasePath (or releaseTimeout passes).
func (m *modelServer) holdAt(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hold = n
	m.release = make(chan struct{})
}

func (m *modelServer) setIgnoreRange(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ignoreRange = on
}

// log returns the requests so far.
func (m *modelServer) log() []modelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]modelRequest(nil), m.requests...)
}

func (m *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == releasePath {
		m.mu.Lock()
		if m.release != nil {
			close(m.release)
			m.release = nil
		}
		m.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	name := r.URL.Path[len(modelsPath):]
	m.mu.Lock()
	f, ok := m.files[name]
	drop, hold, release := 0, 0, m.release
	if ok && (!m.dropWhole || r.Header.Get("Range") == "") {
		drop, m.drop = m.drop, 0
		hold, m.hold = m.hold, 0
	}
	ignoreRange := m.ignoreRange
	m.mu.Unlock()
	req := modelRequest{Path: r.URL.Path, Range: r.Header.Get("Range"), IfRange: r.Header.Get("If-Range")}
	defer func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.requests = append(m.requests, req)
	}()
	if !ok {
		req.Status = http.StatusNotFound
		http.NotFound(w, r)
		return
	}
	if drop > 0 {
		req.Status, req.Dropped = http.StatusOK, true
		dropConnection(w, f, drop, release)
		return
	}
	if hold > 0 {
		req.Status = http.StatusOK
		holdResponse(w, f, hold, release)
		return
	}
	if ignoreRange {
		r.Header.Del("Range")
	}
	w.Header().Set("ETag", f.etag)
	w.Header().Set("Content-Type", "application/octet-stream")
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	http.ServeContent(rec, r, name, f.modified, bytes.NewReader(f.data))
	req.Status = rec.status
}

// dropConnection answers with the headers of the whole file and its first n
// bytes, then, when release is closed, closes the connection: a download
// cut off halfway.
func dropConnection(w http.ResponseWriter, f modelFile, n int, release <-chan struct{}) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "hijacking the connection: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n"+
		"ETag: %s\r\nLast-Modified: %s\r\nAccept-Ranges: bytes\r\n\r\n", len(f.data), f.etag, f.modified.Format(http.TimeFormat))
	buf.Write(f.data[:n])
	buf.Flush()
	select {
	case <-release:
	case <-time.After(releaseTimeout):
	}
}

// holdResponse answers with the whole file, pausing after its first n bytes
// until release is closed.
func holdResponse(w http.ResponseWriter, f modelFile, n int, release <-chan struct{}) {
	w.Header().Set("ETag", f.etag)
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(f.data[:n])
	http.NewResponseController(w).Flush()
	select {
	case <-release:
	case <-time.After(releaseTimeout):
	}
	w.Write(f.data[n:])
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// newCacheSite serves the site and a modelServer on an origin of their own
// and opens the blank page there.
func newCacheSite(t *testing.T) (*tab, *modelServer) {
	t.Helper()
	web := webSite(t)
	for _, f := range cacheFiles {
		_, err := os.Stat(filepath.Join(web.dist, f))
		require.NoError(t, err, "%s is not a complete `make web` site", web.dist)
	}
	m := &modelServer{files: map[string]modelFile{}}
	mux := http.NewServeMux()
	mux.Handle(modelsPath, m)
	mux.HandleFunc(blankPage, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>e2e</title></head><body></body></html>`)
	})
	mux.Handle("/", http.FileServer(http.Dir(web.dist)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	tb := openTab(t, &site{url: srv.URL, dist: web.dist, hits: map[string]int{}}, blankPage, nil)
	return tb, m
}

// randomModel is size bytes of seeded random data.
func randomModel(size int, seed byte) []byte {
	b := make([]byte, size)
	rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// cacheScript wraps body, an async function body, as an expression for
// eval, with cache.js's exports and helpers in scope: hex(blob) (its
// SHA-256 by crypto.subtle), attempt(promise) (what cachedModel gave, as
// a cacheResult), releaseAt(n) (an onProgress that lets a dropped
// response end once n bytes have arrived), dataFile() (the handle of the
// one .bin file in the cache's directory) and entryNames() (the
// directory's files).
func cacheScript(body string) string {
	return `(async () => {
		const { cachedModel, cache } = await import('/cache.js');
		const hex = async (blob) => Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', await blob.arrayBuffer())),
			(b) => b.toString(16).padStart(2, '0')).join('');
		const attempt = async (p) => {
			try {
				const r = await p;
				return r === null ? { none: true } : { cached: r.cached, size: r.file.size, sha: await hex(r.file) };
			} catch (e) {
				return { code: e.code ?? 'none', name: e.name, message: String(e.message) };
			}
		};
		const releaseAt = (n) => {
			let sent = false;
			return (loaded) => {
				if (sent || loaded < n) return;
				sent = true;
				fetch('` + releasePath + `', { method: 'POST' });
			};
		};
		const dir = async () => (await navigator.storage.getDirectory()).getDirectoryHandle('wasmlm-models', { create: true });
		const entryNames = async () => {
			const names = [];
			for await (const name of (await dir()).keys()) names.push(name);
			return names.sort();
		};
		const dataFile = async () => {
			for await (const [name, h] of (await dir()).entries()) if (name.endsWith('.bin')) return h;
			throw new Error('no .bin file');
		};
		` + body + `
	})()`
}

// startHeldDownload starts cachedModel(modelURL) in tb (window.result is
// its attempt) and waits until the response held after n bytes (holdAt)
// has delivered them.
func startHeldDownload(t *testing.T, tb *tab, n int) {
	t.Helper()
	started := eval[bool](t, tb, cacheScript(`
		window.loaded = 0;
		window.result = attempt(cachedModel('`+modelURL+`', { onProgress: (n) => { window.loaded = n; } }));
		for (let i = 0; i < 1000 && window.loaded < `+strconv.Itoa(n)+`; i++) await new Promise((r) => setTimeout(r, 10));
		return window.loaded === `+strconv.Itoa(n)+`;`))
	require.True(t, started, "the download reached the pause")
}

// cacheResult is what attempt(cachedModel(...)) returns.
type cacheResult struct {
	None    bool   `json:"none"` // cachedModel returned null
	Cached  bool   `json:"cached"`
	Size    int    `json:"size"`
	SHA     string `json:"sha"`
	Code    string `json:"code"` // the rejection's
	Name    string `json:"name"`
	Message string `json:"message"`
}

// cacheEntry is an element of cache.list().
type cacheEntry struct {
	URL      string  `json:"url"`
	Size     *int    `json:"size"`
	Total    *int    `json:"total"`
	Complete bool    `json:"complete"`
	SHA256   string  `json:"sha256"`
	Storage  string  `json:"storage"`
	Modified float64 `json:"modified"`
}

// progressCall is one onProgress(loaded, total, phase) call.
type progressCall struct {
	Loaded int    `json:"loaded"`
	Total  *int   `json:"total"`
	Phase  string `json:"phase"`
}

// progressJS is a script fragment: an array seen and an onProgress that records into it.
const progressJS = `const seen = [];
		const onProgress = (loaded, total, phase) => { seen.push({ loaded, total, phase }); };`

// phases are the distinct phases of calls, in order of first appearance.
func phases(calls []progressCall) []string {
	var out []string
	for _, c := range calls {
		if len(out) == 0 || out[len(out)-1] != c.Phase {
			out = append(out, c.Phase)
		}
	}
	return out
}
