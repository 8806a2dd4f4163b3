package jsbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// Binding is the JavaScript object through which a page's worker drives the
// engine. Its methods, all returning a Promise:
//
//	load(model, {tokenizer, contextLength})   → info; model and tokenizer are
//	                                            Uint8Arrays or ArrayBuffers (copied)
//	info()                                    → info of the loaded model
//	tokenize(text, {addBos = true, special = false}) → number[]
//	detokenize(ids)                           → string
//	generate(prompt, options)                 → result
//	stream(prompt, options, onToken)          → result; onToken({text, token, trace?})
//	                                            is called as each token is sampled
//	chat(messages, options, onToken?)         → result, for OpenAI-shaped messages
//
// options is {maxTokens, temperature, topK, topP, minP, repeatPenalty,
// presencePenalty, frequencyPenalty, seed, stop, trace, signal}; see the
// Default constants for omitted fields. A result is {text, tokens,
// promptTokens, finishReason, seed, usage, timings}. Info has the fields of
// engine.Info in camelCase (vocabSize, contextLength, ...) plus chatTemplate,
// sessionContextLength and simd (whether the SIMD128 kernels run).
//
// A rejected Promise carries an Error whose message says what went wrong and
// whose code is "no_model", "invalid_argument", "prompt_too_long",
// "invalid_model", "js_exception", "internal" or "error".
//
// load, generate, stream and chat take turns in call order: a call made
// while another runs waits (it is not rejected) and can be aborted while it
// waits. info, tokenize and detokenize do not wait.
type Binding struct {
	obj      js.Value
	methods  []js.Func
	live     atomic.Int64 // js.Funcs not yet released
	released atomic.Bool

	// queue orders load, generate, stream and chat: one runs at a time.
	queue turnQueue

	mu      sync.Mutex // guards model and session
	model   *engine.Model
	session *engine.Session

	// JavaScript globals, looked up once.
	reflect, object, array, stringFn, promiseCtor, errorCtor js.Value
	uint8Array, arrayBuffer, dataView, abortSignal           js.Value
	messageChannel, setTimeout, crypto                       js.Value

	// tokenHook, when set (by tests), runs before each generated token is
	// delivered, with the token's 1-based index.
	tokenHook func(n int)
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
		crypto:         g.Get("crypto"),
	}
	b.export("load", b.parseLoad)
	b.export("info", b.parseInfo)
	b.export("tokenize", b.parseTokenize)
	b.export("detokenize", b.parseDetokenize)
	b.export("generate", b.parseRun("generate"))
	b.export("stream", b.parseRun("stream"))
	b.export("chat", b.parseRun("chat"))
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
	for _, name := range []string{"load", "info", "tokenize", "detokenize", "generate", "stream", "chat"} {
		b.obj.Delete(name)
	}
	b.methods = nil
}

// current returns the loaded model and its session.
func (b *Binding) current() (*engine.Model, *engine.Session, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.model == nil {
		return nil, nil, fmt.Errorf("%w: call load first", ErrNoModel)
	}
	return b.model, b.session, nil
}

// parseLoad: load(model, {tokenizer, contextLength}).
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
	tokArg, hasTok := f.value("tokenizer")
	if isNullish(modelArg) {
		return nil, invalid("model must be a Uint8Array or an ArrayBuffer, got %s", b.describe(modelArg))
	}
	turn := b.queue.join()
	return func() (any, error) {
		defer b.queue.leave(turn)
		b.queue.wait(context.Background(), turn) // after the calls made before it; a load cannot be aborted
		data, err := b.bytes(modelArg, "model")
		if err != nil {
			return nil, err
		}
		var opts engine.LoadOptions
		if hasTok {
			if opts.Tokenizer, err = b.bytes(tokArg, "tokenizer"); err != nil {
				return nil, err
			}
		}
		m, err := engine.Load(data, opts)
		if err != nil {
			return nil, codedError{code: "invalid_model", err: err}
		}
		s, err := m.NewSession(engine.SessionOptions{ContextLength: ctxLen})
		if err != nil {
			return nil, err
		}
		// The previous model stays until the new one has loaded, so a failed
		// load leaves the binding as it was.
		b.mu.Lock()
		b.model, b.session = m, s
		b.mu.Unlock()
		return infoValue(m, s)
	}, nil
}

// parseInfo: info().
func (b *Binding) parseInfo([]js.Value) (work, error) {
	return func() (any, error) {
		m, s, err := b.current()
		if err != nil {
			return nil, err
		}
		return infoValue(m, s)
	}, nil
}

// infoValue is engine.Info with camelCase keys (its JSON names converted;
// the GGUF metadata keys inside are left as they are), plus the chat
// template's name (null when the file's template is not recognised), the
// session's context length, and whether the matrix products run on the
// SIMD128 kernels (the host decides, by providing them or not).
func infoValue(m *engine.Model, s *engine.Session) (any, error) {
	raw, err := json.Marshal(m.Info())
	if err != nil {
		return nil, fmt.Errorf("info: %w", err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("info: %w", err)
	}
	out := make(map[string]any, len(fields)+3)
	for k, v := range fields {
		out[camelCase(k)] = v
	}
	out["chatTemplate"] = nil
	if t, err := m.ChatTemplate(); err == nil {
		out["chatTemplate"] = t.Name()
	}
	out["sessionContextLength"] = s.ContextLength()
	out["simd"] = tensor.SIMD()
	return out, nil
}

// camelCase turns snake_case into camelCase: "bos_token_id" → "bosTokenId".
func camelCase(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if p := parts[i]; p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "")
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
		m, _, err := b.current()
		if err != nil {
			return nil, err
		}
		ids, err := m.Tokenizer.Encode(text, opts)
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
		if e.Type() != js.TypeNumber || e.Float() != float64(int32(e.Float())) {
			return nil, invalid("ids[%d] must be an integer token id, got %s", i, b.describe(e))
		}
		ids[i] = e.Int()
	}
	return func() (any, error) {
		m, _, err := b.current()
		if err != nil {
			return nil, err
		}
		return tokenizer.Decode(m.Tokenizer, ids)
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
