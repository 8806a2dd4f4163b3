//go:build wasmlm_serve

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall/js"
	"time"

	"github.com/wasmlm/wasmlm/cmd/internal/jspromise"
	"github.com/wasmlm/wasmlm/cmd/internal/servecli"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/jsbridge/jshttp"
)

// hostGlobal is the globalThis property where wasmlm-cli.js puts what the
// command asks of Node.js:
//
//	defaultModel             the path of the package's default model
//	defaultName              the name the API gives it
//	fetchModel(url)          a Promise of the bytes (a Uint8Array) of an http(s)
//	                         URL or of hf:owner/repo/file.gguf[@revision]
//	listen(config, serve)    a Promise of the address ("host:port") a node:http
//	                         server listens on, config {addr, readTimeout,
//	                         idleTimeout, maxConns, maxHeaderBytes, maxBodyBytes}
//	                         (ms; 0: none), handing each request to serve
//	                         (see nodeHandler.serve)
//	turn()                   a Promise that resolves from a macrotask of its own
//	stopped                  a Promise that resolves on SIGINT or SIGTERM
//	close(ms)                a Promise: stop accepting, close every
//	                         connection still open after ms, resolve once closed
//
// and the command sets on it hangup(), which wasmlm-cli.js calls on SIGHUP.
const hostGlobal = "wasmlmNode"

// exit codes, as cmd/wasmlm's.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// runCommand runs the npm package's command line: `serve` and its flags,
// the Go CLI's (servecli), parsed, checked and reported the same way.
func runCommand(args []string) int {
	if args[0] != "serve" {
		fmt.Fprintf(os.Stderr, "wasmlm: unknown command %q: this build runs serve only\n", args[0])
		return exitUsage
	}
	host := js.Global().Get(hostGlobal)
	if host.Type() != js.TypeObject {
		fmt.Fprintf(os.Stderr, "wasmlm: serve runs under wasmlm-cli.js (globalThis.%s is not set)\n", hostGlobal)
		return exitError
	}
	return runServe(host, args[1:])
}

func runServe(host js.Value, args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(nativeOnlyNote{os.Stderr})
	model := fs.String("m", "", "model: a GGUF file's path, http(s) URL, or hf:owner/repo/file.gguf[@revision], downloaded from Hugging Face (HF_ENDPOINT) (default: the package's "+host.Get("defaultName").String()+")")
	f := servecli.Flags{APIOnly: true}
	f.Register(fs)
	for name, usage := range nodeUsage {
		fs.Lookup(name).Usage = usage
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "serve: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if err := f.Check(); err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		return exitUsage
	}
	opts, keys, err := f.Options(servecli.ModelName(*model, host.Get("defaultName").String()), os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		return exitUsage
	}
	if err := checkAddr(f.Addr); err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		return exitError
	}
	// SIGHUP re-reads the key file from here on, as the Go CLI's serve
	// does (before the start-up line gives the pid to signal).
	hangup := js.FuncOf(func(js.Value, []js.Value) any {
		go f.Access.ReloadKeys(keys, os.Stderr)
		return nil
	})
	defer hangup.Release()
	host.Set("hangup", hangup)
	m, err := loadModel(host, *model)
	if err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		return exitError
	}
	// h is set before Go next waits for JavaScript (serveUntilStopped), so
	// before node:http can hand serve a request.
	var h *nodeHandler
	serve := js.FuncOf(func(_ js.Value, args []js.Value) any {
		go h.serve(args[0], args[1], args[2], args[3])
		return nil
	})
	defer serve.Release()
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	config := map[string]any{
		"addr": f.Addr, "readTimeout": ms(f.Limits.Read), "idleTimeout": ms(f.Limits.Idle), "maxConns": f.Limits.MaxConns,
		"maxHeaderBytes": servecli.MaxHeaderBytes, "maxBodyBytes": httpapi.DefaultMaxBodyBytes,
	}
	bound, err := jspromise.AwaitCall(context.Background(), host, "listen", config, serve)
	if err != nil {
		fmt.Fprintf(os.Stderr, "serve: listen tcp %s: %v\n", f.Addr, strings.TrimPrefix(err.Error(), "rejected: "))
		return exitError
	}
	ap, err := netip.ParseAddrPort(bound.String())
	if err != nil {
		fmt.Fprintf(os.Stderr, "serve: listening on %q: %v\n", bound.String(), err)
		return exitError
	}
	addr := net.TCPAddrFromAddrPort(ap)
	opts.AllowHost = servecli.HostPolicy(addr, f.Hosts)
	f.Access.WarnUnauthenticated(addr, keys, os.Stderr)
	api, err := httpapi.New(m, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		return exitError
	}
	h = &nodeHandler{api: api, turn: host.Get("turn")}
	f.Started(os.Stderr, api, m, addr, keys, "no web page (the npm package serves the API only)", os.Getpid())
	return serveUntilStopped(host, api, f.Grace)
}

// checkAddr refuses, as Go's net.Listen does and with its error, an
// address without a port or with a port out of range, which node:http
// would refuse with JavaScript's RangeError.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return &net.OpError{Op: "listen", Net: "tcp", Err: err}
	}
	if n, err := strconv.Atoi(port); err == nil && (n < 0 || n > 65535) {
		return &net.OpError{Op: "listen", Net: "tcp", Err: &net.AddrError{Err: "invalid port", Addr: port}}
	}
	return nil
}

