//go:build !js

package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/chromedp"

	"github.com/wasmlm/wasmlm/internal/headless"
)

var (
	//go:embed page.html
	pageHTML []byte
	//go:embed worker.js
	workerJS []byte
)

// job is one run of a test binary.
type job struct {
	binary         string
	args           []string
	env            map[string]string
	stdout, stderr io.Writer
	// dir is the binary's working directory; it reads files (read-only)
	// under root.
	dir, root string
	// timeout bounds the whole run, startTimeout the time until the binary
	// is instantiated in the worker.
	timeout, startTimeout time.Duration
	// onStart, if set, is called with the browser's tab once the binary
	// runs (tests crash the page with it).
	onStart func(tab context.Context)
	// simd, if set, gives the binary web/simd.js's kernel imports (builds
	// with -tags wasmlm_simd need them): "simd128", "relaxed" (the relaxed
	// kernels where Chromium has relaxed SIMD, as a page's engine gets
	// them) or "off" (the stubs); kernels and relaxed are the modules.
	simd, kernels, relaxed string
}

// outcome is how a run ended: the binary's exit code, or why there is none.
type outcome struct {
	code int
	err  error
}

// session is the state the server's handlers share with runInBrowser.
type session struct {
	job
	wasmExec []byte
	outMu    sync.Mutex // orders writes to stdout and stderr
	started  chan struct{}
	once     sync.Once
	startOne sync.Once
	done     chan outcome
}

// finish records how the run ended; the first call wins.
func (s *session) finish(o outcome) {
	s.once.Do(func() { s.done <- o })
}

// runInBrowser runs j's binary in a worker of a fresh headless Chromium and
// returns its exit code, or an error saying why it has none.
func runInBrowser(ctx context.Context, j job) (int, error) {
	if _, err := os.Stat(j.binary); err != nil {
		return 0, err
	}
	wasmExec, err := readWasmExec()
	if err != nil {
		return 0, err
	}
	s := &session{job: j, wasmExec: wasmExec, started: make(chan struct{}), done: make(chan outcome, 1)}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	srv := &http.Server{Handler: s.handler()}
	go srv.Serve(ln)
	defer srv.Close()

	// Every wait is bounded: Chromium's start and the page's load too.
	total := time.NewTimer(j.timeout)
	defer total.Stop()
	start := time.NewTimer(j.startTimeout)
	defer start.Stop()
	opening := s.open("http://" + ln.Addr().String() + "/")
	defer func() {
		if opening == nil {
			return
		}
		// Still opening: wait a little for the browser, to close it and
		// remove its profile, but not for one that hangs.
		select {
		case o := <-opening:
			if o.err == nil {
				o.stop()
			}
		case <-time.After(10 * time.Second):
		}
	}()
	var browser context.Context // once open
	var browserDone <-chan struct{}
	started, running := s.started, false
	for {
		select {
		case o := <-opening:
			opening = nil
			if o.err != nil {
				return 0, o.err
			}
			defer o.stop()
			browser, browserDone = o.browser, o.browser.Done()
			if running && j.onStart != nil {
				go j.onStart(browser)
			}
		case o := <-s.done:
			return o.code, o.err
		case <-started:
			start.Stop()
			started, running = nil, true
			if browser != nil && j.onStart != nil {
				go j.onStart(browser)
			}
		case <-start.C:
			return 0, fmt.Errorf("the browser did not start the binary within %v (-start-timeout)", j.startTimeout)
		case <-total.C:
			return 0, fmt.Errorf("the run took longer than %v (-timeout, or the binary's -test.timeout plus a minute): stopped", j.timeout)
		case <-browserDone:
			return 0, fmt.Errorf("the browser went away: %w", context.Cause(browser))
		case <-ctx.Done():
			return 0, errors.New("interrupted")
		}
	}
}

// opened is a browser with the page open, or why there is none.
type opened struct {
	browser context.Context
	stop    func()
	err     error
}

