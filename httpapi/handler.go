// Package httpapi serves a wasmlm model over an OpenAI-compatible HTTP API:
// POST /v1/completions and /v1/chat/completions (with Server-Sent Events when
// the request says "stream": true), OpenAI's Responses API (POST
// /v1/responses, stateless: read as the chat completion it stands for, its
// stream the typed events), POST /v1/embeddings, GET /v1/models, and
// llama.cpp server's POST /v1/rerank, POST /tokenize, POST /detokenize and
// GET /health. Replies may be held to
// a response_format (JSON, a JSON schema) or a GBNF grammar, and chat
// replies may call tools (tools, tool_choice → tool_calls), in OpenAI's
// shapes. What a completion request means and what its answer and its
// chunks are is package openai's, which every host shares; this package is
// the HTTP around it: bodies, Server-Sent Events, slots and the queue,
// keys, limits and CORS.
//
// Handler is a plain net/http Handler with no host-specific code, so the
// same API runs in `wasmlm serve` and in the edge worker (cmd/worker, on
// github.com/syumai/workers). Requests share one model: each generation
// takes one of Options.Slots sessions (each with its own KV cache); requests
// that find every slot busy wait in a bounded queue, one line per client
// served round-robin, and are refused with 503 when it is full (429 when
// their own client has all the places one client may). A POST takes its place before its body is read, and
// is decoded and tokenized in one of as many places as there are slots, so
// what requests hold is bounded by the slots and the queue. Every failure is
// an OpenAI error object {"error": {"message", "type", "param", "code"}} with
// a 4xx/5xx status.
//
// What a server needs beyond that is in Options (CORS, a Host allow-list, a
// deadline on each write) and Handler.Shutdown (a graceful stop); deadlines
// on reading requests and on idle connections are the http.Server's.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/openai"
	"github.com/wasmlm/wasmlm/policy"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// Defaults for Options fields left at zero.
const (
	// DefaultQueueSize is how many requests may wait for a slot.
	DefaultQueueSize = 64
	// DefaultMaxBodyBytes bounds a request body (1 MiB holds far more text
	// than the largest context this engine allocates by default).
	DefaultMaxBodyBytes = 1 << 20
	// DefaultCompletionMaxTokens is max_tokens for /v1/completions when the
	// request omits it: 16, as OpenAI's completions endpoint does. Chat
	// completions without max_tokens run until the context is full (or
	// Options.MaxTokens), as OpenAI's chat endpoint does.
	DefaultCompletionMaxTokens = openai.DefaultCompletionMaxTokens
	// DefaultModelName is the model's name when Options.ModelName is empty.
	DefaultModelName = "wasmlm"
	// DefaultMaxEmbedTokens bounds the tokens one embeddings or rerank
	// request may have the model evaluate (Options.MaxEmbedTokens). A body
	// of 1 MiB holds some 400,000 tokens, which held a slot for five
	// minutes; 16,384 are 32 of stories260K's contexts, 4 of a 4,096-token
	// model's.
	DefaultMaxEmbedTokens = 16384
)

