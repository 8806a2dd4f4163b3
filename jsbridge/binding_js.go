package jsbridge

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/shard"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/policy"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// Binding is the JavaScript object through which a page's worker drives the
// engine. Its methods, all returning a Promise:
//
//	load(model, {tokenizer, contextLength, peers, sharedMemory, kvType, device}) → info; model and
//	                                            tokenizer are Uint8Arrays or ArrayBuffers
//	                                            (copied), or model is 'assembled': what
//	                                            prepare and fill read (assemble_js.go);
//	                                            peers: see below; device: 'auto', 'webgpu'
//	                                            or 'cpu', where the forward pass runs
//	                                            (device_js.go)
//	unload()                                  → undefined: the model's GPU buffers freed
//	                                            and the model dropped (the page ends the
//	                                            worker next)
//	inspect(prefixes, sizes, options)         → what a model is and what loading it takes,
//	                                            from its header (inspect_js.go)
//	prepare(prefixes, sizes, {shardIndex, shardCount}) → {reads, size, bytes}
//	fill(source, offset, chunk)               → bytes placed
//	filled(bytes)                             → bytes placed so far
//	info()                                    → info of the loaded model
//	tokenize(text, {addBos = true, special = false}) → number[]
//	detokenize(ids)                           → string
//	chatTokens(request)                       → number: the tokens chat's request's prompt
//	                                            takes, counted even past the context
//	                                            (chattokens_js.go)
//	generate(prompt, options)                 → result
//	stream(prompt, options, onToken)          → result; onToken({text, token, trace?})
//	                                            is called as each token is sampled
//	chat(request, {signal}, onToken?)         → result, for OpenAI's chat completion request
//	                                            (its body as JSON, read by package openai as
//	                                            the HTTP API reads it: chat_js.go); the first
//	                                            chunk, with no text, says the request is valid;
//	                                            the result and chunks also have reasoning and
//	                                            content, and with tools toolCalls [{id, name,
//	                                            arguments}] (a chunk's: the last one's); in
//	                                            OpenAI's shapes (package openai), a chunk's
//	                                            deltas and the result's choice {message,
//	                                            finish_reason}
//	embed(input, {truncate, normalize, signal}) → {vectors, dimensions, tokens, truncated,
//	                                            usage, yieldMs}; input a string or an array
//	                                            of strings; vectors a Uint8Array of the
//	                                            embeddings' little-endian float32 values,
//	                                            one after the other (embed_js.go)
//	rerank(query, documents, {truncate, signal}) → {scores, tokens, truncated, usage,
//	                                            yieldMs}, the documents in their order
//	split(count, peers, sharedMemory)         → info; the loaded model becomes shard 0
//	                                            of count, which leads the others
//	shard(index, count)                       → Uint8Array: a GGUF file of that shard
//	                                            of the loaded (whole, GGUF) model
//	follow()                                  → undefined when the group stops; rejects
//	                                            when it breaks (shards 1..count-1)
//	saveState()                               → Uint8Array: the session's conversation
//	                                            (engine.Session.SaveState: state_js.go)
//	loadState(state)                          → {tokens}: the session continues from a
//	                                            saved state (Uint8Array or ArrayBuffer)
//	identity()                                → the model's engine.Model.Identity, hex
//	openSession(), closeSession(id), sessions() → sessions of their own over the
//	                                            one model, for the session option of
//	                                            generate, stream, chat, embed, rerank,
//	                                            saveState and loadState (sessions_js.go)
//	serveHTTP(request, {modelName, signal}, onResponse) → undefined once answered: an
//	                                            HTTP request served by package httpapi's
//	                                            OpenAI-compatible handler over the model
//	                                            (serve_js.go; only with the build tag
//	                                            wasmlm_serve, else it rejects with
//	                                            serve_failed: serve_off_js.go)
//
// generate's and stream's options are {maxTokens, temperature, topK, topP,
// minP, repeatPenalty, presencePenalty, frequencyPenalty, seed, stop, trace,
// signal, onPromptProgress, responseFormat, grammar} (format_js.go); omitted
// fields take engine.DefaultGenerateOptions. A chat's request takes
// OpenAI's defaults, as over HTTP. A result is {text, tokens,
// promptTokens, finishReason, seed, usage, timings}; a chat's also has
// choice (OpenAI's message, finish_reason and logprobs) and
// completionTimings (openai.Timings, as httpapi's completions carry). Info has the fields of
// engine.Info in camelCase (vocabSize, contextLength, ...) plus chatTemplate,
// sessionContextLength, kvType (the session's KV cache type, 'f16' or
// 'f32': load's kvType, 'auto' by default, resolved for the model), simd
// (whether the SIMD128 kernels run), device ('webgpu' or 'cpu'), with
// deviceReason (why not the GPU) or adapter ({vendor, architecture,
// description, fallback}), and what the model can do: generates
// (false for an encoder, which only embeds or ranks), pooling ('mean',
// 'cls', 'last' or 'rank') and reranks. generate, stream and chat on a
// model that does not generate reject with code unsupported_model.
//
// A rejected Promise carries an Error whose message says what went wrong and
// whose code is policy.CodeOf's ("invalid_argument", "prompt_too_long",
// "invalid_model", "unsupported_model", "busy", "exchange_failed",
// "internal", "error", and the GPU's "device_unsupported" and
// "device_lost") or the bridge's ("no_model", "js_exception"). An
// invalid argument or option also has field (its JavaScript name), param
// (its snake_case name) and problem; a chat's bad request has the HTTP
// API's message, and field and param the request field (openaiError).
//
// load, split, generate, stream, chat, embed and rerank take turns in call
// order (and serveHTTP's generations, embeddings and rerankings, in the
// order they reach the session): a call made while another runs waits (it is not rejected) and can
// be aborted while it waits. info, tokenize, detokenize, shard and follow
// do not wait. An aborted generation resolves with what it generated; an
// aborted embed or rerank rejects with code "aborted" (ErrAborted).
//
// A model split across workers (engine/shard) runs as one: shard i
// lives in worker i, and each pair of workers has a MessageChannel. peers is
// this worker's ends of them: an array with, at index j, the MessagePort to
// the worker of shard j (null at its own index). sharedMemory, where the
// page is cross-origin isolated, is a SharedArrayBuffer of the group's
// control words: the messages then go through shared memory, the ports
// carrying only what sets it up (mailbox_js.go). There are two ways to
// start one. The page (web/wasmlm.js) loads the whole model into a worker
// that only cuts: shard there for every shard, then load (with peers) each
// file in its own worker — shard 0's in a fresh worker that replaces the
// cutter, so that no worker keeps the whole file (WebAssembly memory never
// shrinks) — and follow in workers 1..count-1. A host that does not mind
// worker 0 keeping the whole file calls split in it instead of loading
// shard 0's file there (the tests do). Generations run in worker 0; the
// others compute their part of each step.
type Binding struct {
	obj      js.Value
	methods  []js.Func
	live     atomic.Int64 // js.Funcs not yet released
	released atomic.Bool

	// queue orders load, split, generate, stream, chat, embed and rerank:
	// one runs at a time.
	queue turnQueue

	mu       sync.Mutex // guards model, grammars, part, session, shardSession, ctxLen, kvType, exchange, source and gpu
	model    *engine.Model
	grammars *policy.Grammars // the grammars of the model's requests, compiled once
	part     *shard.Part      // the shard the model is, for a shard of a split model; nil when whole
	session  *engine.Session  // made when a call first needs it (see current)
	extra    sessionTable     // the sessions openSession opened (sessions_js.go)
	shardSes *shard.Session   // the session of a shard (its Session is session)
	ctxLen   int              // the positions the session holds
	kvType   engine.KVType    // the session's KV cache type, resolved (load's kvType)
	exchange *portExchange    // the channels to the other shards, for a shard of a split model
	source   []byte           // the bytes of a whole GGUF model, which shard cuts
	asm      *assembly        // a model being filled (prepare, fill), until load takes it
	served   *served          // the OpenAI-compatible API over the model (serveHTTP), once asked for
	gpu      gpuState         // the worker's WebGPU host, and the loaded model's device

	// JavaScript globals, looked up once.
	reflect, object, array, stringFn, promiseCtor, errorCtor js.Value
	uint8Array, arrayBuffer, dataView, abortSignal           js.Value
	messageChannel, setTimeout, setImmediate, crypto, json   js.Value

	// tokenHook, when set (by tests), runs before each generated token is
	// delivered, with the token's 1-based index.
	tokenHook func(n int)
	// passHook, when set (by tests), runs each time an embed or rerank
	// yields between the engine's passes, with the yield's 1-based index.
	passHook func(n int)
}

