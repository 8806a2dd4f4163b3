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
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/models"
)

// defaultWebDir is served at / when -web is not given and it exists (make web builds it).
const defaultWebDir = "web/dist"

// defaultShutdownGrace is how long serve lets running generations finish
// after SIGINT or SIGTERM before it ends them: less than the 10 s docker stop
// waits before it kills (Kubernetes waits 30 s, systemd 90 s), with room for
// closeMargin.
const defaultShutdownGrace = 5 * time.Second

// closeMargin is how long, after the grace period, the generations stopped
// then have to send their last event, before serve closes every connection.
const closeMargin = time.Second

// Defaults of the connection limits (see connLimits).
const (
	defaultReadTimeout  = 10 * time.Second
	defaultWriteTimeout = 30 * time.Second
	defaultIdleTimeout  = 30 * time.Second
	defaultMaxConns     = 256
	// maxHeaderBytes bounds a request's headers (net/http's default is 1
	// MiB): 32 KiB holds any API client's headers and a browser's cookies,
	// and keeps what -max-conns clients sending headers can hold small.
	// net/http reads 4096 bytes more before it answers 431 itself.
	maxHeaderBytes = 32 << 10
)

// connLimits are serve's limits on connections, each of which a client
// could otherwise hold for ever.
type connLimits struct {
	read, write, idle time.Duration // 0: none
	maxConns          int           // 0: none
}

func (c *connLimits) register(fs *flag.FlagSet) {
	fs.DurationVar(&c.read, "read-timeout", defaultReadTimeout, "time a client has to send a whole request, headers and body; a body cut short gets 408 (0: no limit)")
	fs.DurationVar(&c.write, "write-timeout", defaultWriteTimeout, "time one write to a client may wait; a client that stops reading a stream is cut after it (0: no limit; a stream may last any time)")
	fs.DurationVar(&c.idle, "idle-timeout", defaultIdleTimeout, "time a kept-alive connection may wait idle for its next request (0: no limit)")
	fs.IntVar(&c.maxConns, "max-conns", defaultMaxConns, "connections open at once (at most (open-file limit - 16) / 2); more wait to be accepted, and idle ones are closed to make room for them (0: no limit)")
}