// Options configure a Handler. The zero value serves one request at a time
// with DefaultQueueSize waiting.
type Options struct {
	// ModelName is the model's id in /v1/models and in every response (the
	// request's "model" is accepted whatever it says). "" is DefaultModelName.
	ModelName string
	// Slots is how many generations run at once, each in its own session
	// (KV cache, about 2·layers·context·kvDim float32s); 0 means 1. It is
	// also how many requests are prepared at once (see QueueSize).
	Slots int
	// QueueSize is how many requests may wait for a slot (in one line per
	// client, served round-robin: see ClientQueue); one more is refused
	// with 503. 0 means DefaultQueueSize; negative means none may wait. A
	// POST takes its place before its body is read (it waits for a slot
	// once the body is in), so at most Slots + QueueSize bodies are ever
	// held: the memory a burst of requests, or of clients that stall
	// half-way through their bodies, can take is bounded by it. What a body
	// becomes (decoded JSON, a tokenized prompt: tens of times the body for
	// a megabyte of text) is made in one of Slots places, handed out as the
	// slots are, before the request waits for a slot; so at most Slots
	// requests take that memory at once.
	QueueSize int
	// ClientQueue bounds what one client (its API key, or without Keys its
	// address) may hold of the queue: at most Slots + ClientQueue of its
	// requests are admitted at once, and one more is refused with 429
	// (rate_limit_exceeded, Retry-After), since the server may well have
	// room for other clients. While ClientQueue < QueueSize no client can
	// fill the queue and so refuse the others with 503. 0 means a quarter
	// of QueueSize (at least 1, at most QueueSize); negative means no more
	// than Slots of a client's requests at once; at QueueSize or more, one
	// client may fill the queue. Whatever the bound, the requests that wait are served
	// round-robin between clients, each client's in arrival order: a
	// request waits for the slots in use and at most one request of each
	// other waiting client, not for another client's burst.
	ClientQueue int
	// ContextLength is each session's context (see engine.SessionOptions);
	// 0 is the model's, capped at engine.DefaultContextLength.
	ContextLength int
	// ContextHint ends the error of a completion whose prompt leaves no
	// room for a reply: how this host's context could be longer (wasmlm
	// serve: "Start the server with a longer -ctx."). "" adds nothing.
	ContextHint string
	// KVType is each session's KV cache type (see engine.SessionOptions):
	// the zero value, engine.KVAuto, is F16 for models of more than 100M
	// parameters and F32 for smaller ones.
	KVType engine.KVType
	// Threads is each session's thread count (engine.SessionOptions): 0,
	// every core. The sessions share one pool of threads, so several slots
	// do not multiply them.
	Threads int
	// MaxTokens caps max_tokens; a request asking for more gets 400. 0 sets
	// no cap of its own: a request's max_tokens must fit in the context
	// after its prompt (400 context_length_exceeded), unless the request
	// shifts its context, where max_tokens is what bounds its cost.
	MaxTokens int
	// MaxEmbedTokens bounds the tokens one embeddings or rerank request
	// may have the model evaluate: its texts' tokens, special tokens
	// included (a rerank's: each (query, document) pair's; a text that
	// truncate cuts, as cut). They are counted when the request is
	// prepared, before it waits for a slot, and a request beyond the bound
	// gets 400 (max_tokens_per_request, param "input" or "documents"), so
	// that no request under MaxBodyBytes holds a slot for minutes. 0 means
	// DefaultMaxEmbedTokens; negative, no bound.
	MaxEmbedTokens int
	// MaxBodyBytes bounds a request body; a larger one gets 413. 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// WriteTimeout bounds each write to the client, not the response (as
	// http.Server.WriteTimeout would): a stream whose client keeps reading
	// runs as long as it generates, but a client that stops reading (once
	// the buffers between are full) for longer is cut, and its generation
	// ends, freeing the slot. 0: no limit. It needs a ResponseWriter that
	// takes deadlines (http.ResponseController), as net/http's server's
	// does. (A body is bounded by the server: http.Server.ReadTimeout covers
	// a request's headers and body, and net/http lifts it once the body is
	// in, so it cuts no stream; a body it cuts short gets 408.)
	WriteTimeout time.Duration
	// AllowOrigin lets web pages of another origin call the API: "*" any
	// page, or one origin ("https://app.example"). Responses to it carry
	// Access-Control-Allow-Origin, and CORS preflights are answered with the
	// methods of the route and every header the page asks for (the openai
	// SDK sends its own X-Stainless-* headers). "" allows none: a browser
	// lets only pages of the server's own origin read its answers.
	AllowOrigin string
	// AllowHost, when set, says whether the server answers to a Host name
	// (HostName(r.Host): no port, lower case); a request for any other gets
	// 403 (host_not_allowed), which defeats DNS rebinding. nil answers every
	// name, as an edge worker, reached under its own domain, must. wasmlm
	// serve accepts loopback names when it listens on a loopback address.
	AllowHost func(host string) bool
	// NotFound serves requests for paths outside the API (not an API route
	// and not under /v1/), such as a static web page; nil answers them 404
	// with an OpenAI error object.
	NotFound http.Handler
	// Keys, when not nil, makes every /v1/*, /tokenize and /detokenize
	// request need one of its keys, sent as "Authorization: Bearer KEY" (as
	// OpenAI's clients do) or "x-api-key: KEY": without one that matches it
	// is answered 401 (invalid_api_key) before it is admitted or its body
	// read. CORS preflights, /health and NotFound's pages stay open. A
	// KeyRing with no keys refuses every request.
	Keys *KeyRing
	// Limiter, when not nil, is asked before a POST is admitted whether its
	// client (its key's name, or without Keys its address) may make a
	// request now, answered 429 with Retry-After when not. Once the body is
	// read, and before the request waits for a slot, it reserves what the
	// request may cost (a completion: its prompt and max_tokens, or the
	// context's room without max_tokens; embeddings and reranks: their
	// tokens, see MaxEmbedTokens), refused alike; when the request ends it
	// refunds what the request is not charged. A completion that ran is
	// charged its prompt and the tokens it generated, however it ended; an
	// embeddings or rerank request its tokens when answered, its whole
	// reservation when its client left (the engine cannot say how far it
	// got), nothing when it failed or Shutdown stopped it; a request that
	// never ran, nothing. See NewLimiter.
	Limiter Limiter
	// Sessions, when not nil, lends the handler the one session it runs
	// requests on, one at a time, instead of Slots sessions of its own
	// (Slots, ContextLength, KVType and Threads are then the lender's
	// session's; Slots must be 0 or 1). See SessionLender.
	Sessions SessionLender
	// OnCompletion, if set, is called after every valid completion request
	// (and embedding or rerank request, with Inputs set):
	// finished, failed, stopped by Shutdown, or dropped because its client
	// left while it waited; and after every completion request refused with
	// 503 (Err ErrQueueFull or ErrShuttingDown) or 429 (ErrClientQueueFull), valid or not: one refused
	// before its body was read has only Endpoint and Err; one whose client
	// left while it waited to be prepared, before it was known to be valid,
	// has Endpoint, Dropped and Queued. It must be safe for concurrent use.
	// (Of an embedding or rerank request, PromptTokens are the tokens the
	// model evaluated and Timings.Prefill the time it took.)
	OnCompletion func(Completion)
	// ContextShift is the completions' context_shift when a request omits
	// it: a generation that fills the context keeps n_keep tokens, drops
	// the oldest half of the rest and goes on (engine.GenerateOptions.
	// ContextShift), for models that can (engine.Model.ShiftSupport; the
	// others end at the context, as without it). A request that may shift
	// needs max_tokens (see docs/context.md), and MaxTokens may then
	// exceed the context.
	ContextShift bool
	// NKeep is the completions' n_keep when a request omits it: how many
	// tokens of the prompt, BOS aside, a shift keeps (0 none, -1 the whole
	// prompt; see openai.API.NKeep). It must be >= -1.
	NKeep int
	// SlotSavePath, when set, is the directory where llama.cpp's slot
	// actions (POST /slots/{id}?action=save|restore|erase, slots.go) save
	// and restore the slots' sessions; without it they answer 501. Not
	// with Sessions.
	SlotSavePath string
}

