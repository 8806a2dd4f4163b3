//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/internal/golden"
)

// strictCSP is the Content-Security-Policy the page must work under: only
// its own origin's scripts, workers and everything else, and WebAssembly
// (web/README.md, "Reliability").
const strictCSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'"

// cspReportPath is where the browser reports violations (report-uri), from
// documents and from workers alike: a worker's violations reach neither the
// page's console nor its securitypolicyviolation events.
const cspReportPath = "/__csp__/report"

// cspSite serves web/dist with strictCSP (plus report-uri) on every
// response, and collects the violation reports.
type cspSite struct {
	*site

	mu      sync.Mutex
	reports []string // the "csp-report" objects, as JSON
}

func (s *cspSite) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reports...)
}

var theCSPSite shared[*cspSite]

// The pages only this server serves: a blank page for the JS API, and the
// controls, which break the policy on purpose (a data: favicon, as the demo
// had; a worker that fetches from another origin) to prove that violations
// are seen.
const (
	cspBlankPage   = "/__csp__/blank.html"
	cspControlPage = "/__csp__/control.html"
	cspControlJS   = "/__csp__/control-worker.js"
)

func strictCSPSite(t testing.TB) *cspSite {
	t.Helper()
	web := webSite(t)
	return theCSPSite.get(t, func() (*cspSite, error) {
		s := &cspSite{site: &site{dist: web.dist, hits: map[string]int{}}}
		files := http.FileServer(http.Dir(web.dist))
		mux := http.NewServeMux()
		html := func(body string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprint(w, body)
			}
		}
		mux.HandleFunc(cspBlankPage, html(`<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="/favicon.svg"><title>e2e</title></head><body></body></html>`))
		mux.HandleFunc(cspControlPage, html(`<!doctype html><html><head><meta charset="utf-8">`+
			`<link rel="icon" href="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E">`+
			`<title>control</title></head><body><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="></body></html>`))
		mux.HandleFunc(cspControlJS, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `fetch('https://example.invalid/').catch(() => postMessage('refused'));`)
		})
		mux.HandleFunc(cspReportPath, func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
			if err == nil {
				s.mu.Lock()
				s.reports = append(s.reports, string(body))
				s.mu.Unlock()
			}
			w.WriteHeader(http.StatusNoContent)
		})
		mux.Handle("/", files)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Security-Policy", strictCSP+"; report-uri "+cspReportPath)
			mux.ServeHTTP(w, r)
		}))
		atShutdown(srv.Close)
		s.url = srv.URL
		return s, nil
	})
}

