// Package servecli is what every host of the command `wasmlm serve` shares:
// its flags (the address, slots and queue, context, limits, keys, CORS,
// Host names, shutdown grace), checked the same way with the same errors,
// the handler's options they make, the start-up line and the log line of
// each request. The Go CLI (cmd/wasmlm) serves through net/http; the npm
// package's `wasmlm serve` (cmd/wasm's serving build under Node.js) through
// node:http. Each host adds the flags only it has (the native -web,
// -threads, -tokenizer, -slot-save-path; its own -m).
package servecli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/httpapi"
)

// DefaultShutdownGrace is how long serve lets running generations finish
// after SIGINT or SIGTERM before it ends them: less than the 10 s docker stop
// waits before it kills (Kubernetes waits 30 s, systemd 90 s), with room for
// CloseMargin.
const DefaultShutdownGrace = 5 * time.Second

// CloseMargin is how long, after the grace period, the generations stopped
// then have to send their last event, before serve closes every connection.
const CloseMargin = time.Second

// Defaults of the connection limits (see ConnLimits).
const (
	defaultReadTimeout  = 10 * time.Second
	defaultWriteTimeout = 30 * time.Second
	defaultIdleTimeout  = 30 * time.Second
	defaultMaxConns     = 256
	// MaxHeaderBytes bounds a request's headers (net/http's default is 1
	// MiB): 32 KiB holds any API client's headers and a browser's cookies,
	// and keeps what -max-conns clients sending headers can hold small.
	// net/http reads 4096 bytes more before it answers 431 itself.
	MaxHeaderBytes = 32 << 10
)

// ConnLimits are serve's limits on connections, each of which a client
// could otherwise hold for ever.
type ConnLimits struct {
	Read, Write, Idle time.Duration // 0: none
	MaxConns          int           // 0: none
}

// Register adds the connection flags to fs.
func (c *ConnLimits) Register(fs *flag.FlagSet) {
	fs.DurationVar(&c.Read, "read-timeout", defaultReadTimeout, "time a client has to send a whole request, headers and body; a body cut short gets 408 (0: no limit)")
	fs.DurationVar(&c.Write, "write-timeout", defaultWriteTimeout, "time one write to a client may wait; a client that stops reading a stream is cut after it (0: no limit; a stream may last any time)")
	fs.DurationVar(&c.Idle, "idle-timeout", defaultIdleTimeout, "time a kept-alive connection may wait idle for its next request (0: no limit)")
	fs.IntVar(&c.MaxConns, "max-conns", defaultMaxConns, "connections open at once (at most (open-file limit - 16) / 2); more wait to be accepted, and idle ones are closed to make room for them (0: no limit)")
}

func (c *ConnLimits) valid() bool {
	return c.Read >= 0 && c.Write >= 0 && c.Idle >= 0 && c.MaxConns >= 0
}

// stringList is a repeatable string flag (-allow-host a -allow-host b).
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ", ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// KVTypeFlag registers -kv-type, the KV cache type of the sessions a
// command makes.
func KVTypeFlag(fs *flag.FlagSet) *engine.KVType {
	t := new(engine.KVType)
	fs.TextVar(t, "kv-type", engine.KVAuto, "the KV cache type, `auto|f16|f32`: f16 holds keys and values in half the memory; auto is f16 for models of more than 100M parameters, f32 for smaller ones")
	return t
}

// Flags are serve's flags that every host honours.
type Flags struct {
	Addr        string
	Slots       int
	Queue       int
	ClientQueue int
	Context     int
	KVType      *engine.KVType
	MaxTokens   int
	MaxEmbed    int
	Shift       bool
	CORS        string // after Check, as browsers write the Origin header
	Limits      ConnLimits
	Access      Access
	Grace       time.Duration
	allowHosts  stringList
	// Hosts are the -allow-host names after Check (nil: any).
	Hosts map[string]bool
	// APIOnly says the host serves no pages of its own (the npm
	// package's serve): its start-up line says CORSOffHintAPIOnly.
	APIOnly bool
}