// Completion describes one completion request after it ended, for logs and
// metrics.
type Completion struct {
	Endpoint         string              // "/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/v1/rerank" (or its aliases)
	Inputs           int                 // the texts to embed, or the documents to rank; 0 for a completion
	Stream           bool                // the response was Server-Sent Events
	Dropped          bool                // the client left while the request waited (to be prepared, or for a slot)
	Queued           time.Duration       // time spent waiting for a slot (Dropped before it was prepared: for a place to prepare)
	PromptTokens     int                 //
	CompletionTokens int                 //
	FinishReason     engine.FinishReason // the engine's ("abort": the client left)
	Timings          engine.Timings      //
	Err              error               // why the generation failed, if it did
}

// Handler serves the API. It is safe for concurrent use; create it with New.
type Handler struct {
	model      *engine.Model
	api        *openai.API // the model's completions: requests to jobs
	name       string
	opts       Options
	context    int           // tokens a session holds
	kvType     engine.KVType // the sessions' KV cache type, resolved
	threads    int           // each session's thread count, resolved
	maxEmbed   int           // the most tokens an embeddings or rerank request may have evaluated; 0: no bound
	sched      *scheduler
	preparing  *fairPool[struct{}] // the places where requests are prepared: one per slot (see prepare)
	routes     map[string]route
	created    int64 // the model's "created" in /v1/models: when New ran
	newID      func(prefix string) string
	generate   generateFunc
	onComplete func(Completion)
	// stopping ends, with cause ErrShuttingDown, when Shutdown's grace is
	// over: every running generation's context follows it.
	stopping context.Context
	stop     context.CancelCauseFunc
}