// listenForViolations records the page's securitypolicyviolation events in
// window.cspViolations, from before any of its scripts run (a script the
// browser adds, which the page's policy does not govern).
var listenForViolations = chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
	_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
		window.cspViolations = [];
		document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(
			e.violatedDirective + ' blocked ' + (e.blockedURI || '(inline)') + ' in ' + e.sourceFile + ':' + e.lineNumber));
	`})
	return err
})

// The demo page and the module's API work under a strict
// Content-Security-Policy with nothing reported: the page's
// securitypolicyviolation events, its console (where the browser logs each
// violation as an error; the tab fails on any) and the policy's report-uri,
// which hears from the workers too. The demo loads the model and generates;
// the API loads it in one worker and in two, generates, streams, chats and
// tokenizes. Controls that break the policy on purpose are seen by all
// three, so silence means none happened.
func TestBrowserStrictCSP(t *testing.T) {
	s := strictCSPSite(t)
	const cspErrors = "Content Security Policy"

	demo := openTab(t, s.site, "/", listenForViolations, chromedp.WithNewBrowserContext())
	waitFor(t, demo, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	typeInto(t, demo, "max-tokens", "20")
	require.NoError(t, chromedp.Do(demo.ctx, chromedp.Click(chromedp.ID("generate"))))
	waitFor(t, demo, `document.getElementById('status').textContent === 'Done'`, 20*time.Second)
	assert.NotEmpty(t, strings.TrimPrefix(text(t, demo, "output"), "Once upon a time"), "the demo generated")
	icon := eval[string](t, demo, `document.querySelector('link[rel=icon]').href`)
	assert.Equal(t, s.url+"/favicon.svg", icon, "the demo's favicon is a file of the site")
	assert.Empty(t, eval[[]string](t, demo, `window.cspViolations`), "the demo page's violations")
	assert.Contains(t, reliabilitySection(t), "Content-Security-Policy: "+strictCSP, "web/README.md's Reliability table")

	api := openTab(t, s.site, cspBlankPage, listenForViolations)
	got := eval[struct {
		Text     string `json:"text"`
		Streamed string `json:"streamed"`
		Chat     string `json:"chat"`
		Tokens   []int  `json:"tokens"`
		Workers  int    `json:"workers"`
		Split    string `json:"split"`
	}](t, api, apiScript(`
		const lm = await WasmLM.load();
		const { text } = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 20 });
		let streamed = '';
		for await (const c of lm.stream('Once upon a time', { temperature: 0, maxTokens: 20 })) streamed += c.text;
		const reply = await lm.chat.completions.create({ messages: [{ role: 'user', content: 'Once upon a time' }], temperature: 0, max_tokens: 20 });
		const tokens = await lm.tokenize('Once upon a time');
		lm.unload();
		const two = await WasmLM.load(undefined, { workers: 2 });
		const split = (await two.generate('Once upon a time', { temperature: 0, maxTokens: 20 })).text;
		const workers = two.info.workers;
		two.unload();
		return { text, streamed, chat: reply.choices[0].message.content, tokens, workers, split };
	`))
	run := golden.RuncStories260K(t).Runs[1]
	assert.Equal(t, run.PromptIDs, got.Tokens)
	assert.NotEmpty(t, got.Text)
	assert.Equal(t, got.Text, got.Streamed)
	assert.Equal(t, got.Text, got.Chat)
	assert.Equal(t, 2, got.Workers)
	assert.Equal(t, got.Text, got.Split, "two workers give one worker's text")
	assert.Empty(t, eval[[]string](t, api, `window.cspViolations`), "the API page's violations")

	// The controls: the document's violations are events, console errors and
	// reports; the worker's only reports.
	control := openTab(t, s.site, cspControlPage, listenForViolations)
	control.expect(cspErrors)
	eval[chromedp.Void](t, control, `(async () => {
		const w = new Worker('`+cspControlJS+`');
		await new Promise((resolve) => { w.onmessage = resolve; });
		w.terminate();
	})()`)
	waitFor(t, control, `window.cspViolations.length > 0`, 10*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for !reportsFrom(s.received(), cspControlPage, cspControlJS) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	reports := s.received()
	require.True(t, reportsFrom(reports, cspControlPage, cspControlJS), "the controls' violations were not reported: %v", reports)

	// Now that the controls' reports have come, any of the site's would have too.
	var site []string
	for _, r := range reports {
		if !reportsFrom([]string{r}, cspControlPage) && !reportsFrom([]string{r}, cspControlJS) {
			site = append(site, r)
		}
	}
	assert.Empty(t, site, "violations reported by the demo, the module or its workers")
	t.Logf("%d reports: %d from the controls, %d from the site", len(reports), len(reports)-len(site), len(site))
}

// reportsFrom reports whether, for each path, some report comes from a
// document (or worker script) at that path.
func reportsFrom(reports []string, paths ...string) bool {
	for _, p := range paths {
		found := false
		for _, r := range reports {
			var body struct {
				Report struct {
					DocumentURI string `json:"document-uri"`
				} `json:"csp-report"`
			}
			if json.Unmarshal([]byte(r), &body) == nil && strings.HasSuffix(body.Report.DocumentURI, p) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