func (c *connLimits) valid() bool {
	return c.read >= 0 && c.write >= 0 && c.idle >= 0 && c.maxConns >= 0
}

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
	var (
		addr        = fs.String("addr", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
		web         = fs.String("web", defaultWebDir, "directory of the static web page served at / (the default is used only if it exists)")
		slots       = fs.Int("slots", defaultSlots(), "generations that run at once, each with its own KV cache")
		queue       = fs.Int("queue", httpapi.DefaultQueueSize, "requests that may wait for a slot; more get 503 (0: none)")
		clientQueue = fs.Int("client-queue", 0, "requests one client (API key, or address without keys) may have in the server beyond -slots; more get 429 (0: a quarter of -queue, at least 1)")
		ctxLimit    = fs.Int("ctx", 0, "context length of each slot (0: the model's, at most 4096)")
		kvType      = kvTypeFlag(fs)
		threads     = threadsFlag(fs)
		maxTokens   = fs.Int("max-tokens", 0, "largest max_tokens a request may ask for (0: no limit but the context, which a request with context_shift may run past)")
		maxEmbed    = fs.Int("max-embed-tokens", httpapi.DefaultMaxEmbedTokens, "most tokens one embeddings or rerank request may have evaluated, special tokens included; more get 400 (0: no limit)")
		shift       = fs.Bool("context-shift", false, "context_shift's default: a generation that fills the context keeps n_keep tokens, drops the oldest half of the rest and goes on, for models that can (then -max-tokens may exceed -ctx; see docs/context.md)")
		cors        = fs.String("cors", "", `origin (scheme://host[:port]) of the web pages that may call the API ("*": any; empty: the server's own pages only)`)
		slotSave    = fs.String("slot-save-path", "", "directory where POST /slots/{id}?action=save|restore saves and restores the slots' sessions, made if missing (empty: those actions answer 501)")
	)
	var limits connLimits
	limits.register(fs)
	var access accessFlags
	access.register(fs)
	grace := fs.Duration("shutdown-grace", defaultShutdownGrace, "on SIGINT or SIGTERM, time the running generations have to finish before they are ended (a stream with an error event)")
	var allowHosts stringList
	fs.Var(&allowHosts, "allow-host", `a Host name the server also answers to, beyond localhost and IP addresses (repeatable; "*": any)`)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "serve: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *slots < 1 || *queue < 0 || *clientQueue < 0 || *ctxLimit < 0 || *maxTokens < 0 || *maxEmbed < 0 || !limits.valid() || *grace < 0 {
		fmt.Fprintln(stderr, "serve: -slots must be >= 1; -queue, -client-queue, -ctx, -max-tokens, -max-embed-tokens, -max-conns, the timeouts and -shutdown-grace >= 0")
		return exitUsage
	}
	hosts, err := hostNames(allowHosts)
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitUsage
	}
	if *cors, err = corsOrigin(*cors); err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitUsage
	}
	keys, limiter, err := access.options()
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitUsage
	}
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
	opts := httpapi.Options{
		ModelName: modelName(mf.path), Slots: *slots, QueueSize: *queue, ClientQueue: *clientQueue, ContextLength: *ctxLimit, KVType: *kvType, Threads: *threads,
		MaxTokens: *maxTokens, MaxEmbedTokens: *maxEmbed, AllowOrigin: *cors, OnCompletion: completionLogger(stderr),
		WriteTimeout: limits.write, Keys: keys, Limiter: limiter, ContextShift: *shift, SlotSavePath: *slotSave,
	}
	if *queue == 0 {
		opts.QueueSize = -1 // the flag's 0 means none; Options' 0 means the default
	}
	if *maxEmbed == 0 {
		opts.MaxEmbedTokens = -1 // the flag's 0 means no limit; Options' 0 means the default
	}
	if webDir != "" {
		opts.NotFound = http.FileServer(unlisted{http.Dir(webDir)})
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitError
	}
	opts.AllowHost = hostPolicy(ln.Addr(), hosts)
	access.warnUnauthenticated(ln.Addr(), keys, stderr)
	if limits.maxConns = capConns(limits.maxConns, openFileLimit(), stderr); limits.maxConns > 0 {
		ln = newLimitListener(ln, limits.maxConns)
	}
	api, err := httpapi.New(model, opts)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "serve: %s\n", flagError(err))
		return exitError
	}
	if w := model.ContextWarning(api.ContextLength()); w != "" && model.Generates() {
		fmt.Fprintf(stderr, "serve: warning: -ctx: %s\n", w)
	}
	if err := model.ShiftSupport(); *shift && err != nil {
		fmt.Fprintf(stderr, "serve: -context-shift: %v; generations end at the context\n", err)
	}
	page := "no web page (-web DIR to serve one)"
	if webDir != "" {
		page = "web page from " + webDir
	}
	slotWord := "slots"
	if *slots == 1 {
		slotWord = "slot"
	}
	cache := api.KVType().String() + " KV cache"
	if !model.Generates() {
		cache = "an embedding model: no KV cache" // it answers /v1/embeddings or /v1/rerank, not completions
		if model.Reranks() {
			cache = "a reranker: no KV cache"
		}
	}
	// SIGHUP is handled before the start-up line gives the pid to signal:
	// a reload sent on reading it must not meet the signal's default (exit).
	access.reloadKeysOnHangup(ctx, keys, stderr)
	if *cors == "" {
		fmt.Fprintln(stderr, corsOffHint)
	}
	perClient := ""
	if n := api.ClientLimit(); n > 0 {
		perClient = fmt.Sprintf(", %d per client", n)
	}
	fmt.Fprintf(stderr, "serve: %s (context %d, %s, %d %s, queue %d%s) on http://%s/ — API under /v1/, %s; %s; pid %d\n",
		api.Name(), api.ContextLength(), cache, *slots, slotWord, *queue, perClient, ln.Addr(), page, access.describe(keys), os.Getpid())
	return serveUntilDone(ctx, ln, api, limits, *grace, stderr)
}

// corsOffHint is what serve says at start-up without -cors: a page of
// another origin (a Vite dev server, a CDN-hosted app) cannot read its
// answers, which in a browser shows only as a network error.
const corsOffHint = "serve: CORS is off: pages of other origins cannot call this server (its own pages can); -cors ORIGIN allows one, -cors '*' any"