// route is one API endpoint: the method it answers and its handler.
type route struct {
	method     string
	serve      func(w http.ResponseWriter, r *http.Request)
	completion bool // a completion endpoint, reported to OnCompletion
}

// New returns a Handler serving model. It allocates Slots sessions up front,
// so the memory a server needs is known when it starts.
func New(model *engine.Model, opts Options) (*Handler, error) {
	if model == nil {
		return nil, fmt.Errorf("%w: no model", ErrInvalidOptions)
	}
	if opts.Slots < 0 || opts.MaxTokens < 0 || opts.MaxBodyBytes < 0 || opts.WriteTimeout < 0 {
		return nil, fmt.Errorf("%w: Slots, MaxTokens, MaxBodyBytes and WriteTimeout must be >= 0", ErrInvalidOptions)
	}
	slots := max(opts.Slots, 1)
	queue := opts.QueueSize
	switch {
	case queue == 0:
		queue = DefaultQueueSize
	case queue < 0:
		queue = 0
	}
	clientQueue := opts.ClientQueue
	switch {
	case clientQueue == 0:
		clientQueue = min(max(queue/4, 1), queue)
	case clientQueue < 0:
		clientQueue = 0
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.ModelName == "" {
		opts.ModelName = DefaultModelName
	}
	sessions := make([]*engine.Session, slots)
	if opts.Sessions != nil {
		if slots != 1 {
			return nil, fmt.Errorf("%w: a lender of sessions lends one: Slots must be 0 or 1", ErrInvalidOptions)
		}
		s, err := lentSession(opts.Sessions)
		if err != nil {
			return nil, err
		}
		if s.Model() != model {
			return nil, fmt.Errorf("%w: the lent session is of another model", ErrInvalidOptions)
		}
		sessions[0] = s
		if opts.SlotSavePath != "" {
			return nil, fmt.Errorf("%w: SlotSavePath is for the handler's own sessions, not a lender's", ErrInvalidOptions)
		}
	}
	if sessions[0] == nil && slots > 1 {
		// Each session checks that it fits alone; the slots together must too.
		if positions, err := model.SessionContextLength(opts.ContextLength); err == nil {
			kv := opts.KVType
			if kv == engine.KVAuto {
				kv = model.DefaultKVType()
			}
			if err := model.CheckSessionsMemory(positions, kv, slots); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
			}
		}
	}
	for i := range sessions {
		if sessions[i] != nil {
			continue
		}
		s, err := model.NewSession(engine.SessionOptions{ContextLength: opts.ContextLength, KVType: opts.KVType, Threads: opts.Threads})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		sessions[i] = s
	}
	contextLength, threads := sessions[0].ContextLength(), sessions[0].Threads()
	if opts.NKeep < -1 {
		return nil, fmt.Errorf("%w: NKeep %d, must be >= -1 (-1: the whole prompt)", ErrInvalidOptions, opts.NKeep)
	}
	if opts.MaxTokens > contextLength && !opts.ContextShift {
		return nil, fmt.Errorf("%w: MaxTokens %d exceeds the context length %d", ErrInvalidOptions, opts.MaxTokens, contextLength)
	}
	h := &Handler{
		model: model, name: opts.ModelName, opts: opts, context: contextLength, kvType: sessions[0].KVType(), threads: threads,
		sched: newScheduler(sessions, queue, clientQueue, opts.Sessions),
		// As many as can be admitted may wait for a place to prepare.
		preparing: newFairPool(make([]struct{}, slots), slots+queue),
		created:   time.Now().Unix(), newID: randomID, generate: runSession,
		onComplete: opts.OnCompletion,
	}
	h.stopping, h.stop = context.WithCancelCause(context.Background())
	switch {
	case opts.MaxEmbedTokens == 0:
		h.maxEmbed = DefaultMaxEmbedTokens
	case opts.MaxEmbedTokens > 0:
		h.maxEmbed = opts.MaxEmbedTokens
	}
	h.api = &openai.API{Model: model, Grammars: policy.NewGrammars(model), Context: contextLength, MaxTokens: opts.MaxTokens, ContextShift: opts.ContextShift, NKeep: opts.NKeep, ContextHint: opts.ContextHint}
	if h.onComplete == nil {
		h.onComplete = func(Completion) {}
	}
	h.routes = map[string]route{
		"/v1/completions":      {http.MethodPost, h.serveCompletions, true},
		"/v1/chat/completions": {http.MethodPost, h.serveChatCompletions, true},
		"/v1/responses":        {http.MethodPost, h.serveResponses, true},
		"/v1/embeddings":       {http.MethodPost, h.serveEmbeddings, true},
		"/v1/models":           {http.MethodGet, h.serveModels, false},
		"/tokenize":            {http.MethodPost, h.serveTokenize, false},
		"/detokenize":          {http.MethodPost, h.serveDetokenize, false},
		"/health":              {http.MethodGet, h.serveHealth, false},
	}
	for _, path := range rerankPaths {
		h.routes[path] = route{http.MethodPost, h.serveRerank, true}
	}
	return h, nil
}