// New creates a binding with no model loaded. Put Value() where JavaScript
// can find it (cmd/wasm sets globalThis.wasmlm); call Release to free its
// functions.
func New() *Binding {
	g := js.Global()
	b := &Binding{
		obj:            g.Get("Object").New(),
		reflect:        g.Get("Reflect"),
		object:         g.Get("Object"),
		array:          g.Get("Array"),
		stringFn:       g.Get("String"),
		promiseCtor:    g.Get("Promise"),
		errorCtor:      g.Get("Error"),
		uint8Array:     g.Get("Uint8Array"),
		arrayBuffer:    g.Get("ArrayBuffer"),
		dataView:       g.Get("DataView"),
		abortSignal:    g.Get("AbortSignal"),
		messageChannel: g.Get("MessageChannel"),
		setTimeout:     g.Get("setTimeout"),
		setImmediate:   g.Get("setImmediate"),
		crypto:         g.Get("crypto"),
		json:           g.Get("JSON"),
	}
	b.gpu.open, b.gpu.newDevice, b.gpu.runsHeader = openGPU, newGPUDevice, gpuRunsHeader
	b.export("load", b.parseLoad)
	b.export("info", b.parseInfo)
	b.export("tokenize", b.parseTokenize)
	b.export("detokenize", b.parseDetokenize)
	b.export("generate", b.parseRun("generate"))
	b.export("stream", b.parseRun("stream"))
	b.export("chat", b.parseRun("chat"))
	b.export("embed", b.parseEmbed)
	b.export("rerank", b.parseRerank)
	b.export("split", b.parseSplit)
	b.export("shard", b.parseShard)
	b.export("follow", b.parseFollow)
	b.export("inspect", b.parseInspect)
	b.export("prepare", b.parsePrepare)
	b.export("fill", b.parseFill)
	b.export("filled", b.parseFilled)
	b.export("serveHTTP", b.parseServeHTTP)
	b.export("unload", b.parseUnload)
	b.export("chatTokens", b.parseChatTokens)
	b.export("saveState", b.parseSaveState)
	b.export("loadState", b.parseLoadState)
	b.export("identity", b.parseIdentity)
	b.export("openSession", b.parseOpenSession)
	b.export("closeSession", b.parseCloseSession)
	b.export("sessions", b.parseSessions)
	return b
}