// open starts headless Chromium with WebGPU and opens url in it, watching
// the page for a crash and uncaught exceptions; the channel gets the
// result.
func (s *session) open(url string) <-chan opened {
	c := make(chan opened, 1)
	go func() {
		browser, stop, err := headless.StartWebGPU("wasmlm-wasmbrowser-")
		if err != nil {
			c <- opened{err: err}
			return
		}
		// Subscribed before the page loads, so nothing it does is missed.
		crashed := chromedp.Events(browser, inspector.TargetCrashed)
		console := chromedp.Console(browser)
		go func() {
			for _, err := range crashed {
				if err == nil {
					s.finish(outcome{err: errors.New("the page crashed (its renderer process died)")})
				}
				return
			}
		}()
		go func() {
			for m, err := range console {
				if err != nil {
					return
				}
				if m.IsException() {
					s.finish(outcome{err: fmt.Errorf("the page threw: %s", m)})
				}
			}
		}()
		if err := chromedp.Do(browser, chromedp.Navigate(url)); err != nil {
			stop()
			c <- opened{err: fmt.Errorf("opening the page: %w", err)}
			return
		}
		c <- opened{browser: browser, stop: stop}
	}()
	return c
}

// readWasmExec reads the wasm_exec.js of the Go that built the binary:
// $GOROOT's (go test sets it for the programs it runs), else `go env
// GOROOT`'s.
func readWasmExec() ([]byte, error) {
	goroot := os.Getenv("GOROOT")
	if goroot == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			return nil, fmt.Errorf("finding GOROOT (go env GOROOT): %w", err)
		}
		goroot = strings.TrimSpace(string(out))
	}
	return os.ReadFile(filepath.Join(goroot, "lib", "wasm", "wasm_exec.js"))
}

// handler serves the page, the worker, wasm_exec.js, the binary and its
// configuration, and takes the worker's output, exit code and failures.
func (s *session) handler() http.Handler {
	mux := http.NewServeMux()
	static := func(body []byte, contentType string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Cache-Control", "no-store")
			w.Write(body)
		}
	}
	mux.HandleFunc("GET /{$}", static(pageHTML, "text/html; charset=utf-8"))
	mux.HandleFunc("GET /worker.js", static(workerJS, "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /wasm_exec.js", static(s.wasmExec, "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /test.wasm", func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(s.binary)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			s.finish(outcome{err: err})
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/wasm")
		io.Copy(w, f)
	})
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"argv": append([]string{filepath.Base(s.binary)}, s.args...),
			"env":  s.env,
			"cwd":  s.dir,
			"simd": s.simd,
		})
	})
	if s.simd != "" {
		for path, file := range map[string]string{
			"/simd.js":              filepath.Join(s.root, "web", "simd.js"),
			"/kernels.wasm":         s.kernels,
			"/kernels-relaxed.wasm": s.relaxed,
		} {
			mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Cache-Control", "no-store")
				if strings.HasSuffix(path, ".js") {
					w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
				}
				http.ServeFile(w, r, file)
			})
		}
	}
	mux.HandleFunc("POST /started", func(w http.ResponseWriter, r *http.Request) {
		s.startOne.Do(func() { close(s.started) })
	})
	mux.HandleFunc("POST /out", func(w http.ResponseWriter, r *http.Request) {
		out := s.stdout
		if r.URL.Query().Get("fd") == "2" {
			out = s.stderr
		}
		s.outMu.Lock()
		io.Copy(out, r.Body)
		s.outMu.Unlock()
	})
	mux.HandleFunc("POST /exit", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.URL.Query().Get("code"))
		if err != nil {
			s.finish(outcome{err: fmt.Errorf("the worker sent the exit code %q", r.URL.Query().Get("code"))})
			return
		}
		s.finish(outcome{code: code})
	})
	files{root: s.root}.register(mux)
	mux.HandleFunc("POST /fail", func(w http.ResponseWriter, r *http.Request) {
		msg, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		s.finish(outcome{err: errors.New(string(msg))})
	})
	return mux
}