// ServeHTTP routes a request. A panic below it becomes a 500 (while the
// response has not started), never a crash: in an edge worker a panicking Go
// instance would take the request down with no answer.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := h.newWriter(w)
	defer func() {
		if p := recover(); p != nil && !sw.started {
			writeError(sw, internalError(fmt.Errorf("%w: %v", ErrPanic, p)))
		}
		sw.extend() // for what net/http still writes once the handler returns
	}()
	if e := h.checkHost(r); e != nil {
		writeError(sw, e)
		return
	}
	crossOrigin := h.allowOrigin(w, r)
	path := r.URL.Path
	if r.Method != http.MethodOptions && (strings.HasPrefix(path, "/v1/") || path == "/tokenize" || path == "/detokenize" || slices.Contains(rerankPaths, path) || strings.HasPrefix(path, slotsPrefix)) {
		client, e := h.authenticate(r)
		if e != nil {
			writeError(sw, e)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), clientKey{}, client))
	}
	rt, ok := h.routes[path]
	if !ok && strings.HasPrefix(path, "/v1/models/") {
		rt, ok = route{method: http.MethodGet, serve: h.serveModel}, true
	}
	if !ok && strings.HasPrefix(path, slotsPrefix) {
		rt, ok = h.slotRoute(), true
	}
	if !ok {
		if h.opts.NotFound != nil && !strings.HasPrefix(path, "/v1/") {
			h.opts.NotFound.ServeHTTP(sw, r)
			return
		}
		writeError(sw, &apiError{status: http.StatusNotFound, typ: typeInvalidRequest, code: "unknown_url",
			message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, path)})
		return
	}
	allowed := []string{rt.method, http.MethodOptions}
	if rt.method == http.MethodGet {
		allowed = append(allowed, http.MethodHead)
	}
	switch {
	case r.Method == http.MethodOptions:
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		if crossOrigin {
			preflight(w, r, allowed)
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && rt.method == http.MethodPost:
		h.admit(sw, r, rt)
	case slices.Contains(allowed, r.Method):
		rt.serve(sw, r)
	default:
		e := &apiError{status: http.StatusMethodNotAllowed, typ: typeInvalidRequest, code: "method_not_allowed",
			message: fmt.Sprintf("%s %s: method not allowed (use %s)", r.Method, path, rt.method),
			header:  http.Header{"Allow": {strings.Join(allowed, ", ")}}}
		writeError(sw, e)
	}
}