// Value is the JavaScript binding object.
func (b *Binding) Value() js.Value { return b.obj }

// Release removes the methods from the binding object and releases their
// functions (a call through a reference kept from before throws in
// JavaScript). Generations in progress finish and release their own
// functions. cmd/wasm never calls it: its binding lives as long as the page.
func (b *Binding) Release() {
	if b.released.Swap(true) {
		return
	}
	for _, f := range b.methods {
		b.release(f)
	}
	for _, name := range []string{"load", "info", "tokenize", "detokenize", "generate", "stream", "chat", "embed", "rerank", "split", "shard", "follow", "inspect", "prepare", "fill", "filled", "serveHTTP", "unload", "chatTokens", "saveState", "loadState", "identity", "openSession", "closeSession", "sessions"} {
		b.obj.Delete(name)
	}
	b.methods = nil
	b.mu.Lock()
	ex := b.exchange
	b.mu.Unlock()
	if ex != nil {
		ex.close(fmt.Errorf("%w: the binding was released", shard.ErrExchange))
	}
}

// current returns the loaded model and its session, making the session if
// no call has needed it yet. Sessions are made late because their KV cache
// is most of their memory: a model that is about to be split (split) never
// needs one for the whole model, and WebAssembly memory, once grown, stays.
func (b *Binding) current() (*engine.Model, *engine.Session, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.model == nil {
		return nil, nil, fmt.Errorf("%w: call load first", ErrNoModel)
	}
	if b.session == nil {
		opts := engine.SessionOptions{ContextLength: b.ctxLen, KVType: b.kvType}
		if b.gpu.device != nil {
			opts.Device = b.gpu.device // the model's GPU (device_js.go)
		}
		if b.part == nil {
			s, err := b.model.NewSession(opts)
			if err != nil {
				return nil, nil, err
			}
			b.session = s
		} else {
			s, err := shard.NewSession(b.part, b.exchange, opts)
			if err != nil {
				return nil, nil, err
			}
			b.session, b.shardSes = s.Session, s
		}
	}
	return b.model, b.session, nil
}

