package jsbridge

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"syscall/js"

	"github.com/wasmlm/wasmlm/chat"
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

// generateFields are the keys a generate, stream or chat options object may
// have.
var generateFields = []string{
	"maxTokens", "temperature", "topK", "topP", "minP", "repeatPenalty",
	"presencePenalty", "frequencyPenalty", "seed", "stop", "trace", "signal", "onPromptProgress",
	"responseFormat", "grammar",
}

// chatFields are the keys a chat options object may have: generate's, the
// chat template's options, and the tools (tools_js.go).
var chatFields = append(slices.Clip(generateFields), "enableThinking", "tools", "toolChoice", "parallelToolCalls")

// request is one parsed generate, stream or chat call.
type request struct {
	method   string
	prompt   string         // generate and stream
	msgs     []chat.Message // chat
	chatOpts chat.Options   // chat: the template's options, the tools and tool_choice
	parallel bool           // chat: parallelToolCalls
	format   policy.ResponseFormat
	opts     engine.GenerateOptions
	signal   js.Value // an AbortSignal, or undefined
	onToken  js.Value // a function, or undefined
	// onPromptProgress, a function or undefined, gets {done, total} after
	// each evaluated block of prompt tokens (engine.GenerateOptions.PromptProgress).
	onPromptProgress js.Value
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
//
// A chat's options may also have enableThinking (default true): false is
// the Jinja template's enable_thinking=false, which switches a thinking
// template's reasoning off (chat.Options.DisableThinking); so does a
// grammar, which holds the reply from its first token. And a chat's may
// have tools, toolChoice and parallelToolCalls (tools_js.go).
func (b *Binding) parseGenerateOptions(v js.Value, r *request) error {
	known := generateFields
	if r.method == "chat" {
		known = chatFields
	}
	f, err := b.readFields(v, "options", known)
	if err != nil {
		return err
	}
	if r.format, err = b.parseFormat(f); err != nil {
		return err
	}
	if r.method == "chat" {
		enable, err := f.boolean("enableThinking", true)
		if err != nil {
			return err
		}
		if err := b.parseTools(f, r); err != nil {
			return err
		}
		r.chatOpts.DisableThinking = !enable || r.forcedGrammar()
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
		if fn.Type() != js.TypeFunction {
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

// parseMessages reads OpenAI-shaped chat messages: {role, content}, the
// content a string, null, or an array of {type: "text", text} parts (joined
// in order), and the tool fields tool_calls, tool_call_id and name
// (messageTools).
func (b *Binding) parseMessages(v js.Value) ([]chat.Message, error) {
	n, err := b.arrayLen(v, "messages", maxArrayLen, false)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, invalid("messages", "must hold at least one message")
	}
	msgs := make([]chat.Message, n)
	for i := range msgs {
		m := b.get(v, i)
		if m.Type() != js.TypeObject {
			return nil, invalid(fmt.Sprintf("messages[%d]", i), "must be an object {role, content}, got %s", b.describe(m))
		}
		role := b.get(m, "role")
		if role.Type() != js.TypeString {
			return nil, invalid(fmt.Sprintf("messages[%d].role", i), "must be a string, got %s", b.describe(role))
		}
		msgs[i].Role = role.String()
		if msgs[i].Content, err = b.messageContent(b.get(m, "content"), i); err != nil {
			return nil, err
		}
		if err := b.messageTools(m, i, &msgs[i]); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// messageContent reads one message's content.
func (b *Binding) messageContent(c js.Value, i int) (string, error) {
	switch {
	case isNullish(c):
		return "", nil
	case c.Type() == js.TypeString:
		return c.String(), nil
	case !b.array.Call("isArray", c).Bool():
		return "", invalid(fmt.Sprintf("messages[%d].content", i), "must be a string or an array of text parts, got %s", b.describe(c))
	}
	what := fmt.Sprintf("messages[%d].content", i)
	n, err := b.arrayLen(c, what, maxArrayLen, false)
	if err != nil {
		return "", err
	}
	var text []byte
	for j := range n {
		part := b.get(c, j)
		var typ, t js.Value
		if part.Type() == js.TypeObject {
			typ, t = b.get(part, "type"), b.get(part, "text")
		}
		if typ.Type() != js.TypeString || typ.String() != "text" || t.Type() != js.TypeString {
			return "", invalid(fmt.Sprintf("%s[%d]", what, j), "must be a text part {type: \"text\", text: string}, got %s", b.describe(part))
		}
		text = append(text, t.String()...)
	}
	return string(text), nil
}

// tokenizeFields are the keys of tokenize's options.
var tokenizeFields = []string{"addBos", "special"}

// loadFields are the keys of load's options.
var loadFields = []string{"tokenizer", "contextLength", "peers", "kvType"}

// kvType reads a kvType option: 'auto' (also when absent), 'f16' or 'f32'
// (engine.SessionOptions.KVType).
func (f fields) kvType() (engine.KVType, error) {
	v, ok := f.value("kvType")
	if !ok {
		return engine.KVAuto, nil
	}
	if v.Type() == js.TypeString {
		if t, err := engine.ParseKVType(v.String()); err == nil {
			return t, nil
		}
	}
	return 0, invalid("kvType", "must be 'auto', 'f16' or 'f32', got %s", f.b.describe(v))
}