// Name is the model name the API reports.
func (h *Handler) Name() string { return h.name }

// KVType is the sessions' KV cache type (Options.KVType resolved: KVF32 or
// KVF16).
func (h *Handler) KVType() engine.KVType { return h.kvType }

// ContextLength is the context, in tokens, each request's prompt and
// completion must fit in.
func (h *Handler) ContextLength() int { return h.context }

// ClientLimit is how many requests one client may have in the server at
// once (Options.Slots + Options.ClientQueue resolved), or 0 when only the
// queue's size bounds a client.
func (h *Handler) ClientLimit() int {
	if h.sched.perClient >= h.sched.capacity {
		return 0
	}
	return h.sched.perClient
}

func (h *Handler) serveHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// rerankPaths are where reranking is served: llama.cpp's four paths.
var rerankPaths = []string{"/v1/rerank", "/v1/reranking", "/rerank", "/reranking"}

func (h *Handler) serveTokenize(w http.ResponseWriter, r *http.Request) {
	var answer encoded
	leave, err := h.prepare(w, r, func(body []byte) *apiError {
		var req tokenizeRequest
		if e := decodeJSON(body, &req); e != nil {
			return e
		}
		if req.Content == nil {
			return badRequest("content", "missing_required_parameter", "content is required")
		}
		parse := req.ParseSpecial == nil || *req.ParseSpecial
		ids, err := h.model.Tokenizer().Encode(*req.Content, tokenizer.EncodeOptions{AddSpecial: req.AddSpecial, ParseSpecial: parse})
		if err != nil {
			return generationError(err, "content")
		}
		if ids == nil {
			ids = []int{}
		}
		answer = encodeJSON(http.StatusOK, map[string][]int{"tokens": ids})
		return nil
	})
	leave()
	h.answer(w, err, answer)
}

func (h *Handler) serveDetokenize(w http.ResponseWriter, r *http.Request) {
	var answer encoded
	leave, err := h.prepare(w, r, func(body []byte) *apiError {
		var req detokenizeRequest
		if e := decodeJSON(body, &req); e != nil {
			return e
		}
		if req.Tokens == nil {
			return badRequest("tokens", "missing_required_parameter", "tokens is required")
		}
		text, err := tokenizer.Decode(h.model.Tokenizer(), *req.Tokens)
		if err != nil {
			return badRequest("tokens", "invalid_value", "%v", err)
		}
		answer = encodeJSON(http.StatusOK, map[string]string{"content": text})
		return nil
	})
	leave()
	h.answer(w, err, answer)
}

// answer sends a prepared answer, or prepare's error, if the client is
// still there.
func (h *Handler) answer(w http.ResponseWriter, err error, answer encoded) {
	var e *apiError
	switch {
	case errors.As(err, &e):
		writeError(w, e)
	case err == nil:
		answer.write(w)
	}
}