// Register adds the flags to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	fs.IntVar(&f.Slots, "slots", DefaultSlots(), "generations that run at once, each with its own KV cache")
	fs.IntVar(&f.Queue, "queue", httpapi.DefaultQueueSize, "requests that may wait for a slot; more get 503 (0: none)")
	fs.IntVar(&f.ClientQueue, "client-queue", 0, "requests one client (API key, or address without keys) may have in the server beyond -slots; more get 429 (0: a quarter of -queue, at least 1)")
	fs.IntVar(&f.Context, "ctx", 0, "context length of each slot (0: the model's, at most 4096)")
	f.KVType = KVTypeFlag(fs)
	fs.IntVar(&f.MaxTokens, "max-tokens", 0, "largest max_tokens a request may ask for (0: no limit but the context, which a request with context_shift may run past)")
	fs.IntVar(&f.MaxEmbed, "max-embed-tokens", httpapi.DefaultMaxEmbedTokens, "most tokens one embeddings or rerank request may have evaluated, special tokens included; more get 400 (0: no limit)")
	fs.BoolVar(&f.Shift, "context-shift", false, "context_shift's default: a generation that fills the context keeps n_keep tokens, drops the oldest half of the rest and goes on, for models that can (then -max-tokens may exceed -ctx; see docs/context.md)")
	fs.StringVar(&f.CORS, "cors", "", `origin (scheme://host[:port]) of the web pages that may call the API ("*": any; empty: the server's own pages only)`)
	f.Limits.Register(fs)
	f.Access.Register(fs)
	fs.DurationVar(&f.Grace, "shutdown-grace", DefaultShutdownGrace, "on SIGINT or SIGTERM, time the running generations have to finish before they are ended (a stream with an error event)")
	fs.Var(&f.allowHosts, "allow-host", `a Host name the server also answers to, beyond localhost and IP addresses (repeatable; "*": any)`)
}

// ErrRange is Check's error for a number out of its range.
var ErrRange = errors.New("-slots must be >= 1; -queue, -client-queue, -ctx, -max-tokens, -max-embed-tokens, -max-conns, the timeouts and -shutdown-grace >= 0")

// Check checks the parsed flags' values, and reads -cors and -allow-host;
// its error is a usage error, said after "serve: ".
func (f *Flags) Check() error {
	if f.Slots < 1 || f.Queue < 0 || f.ClientQueue < 0 || f.Context < 0 || f.MaxTokens < 0 || f.MaxEmbed < 0 || !f.Limits.valid() || f.Grace < 0 {
		return ErrRange
	}
	var err error
	if f.Hosts, err = HostNames(f.allowHosts); err != nil {
		return err
	}
	f.CORS, err = CORSOrigin(f.CORS)
	return err
}

// Options are the handler's options the flags ask for, with its key ring
// and limiter (reading -api-key-file), a line per request logged on log.
// The host adds its own (AllowHost once it listens, NotFound, Threads…).
func (f *Flags) Options(name string, log io.Writer) (httpapi.Options, *httpapi.KeyRing, error) {
	keys, limiter, err := f.Access.Options()
	if err != nil {
		return httpapi.Options{}, nil, err
	}
	opts := httpapi.Options{
		ModelName: name, Slots: f.Slots, QueueSize: f.Queue, ClientQueue: f.ClientQueue, ContextLength: f.Context, KVType: *f.KVType,
		MaxTokens: f.MaxTokens, MaxEmbedTokens: f.MaxEmbed, AllowOrigin: f.CORS, OnCompletion: CompletionLogger(log),
		WriteTimeout: f.Limits.Write, Keys: keys, Limiter: limiter, ContextShift: f.Shift,
		ContextHint: ContextHint,
	}
	if f.Queue == 0 {
		opts.QueueSize = -1 // the flag's 0 means none; Options' 0 means the default
	}
	if f.MaxEmbed == 0 {
		opts.MaxEmbedTokens = -1 // the flag's 0 means no limit; Options' 0 means the default
	}
	return opts, keys, nil
}

