package jsbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall/js"
	"time"
	"unicode/utf8"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/shard"
	"github.com/wasmlm/wasmlm/openai"
	"github.com/wasmlm/wasmlm/policy"
	"github.com/wasmlm/wasmlm/sampling"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// parseRun returns the argument parser of generate, stream or chat:
//
//	generate(prompt, options)
//	stream(prompt, options, onToken)
//	chat(request, options, onToken?)  request: OpenAI's request body as JSON (chat_js.go)
func (b *Binding) parseRun(method string) func(args []js.Value) (work, error) {
	return func(args []js.Value) (work, error) {
		r := &request{method: method, onToken: js.Undefined()}
		if method == "chat" {
			if err := b.parseChat(args, r); err != nil {
				return nil, err
			}
		} else {
			var err error
			if r.prompt, err = b.str(arg(args, 0), "prompt"); err != nil {
				return nil, err
			}
			if err := b.parseGenerateOptions(arg(args, 1), r); err != nil {
				return nil, err
			}
		}
		switch cb := arg(args, 2); {
		case typeOf(cb) == js.TypeFunction && method != "generate":
			r.onToken = cb
		case method == "stream" || (method == "chat" && !cb.IsUndefined()):
			return nil, invalid("onToken", "must be a function, got %s", b.describe(cb))
		case method == "generate" && len(args) > 2:
			return nil, invalidCall("generate takes (prompt, options); use stream for a token callback")
		}
		turn := b.queue.join()
		return func() (any, error) { return b.run(r, turn) }, nil
	}
}

