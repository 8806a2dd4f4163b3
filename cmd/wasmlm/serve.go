package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"time"

	"github.com/wasmlm/wasmlm/cmd/internal/servecli"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/models"
)

// defaultWebDir is served at / when -web is not given and it exists (make web builds it).
const defaultWebDir = "web/dist"

// orNone maps a flag's 0 (no limit) to net/http's: a negative duration (its
// 0 would fall back to ReadTimeout).
func orNone(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf modelFlags
	mf.register(fs)
	var f servecli.Flags
	f.Register(fs)
	var (
		web      = fs.String("web", defaultWebDir, "directory of the static web page served at / (the default is used only if it exists)")
		isolate  = fs.Bool("isolate", false, "serve -web's files cross-origin isolated (Cross-Origin-Opener-Policy: same-origin, Cross-Origin-Embedder-Policy: require-corp), so a model split across Web Workers exchanges through shared memory")
		threads  = threadsFlag(fs)
		slotSave = fs.String("slot-save-path", "", "directory where POST /slots/{id}?action=save|restore saves and restores the slots' sessions, made if missing (empty: those actions answer 501)")
	)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "serve: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if err := f.Check(); err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitUsage
	}
	opts, keys, err := f.Options(modelName(mf.path), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitUsage
	}
	opts.Threads, opts.SlotSavePath = *threads, *slotSave
	webSet := false
	fs.Visit(func(f *flag.Flag) { webSet = webSet || f.Name == "web" })
	webDir, err := chooseWebDir(*web, webSet)
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitUsage
	}

	if *slotSave != "" {
		if err := os.MkdirAll(*slotSave, 0o755); err != nil {
			fmt.Fprintf(stderr, "serve: -slot-save-path: %v\n", err)
			return exitUsage
		}
	}
	model, err := mf.load()
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitError
	}
	if webDir != "" {
		opts.NotFound = http.FileServer(unlisted{http.Dir(webDir)})
		if *isolate {
			opts.NotFound = isolated(opts.NotFound)
		}
	}
	ln, err := net.Listen("tcp", f.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitError
	}
	opts.AllowHost = servecli.HostPolicy(ln.Addr(), f.Hosts)
	f.Access.WarnUnauthenticated(ln.Addr(), keys, stderr)
	limits := f.Limits
	if limits.MaxConns = capConns(limits.MaxConns, openFileLimit(), stderr); limits.MaxConns > 0 {
		ln = newLimitListener(ln, limits.MaxConns)
	}
	api, err := httpapi.New(model, opts)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "serve: %s\n", flagError(err))
		return exitError
	}
	page := "no web page (-web DIR to serve one)"
	if webDir != "" {
		page = "web page from " + webDir
	}
	// SIGHUP is handled before the start-up line gives the pid to signal:
	// a reload sent on reading it must not meet the signal's default (exit).
	f.Access.ReloadKeysOnHangup(ctx, keys, stderr)
	f.Started(stderr, api, model, ln.Addr(), keys, page, os.Getpid())
	return serveUntilDone(ctx, ln, api, limits, f.Grace, stderr)
}

// serveUntilDone serves until ctx ends (SIGINT or SIGTERM), then stops
// gracefully: it stops accepting connections at once, lets the running
// generations finish within grace, then has the handler end those left
// cleanly (httpapi.Handler.Shutdown: an error event that ends a stream), gives
// those answers servecli.CloseMargin to go out, and closes whatever is still open.
func serveUntilDone(ctx context.Context, ln net.Listener, api *httpapi.Handler, limits servecli.ConnLimits, grace time.Duration, stderr io.Writer) int {
	srv := &http.Server{
		Handler: newMemoryReturner(api),
		// ReadTimeout covers a request's headers and body (ReadHeaderTimeout
		// falls back to it); net/http lifts it once the body is in, so it
		// does not cut a stream. No WriteTimeout, which would bound the whole
		// response: the handler gives each write its own (-write-timeout).
		ReadTimeout:    orNone(limits.Read),
		IdleTimeout:    orNone(limits.Idle),
		MaxHeaderBytes: servecli.MaxHeaderBytes,
	}
	if ll, ok := ln.(*limitListener); ok {
		srv.ConnState = ll.ConnState // idle connections make room at the cap
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitError
	case <-ctx.Done():
	}
	fmt.Fprintf(stderr, "serve: stopping: accepting no more connections; running generations have %v to finish\n", grace)
	graceCtx, cancelGrace := context.WithTimeout(context.Background(), grace)
	defer cancelGrace()
	stopped := make(chan error, 1)
	go func() { stopped <- api.Shutdown(graceCtx) }()
	closeCtx, cancelClose := context.WithTimeout(context.Background(), grace+servecli.CloseMargin)
	defer cancelClose()
	if err := srv.Shutdown(closeCtx); err != nil {
		fmt.Fprintf(stderr, "serve: closing the connections still open after %v\n", grace+servecli.CloseMargin)
		srv.Close()
	}
	select {
	case err := <-stopped:
		if err != nil {
			fmt.Fprintln(stderr, "serve: the grace period ended: the generations still running were stopped")
		}
	case <-time.After(servecli.CloseMargin):
		fmt.Fprintln(stderr, "serve: a request outlived its connection")
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitError
	}
	fmt.Fprintln(stderr, "serve: stopped")
	return exitOK
}

// chooseWebDir is the directory to serve at /, or "" for none: an explicit
// -web must exist; the default is used only when it does.
func chooseWebDir(dir string, explicit bool) (string, error) {
	if dir == "" {
		return "", nil
	}
	st, err := os.Stat(dir)
	switch {
	case err == nil && st.IsDir():
		return dir, nil
	case !explicit:
		return "", nil
	case err == nil:
		return "", fmt.Errorf("-web %s is not a directory", dir)
	}
	return "", fmt.Errorf("-web: %w", err)
}

// isolated serves h's responses with the headers that make a page
// cross-origin isolated (crossOriginIsolated, SharedArrayBuffer): its
// documents open no other origin's windows, and it loads only resources
// of its own origin or that opt in (CORP or CORS).
func isolated(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cross-Origin-Opener-Policy", "same-origin")
		w.Header().Set("Cross-Origin-Embedder-Policy", "require-corp")
		h.ServeHTTP(w, r)
	})
}

// unlisted is a web directory whose directories are not listed: a directory
// opens only when it holds an index.html (which http.FileServer then
// serves), so the page is served and nothing else it holds is shown.
type unlisted struct{ http.FileSystem }

func (u unlisted) Open(name string) (http.File, error) {
	f, err := u.FileSystem.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.IsDir() {
		var index http.File
		if index, err = u.FileSystem.Open(path.Join(name, "index.html")); err == nil {
			err = index.Close()
		}
	}
	if err != nil {
		f.Close()
		return nil, fs.ErrNotExist // 404, whatever the reason
	}
	return f, nil
}

// modelName is the id the API reports (servecli.ModelName), of an hf:
// shorthand the file's in the repository.
func modelName(path string) string {
	if f, err := parseHF(path); err == nil {
		path = f.path
	}
	return servecli.ModelName(path, models.DefaultName)
}