// ContextHint ends serve's error for a prompt that leaves no room for a
// completion: -ctx lengthens the context (past the model's trained
// length too, with a warning).
const ContextHint = "Start the server with a longer -ctx."

// CORSOffHint is what serve says at start-up without -cors: a page of
// another origin (a Vite dev server, a CDN-hosted app) cannot read its
// answers, which in a browser shows only as a network error.
const CORSOffHint = "serve: CORS is off: pages of other origins cannot call this server (its own pages can); -cors ORIGIN allows one, -cors '*' any"

// CORSOffHintAPIOnly is CORSOffHint of a server with no pages of its own.
const CORSOffHintAPIOnly = "serve: CORS is off: no web page can call this server (it serves none of its own; clients outside a browser can); -cors ORIGIN allows one origin's pages, -cors '*' any"

// Started says on log what the server serves, where and to whom, warning
// first of what the model or the flags will not do as asked: the
// start-up line, page saying what it serves at / and pid the process's id.
func (f *Flags) Started(log io.Writer, api *httpapi.Handler, model *engine.Model, addr net.Addr, keys *httpapi.KeyRing, page string, pid int) {
	if w := model.ContextWarning(api.ContextLength()); w != "" && model.Generates() {
		fmt.Fprintf(log, "serve: warning: -ctx: %s\n", w)
	}
	if err := model.ShiftSupport(); f.Shift && err != nil {
		fmt.Fprintf(log, "serve: -context-shift: %v; generations end at the context\n", err)
	}
	slotWord := "slots"
	if f.Slots == 1 {
		slotWord = "slot"
	}
	cache := api.KVType().String() + " KV cache"
	if !model.Generates() {
		cache = "an embedding model: no KV cache" // it answers /v1/embeddings or /v1/rerank, not completions
		if model.Reranks() {
			cache = "a reranker: no KV cache"
		}
	}
	switch {
	case f.CORS == "" && f.APIOnly:
		fmt.Fprintln(log, CORSOffHintAPIOnly)
	case f.CORS == "":
		fmt.Fprintln(log, CORSOffHint)
	}
	perClient := ""
	if n := api.ClientLimit(); n > 0 {
		perClient = fmt.Sprintf(", %d per client", n)
	}
	fmt.Fprintf(log, "serve: %s (context %d, %s, %d %s, queue %d%s) on http://%s/ — API under /v1/, %s; %s; pid %d\n",
		api.Name(), api.ContextLength(), cache, f.Slots, slotWord, f.Queue, perClient, addr, page, f.Access.Describe(keys), pid)
}

// DefaultSlots is one slot per core, at most 4: the forward pass uses one
// core, so slots beyond the cores only add KV-cache memory and latency.
// (In WebAssembly, one thread: one slot.)
func DefaultSlots() int { return min(runtime.GOMAXPROCS(0), 4) }

// ModelName is the id the API reports: defaultName for no path, or the
// model file's name without its extension (of a URL, its path's; of
// hf:owner/repo/file.gguf[@revision], the file's).
func ModelName(path, defaultName string) string {
	if path == "" {
		return defaultName
	}
	if i := strings.IndexAny(path, "?#"); i >= 0 && strings.Contains(path, "://") {
		path = path[:i]
	}
	if i := strings.LastIndex(path, "@"); i >= 0 && strings.HasPrefix(strings.ToLower(path), "hf:") {
		path = path[:i] // hf:owner/repo/file.gguf@revision
	}
	base := filepath.Base(path)
	if prefix, _, _, ok := gguf.ParseSplitPath(base); ok {
		return prefix // a split model is named without its part number
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// CompletionLogger logs one line per completion request on w.
func CompletionLogger(w io.Writer) func(httpapi.Completion) {
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