// run waits for the request's turn, then generates. An abort (through the
// request's signal) before the turn comes resolves with finishReason "abort"
// and no tokens.
func (b *Binding) run(r *request, turn *ticket) (_ any, err error) {
	defer b.queue.leave(turn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	unwatch := b.watchAbort(r.signal, cancel)
	defer unwatch()

	began := time.Now()
	if !b.queue.wait(ctx, turn) { // aborted before its turn came
		v := resultValue(engine.Result{FinishReason: engine.FinishAbort}, r.opts.Sampling.Seed, 0)
		if r.method == "chat" {
			setChoice(v, openai.Reply{}, engine.FinishAbort)
		}
		return v, nil
	}
	queued := time.Since(began)
	m, s, err := b.sessionFor(r.session)
	if err != nil {
		return nil, err
	}
	if !m.Generates() {
		what := "embeds text (embeddings.create)"
		if m.Reranks() {
			what = "ranks documents against a query (rerank)"
		}
		return nil, fmt.Errorf("%w: this %s model %s and does not generate text", engine.ErrUnsupported, m.Architecture(), what)
	}
	defer func() {
		// A panic mid-generation may leave the KV cache out of step with the
		// session's token list: start the next call with a fresh session.
		// The error is the one the method's Promise gets for any panic
		// (panicError, under the method's exported name).
		if p := recover(); p != nil {
			b.resetSession(s)
			err = b.panicError(r.method, p)
		}
	}()

	var (
		prompt engine.Prompt
		opts   = r.opts
		calls  *openai.Calls // how a chat reply that may call tools is read; nil: text
		// replyPrefix is the text the chat prompt ends with inside the
		// reply (openai.Job.ReplyPrefix), read before it.
		replyPrefix string
		// grammarField is the request field of the grammar, if any, which
		// an error of the grammar during the generation names.
		grammarField string
		// logprobs collects a chat's log-probabilities when it asks for
		// them (nil otherwise); each chunk carries its token's.
		logprobs *openai.Logprobs
	)
	if r.method == "chat" {
		job, err := b.chatJob(m, s.ContextLength(), r)
		if err != nil {
			return nil, err
		}
		prompt, opts, calls, grammarField, replyPrefix = job.Prompt, job.Options, job.Calls, job.GrammarParam, job.ReplyPrefix
		logprobs = openai.NewLogprobs(job, m)
	} else {
		if prompt, err = m.TextPrompt(r.prompt, false); err != nil {
			return nil, err
		}
		if opts.Constraint, err = b.grammarsOf(m).FormatGrammar(r.format); err != nil {
			return nil, err
		}
		if r.format.Grammar != "" {
			grammarField = "grammar"
		} else if opts.Constraint != nil {
			grammarField = "response_format"
		}
	}
	ids := prompt.Tokens

	y := b.newYielder()
	defer y.close()
	prev := -1 // the token before the one being delivered, for trace texts
	if len(ids) > 0 {
		prev = ids[len(ids)-1]
	}
	n := 0
	where := r.method + " onToken"
	// A chat's chunks also say which part of their text is reasoning and
	// which content; with tools, the content that may be a call is held
	// back, and the calls come with the last chunk.
	var split *openai.ReplyStream
	if r.method == "chat" {
		split = openai.NewReplyStream(calls, replyPrefix)
	}
	onToken := func(t engine.Token) error {
		n++
		if b.tokenHook != nil {
			b.tokenHook(n)
		}
		logprobs.Add(t)
		if typeOf(r.onToken) == js.TypeFunction {
			c := b.chunk(t, prev, m.Tokenizer())
			if logprobs != nil && t.Logprobs != nil {
				c.Set("logprobs", plain(logprobs.Last()))
			}
			if split != nil {
				reasoning, content := split.Write(t.Text)
				setReply(c, reasoning, content)
				c.Set("deltas", plain(openai.Deltas(reasoning, content)))
			}
			if err := b.recovered(where, func() error { r.onToken.Invoke(c); return nil }); err != nil {
				return err
			}
		}
		if t.ID >= 0 {
			prev = t.ID
		}
		// The chunk is already on its way (postMessage does not wait for the
		// event loop); yielding lets the host run its queued tasks, such as
		// the message that aborts this generation.
		y.yield()
		return nil
	}
	// A long prompt takes many forward passes before the first token: yield
	// during it too (every promptYieldInterval), so an abort still arrives.
	lastYield := time.Now()
	opts.PromptProgress = func(done, total int) {
		if typeOf(r.onPromptProgress) == js.TypeFunction {
			// A callback that throws does not stop the generation.
			_ = b.recovered(r.method+" onPromptProgress", func() error {
				r.onPromptProgress.Invoke(map[string]any{"done": done, "total": total})
				return nil
			})
		}
		if time.Since(lastYield) >= promptYieldInterval {
			y.yield()
			lastYield = time.Now()
		}
	}
	if split != nil && typeOf(r.onToken) == js.TypeFunction {
		// The request is a valid job: a first chunk with no text says so
		// before the prompt is evaluated, as an HTTP response's status
		// comes before its events, so that the page's streamed
		// chat.completions.create resolves (or rejects) as a client of
		// the HTTP API does.
		c := b.object.New()
		c.Set("text", "")
		c.Set("token", -1)
		setReply(c, "", "")
		c.Set("deltas", []any{})
		if err := b.recovered(where, func() error { r.onToken.Invoke(c); return nil }); err != nil {
			return nil, err
		}
	}
	exchange := b.exchangeStats()
	res, err := s.GeneratePrompt(ctx, prompt, opts, onToken)
	if err != nil {
		return nil, policy.GrammarFailed(err, grammarField)
	}
	if split != nil && typeOf(r.onToken) == js.TypeFunction {
		// What the parsers still held: a last chunk with no text of its own.
		reasoning, content, rest, toolCalls := split.Finish(res.FinishReason)
		content += rest
		if reasoning != "" || content != "" || len(toolCalls) > 0 {
			c := b.object.New()
			c.Set("text", "")
			c.Set("token", -1)
			setReply(c, reasoning, content)
			if len(toolCalls) > 0 {
				c.Set("toolCalls", callsValue(toolCalls))
			}
			c.Set("deltas", plain(append(openai.Deltas(reasoning, content), openai.CallDeltas(toolCalls)...)))
			if err := b.recovered(where, func() error { r.onToken.Invoke(c); return nil }); err != nil {
				return nil, err
			}
		}
	}
	v := resultValue(res, opts.Sampling.Seed, y.spent)
	if r.method == "chat" {
		reply, err := openai.ParseReply(replyPrefix+res.Text, calls, res.FinishReason)
		if err != nil {
			return nil, err
		}
		v["reasoning"], v["content"] = reply.Reasoning, reply.Content
		if calls != nil {
			v["toolCalls"] = callsValue(reply.ToolCalls)
		}
		setChoice(v, reply, res.FinishReason)
		v["choice"].(map[string]any)["logprobs"] = plain(logprobs.Chat())
		// The completion's llama.cpp-style timings, as httpapi's.
		v["completionTimings"] = plain(openai.TimingsOf(res.Timings, queued))
	}
	exchange.since(v)
	return v, nil
}

// resetSession drops s, if it is still the binding's session or an opened
// one's (sessions_js.go): the next call makes a new session of the same
// model and context.
func (b *Binding) resetSession(s *engine.Session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.session == s {
		b.session, b.shardSes = nil, nil
	}
	for id, t := range b.extra.open {
		if t == s {
			b.extra.open[id] = nil
		}
	}
}

// watchAbort cancels when signal (an AbortSignal, or undefined) aborts. The
// returned function stops watching and releases the listener.
func (b *Binding) watchAbort(signal js.Value, cancel context.CancelFunc) (unwatch func()) {
	if signal.IsUndefined() {
		return func() {}
	}
	if b.get(signal, "aborted").Truthy() {
		cancel()
		return func() {}
	}
	listener := b.funcOf(func(js.Value, []js.Value) any {
		cancel()
		return nil
	})
	signal.Call("addEventListener", "abort", listener)
	return func() {
		signal.Call("removeEventListener", "abort", listener)
		b.release(listener)
	}
}

// setChoice sets a chat result's choice: OpenAI's message and
// finish_reason of reply, whose generation ended for finish
// (openai.Reply.Message), which chat.completions.create answers with.
func setChoice(result map[string]any, reply openai.Reply, finish engine.FinishReason) {
	msg, reason := reply.Message(openai.FinishReason(finish))
	result["choice"] = map[string]any{"message": plain(msg), "finish_reason": reason}
}

// plain is v (a shape of package openai) as JavaScript takes it: its JSON
// form as maps, slices, strings and numbers, under its JSON names. v is
// the bridge's own value: it always encodes.
func plain(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(raw, &out) != nil {
		return nil
	}
	return out
}

// setReply sets a chat chunk's reasoning and content: the parts of the
// reply's text that this chunk makes final, reasoning ("<think>...</think>")
// and content apart, as chat.ReasoningParser releases them.
func setReply(c js.Value, reasoning, content string) {
	c.Set("reasoning", reasoning)
	c.Set("content", content)
}

// chunk is what onToken receives: {text, token, trace?} (a chat's also has
// reasoning, content and deltas); token is -1 for text released at the end that
// belongs to no single token.
func (b *Binding) chunk(t engine.Token, prev int, tok tokenizer.Tokenizer) js.Value {
	c := b.object.New()
	c.Set("text", t.Text)
	c.Set("token", t.ID)
	if t.Trace != nil {
		c.Set("trace", traceValue(t.Trace, prev, tok))
	}
	return c
}

// traceValue describes how a token was chosen: the most likely candidates
// with their probability from the model (prob), after temperature
// (probTemp) and after top-k, top-p and min-p (probFinal).
func traceValue(tr *sampling.Trace, prev int, tok tokenizer.Tokenizer) any {
	top := make([]any, tr.N)
	for i, e := range tr.Top[:tr.N] {
		top[i] = map[string]any{
			"id": e.ID, "text": pieceText(tok, prev, e.ID), "logit": float64(e.Logit),
			"prob": e.Prob, "probTemp": e.ProbTemp, "probFinal": e.ProbFinal,
		}
	}
	return map[string]any{
		"top": top, "kept": tr.Kept, "chosen": tr.Chosen, "chosenRank": tr.ChosenRank, "greedy": tr.Greedy,
	}
}

// pieceText is the text id adds after prev, for display; a byte-fallback
// piece that is not UTF-8 by itself shows as its vocabulary text ("<0xE2>").
func pieceText(tok tokenizer.Tokenizer, prev, id int) string {
	p := tok.AppendPiece(nil, prev, id)
	if utf8.Valid(p) {
		return string(p)
	}
	return tok.TokenText(id)
}

// ms is a duration in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// exchangeStats is where a split model's shard 0 stands in its exchanges
// before a generation (zero for a whole model), so that the result can say
// how many gathers the generation waited for, and how long.
func (b *Binding) exchangeStats() exchangeMark {
	b.mu.Lock()
	s := b.shardSes
	b.mu.Unlock()
	if s == nil {
		return exchangeMark{}
	}
	waited, gathers := s.Stats()
	return exchangeMark{s: s, waited: waited, gathers: gathers}
}

// exchangeMark is a shard session's Stats at one moment.
type exchangeMark struct {
	s       *shard.Session
	waited  time.Duration
	gathers int
}

// since sets the result's timings.exchangeMs and exchanges: the time and
// number of gathers since the mark.
func (e exchangeMark) since(result map[string]any) {
	t := result["timings"].(map[string]any)
	t["exchangeMs"], t["exchanges"] = 0.0, 0
	if e.s != nil {
		waited, gathers := e.s.Stats()
		t["exchangeMs"], t["exchanges"] = ms(waited-e.waited), gathers-e.gathers
	}
}

// resultValue is what generate, stream and chat resolve to. yieldMs is the
// time the generation spent handing control to the event loop.
func resultValue(res engine.Result, seed uint64, yielded time.Duration) map[string]any {
	t := res.Timings
	return map[string]any{
		"text":         res.Text,
		"tokens":       idsValue(res.Tokens),
		"promptTokens": idsValue(res.PromptTokens),
		"finishReason": string(res.FinishReason),
		"seed":         float64(seed),
		"usage": map[string]any{
			"promptTokens":     len(res.PromptTokens),
			"completionTokens": len(res.Tokens),
			"totalTokens":      len(res.PromptTokens) + len(res.Tokens),
			// A context shift's (chat's context_shift).
			"contextShifts":        res.Shifts,
			"contextShiftedTokens": res.ShiftedTokens,
		},
		"timings": map[string]any{
			"timeToFirstTokenMs":     ms(t.TimeToFirstToken),
			"prefillMs":              ms(t.Prefill),
			"prefillTokens":          t.PrefillTokens,
			"prefillTokensPerSecond": t.PrefillTokensPerSecond(),
			"decodeMs":               ms(t.Decode),
			"decodeTokens":           t.DecodeTokens,
			"decodeTokensPerSecond":  t.DecodeTokensPerSecond(),
			"yieldMs":                ms(yielded),
		},
	}
}

// callsValue is tool calls for JavaScript: [{id, name, arguments}] (the
// page answers with OpenAI's shapes of them, the result's choice and the
// chunks' deltas).
func callsValue(calls []chat.ToolCall) []any {
	out := make([]any, len(calls))
	for i, c := range calls {
		out[i] = map[string]any{"id": c.ID, "name": c.Name, "arguments": c.Arguments}
	}
	return out
}