// loadModel reads the model: a path (through Node's fs, which Go's
// file calls use here), a URL or an hf: shorthand (fetched by Node), or the
// package's default.
func loadModel(host js.Value, path string) (*engine.Model, error) {
	var data []byte
	var err error
	switch {
	case strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") || strings.HasPrefix(strings.ToLower(path), "hf:"):
		var v js.Value
		if v, err = jspromise.AwaitCall(context.Background(), host, "fetchModel", path); err != nil {
			return nil, errors.New(strings.TrimPrefix(err.Error(), "rejected: ")) // fetchModel rejects with what to say
		}
		data = make([]byte, v.Length())
		js.CopyBytesToGo(data, v)
	case path == "":
		data, err = os.ReadFile(host.Get("defaultModel").String())
	default:
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	model, err := engine.Load(data, engine.LoadOptions{})
	if err != nil && path != "" {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return model, err
}

// serveUntilStopped waits for SIGINT or SIGTERM, then stops as the Go
// CLI's serve does: no more connections; the running generations have
// grace to finish, then are ended (an error event that ends a stream);
// connections still open after grace and servecli.CloseMargin are closed.
func serveUntilStopped(host js.Value, api *httpapi.Handler, grace time.Duration) int {
	if _, err := jspromise.Await(context.Background(), host.Get("stopped")); err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		return exitError
	}
	fmt.Fprintf(os.Stderr, "serve: stopping: accepting no more connections; running generations have %v to finish\n", grace)
	graceCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- api.Shutdown(graceCtx) }()
	if _, err := jspromise.AwaitCall(context.Background(), host, "close", (grace + servecli.CloseMargin).Milliseconds()); err != nil {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
	}
	select {
	case err := <-stopped:
		if err != nil {
			fmt.Fprintln(os.Stderr, "serve: the grace period ended: the generations still running were stopped")
		}
	case <-time.After(servecli.CloseMargin):
		fmt.Fprintln(os.Stderr, "serve: a request outlived its connection")
	}
	fmt.Fprintln(os.Stderr, "serve: stopped")
	return exitOK
}

// nodeHandler serves the requests node:http hands over.
type nodeHandler struct {
	api  http.Handler
	turn js.Value // turn(): a Promise that resolves from a macrotask of its own (setImmediate)
}

// errClientGone is what a write returns once the client closed the
// connection.
var errClientGone = errors.New("the client closed the connection")

// serve serves one request: req {method, url, headers, body, remote}
// (headers [name, value] pairs, body a Uint8Array or undefined, remote the
// client's address); send(part) writes a part of the response (jshttp.Serve)
// and returns false once the client is gone; done(error?) says the
// response is complete (or why it failed); aborting signal (the client
// closed the connection) ends the request's context, and with it its
// generation or its wait in the queue.
func (h *nodeHandler) serve(req, send, done, signal js.Value) {
	err := h.serveRequest(req, send, signal)
	if err != nil && !errors.Is(err, errClientGone) {
		done.Invoke(err.Error())
		return
	}
	done.Invoke()
}

func (h *nodeHandler) serveRequest(req, send, signal js.Value) error {
	header, body, size := jshttp.Parts(req, httpapi.DefaultMaxBodyBytes)
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	onAbort := js.FuncOf(func(js.Value, []js.Value) any { cancel(); return nil })
	defer onAbort.Release()
	signal.Call("addEventListener", "abort", onAbort)
	defer signal.Call("removeEventListener", "abort", onAbort)
	if signal.Get("aborted").Truthy() {
		cancel()
	}
	ctx := &turningContext{Context: base, last: time.Now(), turn: func() {
		_, _ = jspromise.Await(base, h.turn.Invoke()) // settles from a macrotask of its own
	}}
	r, err := jshttp.NewRequest(ctx, req.Get("method").String(), "http://localhost"+req.Get("url").String(), header, body, size)
	if err != nil {
		return err
	}
	if host := header.Get("Host"); host != "" {
		r.Host = host // the Host allow-list reads it
	}
	r.RemoteAddr = req.Get("remote").String()
	return jshttp.Serve(h.api, r, func(part js.Value) error {
		if !send.Invoke(part).Truthy() {
			return errClientGone
		}
		return nil
	})
}

// turnEvery is how long a request's work may hold Node's thread before it
// hands it to the event loop (turningContext): long enough that a small
// model's tokens do not each pay a turn, short enough that a request that
// arrives meanwhile, or a client that leaves, is heard at once.
const turnEvery = 5 * time.Millisecond

// turningContext is a request's context whose Err hands control to Node's
// event loop (turn) when it is asked turnEvery or more after the last turn:
// the engine asks once per generated token, prompt block and embedding
// pass. A call from JavaScript into Go returns only once every goroutine
// waits, so without turns a generation would hold the thread to its end:
// no other request read, no client's leaving heard. (A chunk of its own
// stream needs no turn: node:http writes to the socket as it is given it.)
type turningContext struct {
	context.Context
	turn func()
	mu   sync.Mutex // held while turning: a concurrent Err does not turn again
	last time.Time  // the last turn's end, under mu
}

func (c *turningContext) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.mu.TryLock() {
		if time.Since(c.last) >= turnEvery {
			c.turn()
			c.last = time.Now()
		}
		c.mu.Unlock()
	}
	return c.Context.Err()
}
