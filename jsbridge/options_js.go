package jsbridge

import (
	"encoding/binary"
	"math"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/policy"
	"github.com/wasmlm/wasmlm/sampling"
)

// maxSeed is the largest seed a JavaScript number holds exactly
// (Number.MAX_SAFE_INTEGER), so every seed the bridge reports can be given
// back to reproduce a run.
const maxSeed = 1<<53 - 1

// maxInt32 caps integer options: nothing useful is larger, and it keeps
// arithmetic on them far from overflow.
const maxInt32 = math.MaxInt32

// generateFields are the keys a generate or stream options object may
// have. (A chat's request is OpenAI's: chat_js.go.)
var generateFields = []string{
	"maxTokens", "temperature", "topK", "topP", "minP", "repeatPenalty",
	"presencePenalty", "frequencyPenalty", "seed", "stop", "trace", "signal", "onPromptProgress",
	"responseFormat", "grammar", "session",
}

// request is one parsed generate, stream or chat call.
type request struct {
	method string
	prompt string // generate and stream
	body   []byte // chat: OpenAI's request body, JSON
	format policy.ResponseFormat
	// opts: generate's and stream's options; a chat's only its seed, for
	// the result of a chat aborted before its turn (chat_js.go).
	opts    engine.GenerateOptions
	signal  js.Value // an AbortSignal, or undefined
	onToken js.Value // a function, or undefined
	// onPromptProgress, a function or undefined, gets {done, total} after
	// each evaluated block of prompt tokens (engine.GenerateOptions.PromptProgress).
	onPromptProgress js.Value
	session          int // the session it runs in: 0, the binding's own, or openSession's
}

// parseGenerateOptions maps a JavaScript options object onto engine
// options: the fields present over engine.DefaultGenerateOptions (the CLI's
// defaults too). The bridge checks what only it can — types, whole numbers,
// what fits a Go value — and the engine checks the ranges, so an option is
// valid in the page exactly when it is on the command line; either way the
// error names the JavaScript field. An omitted seed is drawn from
// crypto.getRandomValues.
//
// responseFormat and grammar hold the text to a JSON schema or a GBNF
// grammar (format_js.go).
func (b *Binding) parseGenerateOptions(v js.Value, r *request) error {
	f, err := b.readFields(v, "options", generateFields)
	if err != nil {
		return err
	}
	if r.format, err = b.parseFormat(f); err != nil {
		return err
	}
	if r.session, err = f.session(); err != nil {
		return err
	}
	r.opts = engine.DefaultGenerateOptions()
	o := &r.opts
	p := &o.Sampling
	if o.MaxTokens, err = f.integer("maxTokens", o.MaxTokens, math.MinInt32, maxInt32, "of 32 bits"); err != nil {
		return err
	}
	for _, x := range []struct {
		name string
		dst  *float32
	}{
		{"temperature", &p.Temperature}, {"topP", &p.TopP}, {"minP", &p.MinP}, {"repeatPenalty", &p.RepeatPenalty},
		{"presencePenalty", &p.PresencePenalty}, {"frequencyPenalty", &p.FrequencyPenalty},
	} {
		if *x.dst, err = f.float32Field(x.name, *x.dst); err != nil {
			return err
		}
	}
	if p.TopK, err = f.integer("topK", p.TopK, math.MinInt32, maxInt32, "of 32 bits"); err != nil {
		return err
	}
	seed, err := f.integer("seed", -1, 0, maxSeed, "in [0, 2^53 - 1]")
	if err != nil {
		return err
	}
	if seed < 0 {
		seed = b.randomSeed()
	}
	p.Seed = uint64(seed)
	if o.Stop, err = b.parseStop(f); err != nil {
		return err
	}
	if o.Trace, err = f.boolean("trace", false); err != nil {
		return err
	}
	r.onPromptProgress = js.Undefined()
	if fn, ok := f.value("onPromptProgress"); ok && !fn.IsUndefined() && !fn.IsNull() {
		if typeOf(fn) != js.TypeFunction {
			return invalid("onPromptProgress", "must be a function, got %s", b.describe(fn))
		}
		r.onPromptProgress = fn
	}
	if r.signal, err = f.signal(); err != nil {
		return err
	}
	// The JS API has no logit bias, the one option whose check needs the
	// vocabulary: any vocabulary size the engine accepts does.
	if err := o.Validate(sampling.MaxVocabSize); err != nil {
		return err
	}
	return b.checkGrammar(r)
}

// maxStopRead bounds the stop array the bridge reads; the engine allows
// fewer and says so.
const maxStopRead = 256

// parseStop reads stop: a string or an array of strings.
func (b *Binding) parseStop(f fields) ([]string, error) {
	v, ok := f.value("stop")
	if !ok {
		return nil, nil
	}
	stops, _, err := b.stringOrStrings(v, "stop", maxStopRead)
	return stops, err
}

// randomSeed draws a seed in [0, 2^53) from crypto.getRandomValues.
func (b *Binding) randomSeed() int {
	buf := b.uint8Array.New(8)
	b.crypto.Call("getRandomValues", buf)
	var raw [8]byte
	js.CopyBytesToGo(raw[:], buf)
	return int(binary.LittleEndian.Uint64(raw[:]) & maxSeed)
}

// tokenizeFields are the keys of tokenize's options.
var tokenizeFields = []string{"addBos", "special"}

// loadFields are the keys of load's options.
var loadFields = []string{"tokenizer", "contextLength", "peers", "sharedMemory", "kvType", "device"}

// kvType reads a kvType option: 'auto' (also when absent), 'f16' or 'f32'
// (engine.SessionOptions.KVType).
func (f fields) kvType() (engine.KVType, error) {
	v, ok := f.value("kvType")
	if !ok {
		return engine.KVAuto, nil
	}
	if typeOf(v) == js.TypeString {
		if t, err := engine.ParseKVType(v.String()); err == nil {
			return t, nil
		}
	}
	return 0, invalid("kvType", "must be 'auto', 'f16' or 'f32', got %s", f.b.describe(v))
}