// serveUntilDone serves until ctx ends (SIGINT or SIGTERM), then stops
// gracefully: it stops accepting connections at once, lets the running
// generations finish within grace, then has the handler end those left
// cleanly (httpapi.Handler.Shutdown: an error event that ends a stream), gives
// those answers closeMargin to go out, and closes whatever is still open.
func serveUntilDone(ctx context.Context, ln net.Listener, api *httpapi.Handler, limits connLimits, grace time.Duration, stderr io.Writer) int {
	srv := &http.Server{
		Handler: newMemoryReturner(api),
		// ReadTimeout covers a request's headers and body (ReadHeaderTimeout
		// falls back to it); net/http lifts it once the body is in, so it
		// does not cut a stream. No WriteTimeout, which would bound the whole
		// response: the handler gives each write its own (-write-timeout).
		ReadTimeout:    orNone(limits.read),
		IdleTimeout:    orNone(limits.idle),
		MaxHeaderBytes: maxHeaderBytes,
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
	closeCtx, cancelClose := context.WithTimeout(context.Background(), grace+closeMargin)
	defer cancelClose()
	if err := srv.Shutdown(closeCtx); err != nil {
		fmt.Fprintf(stderr, "serve: closing the connections still open after %v\n", grace+closeMargin)
		srv.Close()
	}
	select {
	case err := <-stopped:
		if err != nil {
			fmt.Fprintln(stderr, "serve: the grace period ended: the generations still running were stopped")
		}
	case <-time.After(closeMargin):
		fmt.Fprintln(stderr, "serve: a request outlived its connection")
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitError
	}
	fmt.Fprintln(stderr, "serve: stopped")
	return exitOK
}

// defaultSlots is one slot per core, at most 4: the forward pass uses one
// core, so slots beyond the cores only add KV-cache memory and latency.
func defaultSlots() int { return min(runtime.GOMAXPROCS(0), 4) }

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

// modelName is the id the API reports: the default model's name, or the
// model file's name without its extension (of an hf: shorthand, the
// file's in the repository).
func modelName(path string) string {
	if path == "" {
		return models.DefaultName
	}
	if f, err := parseHF(path); err == nil {
		path = f.path
	}
	base := filepath.Base(path)
	if prefix, _, _, ok := gguf.ParseSplitPath(base); ok {
		return prefix // a split model is named without its part number
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// completionLogger logs one line per completion request on w.
func completionLogger(w io.Writer) func(httpapi.Completion) {
	var mu sync.Mutex
	return func(c httpapi.Completion) {
		mu.Lock()
		defer mu.Unlock()
		stream := ""
		if c.Stream {
			stream = " (stream)"
		}
		switch {
		case c.Dropped:
			fmt.Fprintf(w, "%s%s: client left after %v in the queue\n", c.Endpoint, stream, c.Queued.Round(time.Millisecond))
		case c.Err != nil:
			fmt.Fprintf(w, "%s%s: %v\n", c.Endpoint, stream, c.Err)
		case c.Inputs > 0 && c.FinishReason == engine.FinishAbort:
			fmt.Fprintf(w, "%s: stopped: the client left after %v\n", c.Endpoint, c.Timings.Prefill.Round(time.Millisecond))
		case c.Inputs > 0: // embeddings, rerank
			texts := "texts"
			if c.Inputs == 1 {
				texts = "text"
			}
			fmt.Fprintf(w, "%s: %d %s, %d tokens; queued %v, took %v, %.0f tok/s\n", c.Endpoint, c.Inputs, texts, c.PromptTokens,
				c.Queued.Round(time.Millisecond), c.Timings.Prefill.Round(time.Millisecond), c.Timings.PrefillTokensPerSecond())
		default:
			fmt.Fprintf(w, "%s%s: %d+%d tokens, %s; queued %v, first token %v, %.0f tok/s\n",
				c.Endpoint, stream, c.PromptTokens, c.CompletionTokens, c.FinishReason, c.Queued.Round(time.Millisecond),
				c.Timings.TimeToFirstToken.Round(time.Millisecond), c.Timings.DecodeTokensPerSecond())
		}
	}
}
