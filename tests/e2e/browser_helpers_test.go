//go:build !js

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/headless"
	"github.com/wasmlm/wasmlm/internal/webfiles"
)

// The browser suite serves web/dist (WASMLM_WEB_DIST, as `make
// test-e2e-browser` sets it; otherwise `make web` builds a fresh copy in a
// temporary directory) with httptest on 127.0.0.1, and drives one headless
// Chromium, a tab per test.

// siteFiles are the files `make web` must write: web/files.txt's lines
// that ship in the site.
func siteFiles(root string) ([]string, error) {
	text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(webfiles.Path)))
	if err != nil {
		return nil, err
	}
	list, err := webfiles.Parse(text)
	if err != nil {
		return nil, err
	}
	return list.Site().Names(), nil
}

// blankPage is a test page on the site's origin, for tests that use the JS
// API without the demo.
const blankPage = "/__e2e__/blank.html"

// llama2cDir is where the site also serves internal/testmodel/testdata,
// which holds stories260K as a llama2.c checkpoint (stories260K.bin,
// tok512.bin), and under gguf/ engine/testdata/gguf, its GGUF files: the
// site itself ships only the GGUF default, and tests of the other load
// paths fetch from here.
const llama2cDir = "/__e2e__/llama2c/"

// site is the served web/dist.
type site struct {
	url  string // base URL, no trailing slash
	dist string // the directory served

	mu   sync.Mutex
	hits map[string]int // requests per path

	files sync.Map // name → *servedFile, under filesDir (serveFile)
}

// requests is the number of requests the server has answered for path.
func (s *site) requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

var theSite shared[*site]

// webSite returns the site, building and serving it on first use.
func webSite(t testing.TB) *site {
	t.Helper()
	return theSite.get(t, func() (*site, error) {
		dist := os.Getenv("WASMLM_WEB_DIST")
		if dist == "" {
			dir, err := os.MkdirTemp("", "wasmlm-web-")
			if err != nil {
				return nil, err
			}
			atShutdown(func() { removeAll(dir) })
			if err := run(repoRoot(t), nil, "make", "-s", "web", "WEB_DIST="+dir); err != nil {
				return nil, fmt.Errorf("building the site (make web): %w", err)
			}
			dist = dir
		}
		names, err := siteFiles(repoRoot(t))
		if err != nil {
			return nil, err
		}
		for _, f := range names {
			if _, err := os.Stat(filepath.Join(dist, f)); err != nil {
				return nil, fmt.Errorf("%s is not a complete `make web` site: %w", dist, err)
			}
		}
		llama2c, err := filepath.Abs("../../internal/testmodel/testdata")
		if err != nil {
			return nil, err
		}
		ggufs, err := filepath.Abs("../../engine/testdata/gguf")
		if err != nil {
			return nil, err
		}
		s := &site{dist: dist, hits: map[string]int{}}
		files := http.FileServer(http.Dir(dist))
		mux := http.NewServeMux()
		mux.Handle(llama2cDir, http.StripPrefix(llama2cDir, http.FileServer(http.Dir(llama2c))))
		mux.Handle(llama2cDir+"gguf/", http.StripPrefix(llama2cDir+"gguf/", http.FileServer(http.Dir(ggufs))))
		mux.HandleFunc(filesDir, s.serveFiles)
		mux.HandleFunc(blankPage, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>e2e</title></head><body></body></html>`)
		})
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.hits[r.URL.Path]++
			s.mu.Unlock()
			files.ServeHTTP(w, r)
		})
		srv := httptest.NewServer(mux)
		atShutdown(srv.Close)
		s.url = srv.URL
		return s, nil
	})
}

var theBrowser shared[context.Context]

// browser returns the context of the one Chromium of this test binary.
func browser(t testing.TB) context.Context {
	t.Helper()
	return theBrowser.get(t, func() (context.Context, error) {
		ctx, stop, err := headless.Start("wasmlm-chromium-")
		if err != nil {
			return nil, err
		}
		atShutdown(stop)
		return ctx, nil
	})
}

// tab is one browser tab of a test. Any uncaught exception or console error
// in the page fails the test, unless it matches an expected message.
type tab struct {
	ctx  context.Context
	site *site

	mu       sync.Mutex
	problems []string
	expected []string
}

// tabTimeout bounds everything one test does in its tab.
const tabTimeout = 90 * time.Second

// newTab opens path (on the site) in a new tab of the shared browser.
// options such as chromedp.WithNewBrowserContext() give the tab a fresh
// profile (empty caches).
func newTab(t testing.TB, path string, options ...chromedp.ContextOption) *tab {
	t.Helper()
	return openTab(t, webSite(t), path, nil, options...)
}

// openTab opens path on site s in a new tab of the shared browser, running
// before (if not nil) in the tab first, before the page loads.
func openTab(t testing.TB, s *site, path string, before chromedp.Action[chromedp.Void], options ...chromedp.ContextOption) *tab {
	t.Helper()
	return openTabIn(t, browser(t), s, path, before, options...)
}

// openTabIn is openTab in the browser of context parent (browser's, or
// gpuBrowser's).
func openTabIn(t testing.TB, parent context.Context, s *site, path string, before chromedp.Action[chromedp.Void], options ...chromedp.ContextOption) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(parent, options...)
	ctx, cancelTimeout := context.WithTimeout(ctx, tabTimeout)
	tb := &tab{ctx: ctx, site: s}
	messages := chromedp.Console(ctx) // subscribes now, before the page runs
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				tb.mu.Lock()
				tb.problems = append(tb.problems, m.String())
				tb.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		<-done
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, p := range tb.problems {
			if !tb.isExpected(p) {
				t.Errorf("page error: %s", p)
			}
		}
	})
	if before != nil {
		require.NoError(t, chromedp.Do(ctx, before))
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.url+path)))
	return tb
}

// expect declares a console error the test causes on purpose (such as a
// 404 it asks for); messages containing substr do not fail the test.
func (tb *tab) expect(substr string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.expected = append(tb.expected, substr)
}

func (tb *tab) isExpected(p string) bool {
	for _, e := range tb.expected {
		if strings.Contains(p, e) {
			return true
		}
	}
	return false
}

// eval runs a JavaScript expression in the page, awaiting it if it is a
// Promise, and decodes its JSON value into T.
func eval[T any](t testing.TB, tb *tab, expr string) T {
	t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	require.NoError(t, err, "evaluating:\n%s", expr)
	return v
}

// apiScript wraps body, an async function body that may use WasmLM and
// DEFAULT_MODEL, as an expression for eval.
func apiScript(body string) string {
	return `(async () => {
		const { WasmLM } = await import('/wasmlm.js');
		const { DEFAULT_MODEL } = await import('/default-model.js');
		` + body + `
	})()`
}

// fileSize is the size of a file of the site.
func fileSize(t *testing.T, s *site, name string) int {
	t.Helper()
	st, err := os.Stat(filepath.Join(s.dist, name))
	require.NoError(t, err)
	return int(st.Size())
}