// currentShard is the session of the loaded shard (see current).
func (b *Binding) currentShard() (*shard.Session, error) {
	if _, _, err := b.current(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shardSes == nil {
		return nil, invalidCall("only shards 1..n-1 of a split model follow; this model is whole")
	}
	return b.shardSes, nil
}

// grammarsOf is the grammars of m's requests: the binding's while m is its
// model, else (the model was replaced meanwhile) new ones.
func (b *Binding) grammarsOf(m *engine.Model) *policy.Grammars {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.model == m && b.grammars != nil {
		return b.grammars
	}
	return policy.NewGrammars(m)
}

// currentModel returns the loaded model and its session's context length,
// without making the session.
func (b *Binding) currentModel() (*engine.Model, int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.model == nil {
		return nil, 0, fmt.Errorf("%w: call load first", ErrNoModel)
	}
	return b.model, b.ctxLen, nil
}

// parseLoad: load(model, {tokenizer, contextLength, peers, kvType}).
func (b *Binding) parseLoad(args []js.Value) (work, error) {
	modelArg := arg(args, 0)
	f, err := b.readFields(arg(args, 1), "options", loadFields)
	if err != nil {
		return nil, err
	}
	ctxLen, err := f.integer("contextLength", 0, 0, maxInt32, ">= 0 (0: the model's, at most 4096)")
	if err != nil {
		return nil, err
	}
	kvType, err := f.kvType()
	if err != nil {
		return nil, err
	}
	mode, err := f.device()
	if err != nil {
		return nil, err
	}
	tokArg, hasTok := f.value("tokenizer")
	peersArg, hasPeers := f.value("peers")
	sharedArg, _ := f.value("sharedMemory")
	assembled := typeOf(modelArg) == js.TypeString && modelArg.String() == "assembled"
	if isNullish(modelArg) || (typeOf(modelArg) == js.TypeString && !assembled) {
		return nil, invalid("model", "must be a Uint8Array, an ArrayBuffer or 'assembled', got %s", b.describe(modelArg))
	}
	turn := b.queue.join()
	return func() (any, error) {
		defer b.queue.leave(turn)
		b.queue.wait(context.Background(), turn) // after the calls made before it; a load cannot be aborted
		data, err := b.modelBytes(modelArg, assembled)
		if err != nil {
			return nil, err
		}
		var opts engine.LoadOptions
		if hasTok {
			if opts.Tokenizer, err = b.bytes(tokArg, "tokenizer"); err != nil {
				return nil, err
			}
		}
		var m *engine.Model
		var part *shard.Part
		var ex *portExchange
		if hasPeers {
			if _, _, ok := shard.FileInfo(data); !ok {
				return nil, invalidCall("peers is for shards of a split model; this model is whole")
			}
			if part, err = shard.Load(data); err != nil {
				return nil, err
			}
			m = part.Model
			if ex, err = b.connect(part, peersArg, sharedArg); err != nil {
				return nil, err
			}
		} else if m, err = engine.Load(data, opts); err != nil {
			if index, count, ok := shard.FileInfo(data); ok {
				return nil, invalidCall("this file is shard %d of a model split %d ways: load it with peers", index, count)
			}
			return nil, err
		}
		if ctxLen, err = m.SessionContextLength(ctxLen); err != nil {
			return nil, err
		}
		var source []byte
		if part == nil && m.Format() == engine.FormatGGUF {
			source = data // the weights are views of it anyway
		}
		if kvType == engine.KVAuto {
			kvType = m.DefaultKVType() // the whole model's choice, for a shard too
		}
		if err := m.CheckContextMemory(ctxLen, kvType); err != nil {
			return nil, err // the session comes later: refuse its context now
		}
		workers := 1
		if part != nil {
			workers = part.Count
		}
		place, device, session, err := b.place(m, mode, workers, engine.SessionOptions{ContextLength: ctxLen, KVType: kvType})
		if err != nil {
			return nil, err
		}
		// The previous model stays until the new one has loaded, so a failed
		// load leaves the binding as it was. (A session made for it between
		// these two calls, with the new type, is dropped by install.)
		b.setKVType(kvType)
		b.install(m, part, ctxLen, ex, source)
		b.setDevice(place, device, session)
		// Parsing the header left garbage (the vocabulary's strings): collect
		// it now, so that the session's buffers reuse its memory rather than
		// grow WebAssembly memory, which never shrinks.
		runtime.GC()
		return infoValue(m, part, ctxLen, kvType, place)
	}, nil
}

// setKVType sets the KV cache type of the sessions made from now on.
func (b *Binding) setKVType(t engine.KVType) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.kvType = t
}

// sessionKVType is the KV cache type of the loaded model's session.
func (b *Binding) sessionKVType() engine.KVType {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.kvType
}

// modelBytes is load's model: the bytes of modelArg copied into Go memory,
// or the model prepare and fill assembled.
func (b *Binding) modelBytes(modelArg js.Value, assembled bool) ([]byte, error) {
	if !assembled {
		return b.bytes(modelArg, "model")
	}
	a, err := b.takeAssembly()
	if err != nil {
		return nil, err
	}
	return a.buf, nil
}

// parseInfo: info().
func (b *Binding) parseInfo([]js.Value) (work, error) {
	return func() (any, error) {
		m, ctxLen, err := b.currentModel()
		if err != nil {
			return nil, err
		}
		b.mu.Lock()
		part, kvType, place := b.part, b.kvType, b.gpu.place
		b.mu.Unlock()
		return infoValue(m, part, ctxLen, kvType, place)
	}, nil
}

// infoValue is engine.Info with camelCase keys (its JSON names converted;
// the GGUF metadata keys inside are left as they are), plus the chat
// template's name (null when the file's template is not recognised), the
// session's context length and KV cache type, whether the matrix products
// run on the SIMD128 kernels (the host decides, by providing them or not),
// what the model does (generates, pooling, reranks), which shard of how
// many the model is (0 of 1 when whole) and where it runs (device,
// deviceReason, adapter: placement.set).
func infoValue(m *engine.Model, part *shard.Part, sessionContextLength int, kvType engine.KVType, place placement) (any, error) {
	out, err := camelInfo(m.Info())
	if err != nil {
		return nil, err
	}
	out["chatTemplate"] = nil
	if t, err := policy.ChatTemplate(m); err == nil {
		out["chatTemplate"] = t.Name()
	}
	out["sessionContextLength"] = sessionContextLength
	if w := m.ContextWarning(sessionContextLength); w != "" && m.Generates() {
		out["warning"] = w // a context beyond the trained one: the page warns once
	}
	out["kvType"] = kvType.String()
	out["simd"] = tensor.SIMD()
	out["reranks"] = m.Reranks() // Info leaves it out when false
	out["shardIndex"], out["shardCount"] = 0, 1
	if part != nil {
		out["shardIndex"], out["shardCount"] = part.Index, part.Count
	}
	place.set(out)
	return out, nil
}

// parseTokenize: tokenize(text, {addBos = true, special = false}).
func (b *Binding) parseTokenize(args []js.Value) (work, error) {
	text, err := b.str(arg(args, 0), "text")
	if err != nil {
		return nil, err
	}
	f, err := b.readFields(arg(args, 1), "options", tokenizeFields)
	if err != nil {
		return nil, err
	}
	var opts tokenizer.EncodeOptions
	if opts.AddSpecial, err = f.boolean("addBos", true); err != nil {
		return nil, err
	}
	if opts.ParseSpecial, err = f.boolean("special", false); err != nil {
		return nil, err
	}
	return func() (any, error) {
		m, _, err := b.currentModel()
		if err != nil {
			return nil, err
		}
		ids, err := m.Tokenizer().Encode(text, opts)
		if err != nil {
			return nil, err
		}
		return idsValue(ids), nil
	}, nil
}

// parseDetokenize: detokenize(ids), ids an array or typed array of integers.
func (b *Binding) parseDetokenize(args []js.Value) (work, error) {
	v := arg(args, 0)
	n, err := b.arrayLen(v, "ids", maxArrayLen, true)
	if err != nil {
		return nil, err
	}
	ids := make([]int, n)
	for i := range ids {
		e := b.get(v, i)
		f := 0.5
		if typeOf(e) == js.TypeNumber {
			f = e.Float()
		}
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 { // an integer out of range is told the range below
			return nil, invalid(fmt.Sprintf("ids[%d]", i), "must be an integer token id, got %s", b.describe(e))
		}
		ids[i] = int(f)
	}
	return func() (any, error) {
		m, _, err := b.currentModel()
		if err != nil {
			return nil, err
		}
		vocab := m.Tokenizer().VocabSize()
		for i, id := range ids {
			if id < 0 || id >= vocab {
				return nil, invalid(fmt.Sprintf("ids[%d]", i), "must be a token id of this model (0..%d), got %d", vocab-1, id)
			}
		}
		return tokenizer.Decode(m.Tokenizer(), ids)
	}, nil
}

// idsValue converts token ids for js.ValueOf (a JavaScript array).
func idsValue(ids []int) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}
