package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wasmlm/wasmlm/sampling"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// FinishReason says why a generation ended.
type FinishReason string

// The reasons a generation ends.
const (
	FinishStop    FinishReason = "stop"    // end-of-generation token, BOS, or a stop string
	FinishLength  FinishReason = "length"  // MaxTokens generated
	FinishContext FinishReason = "context" // the context window is full
	FinishAbort   FinishReason = "abort"   // the context was cancelled or the callback failed
)

// Limits on stop strings, so a request cannot make every token expensive.
const (
	maxStopStrings = 16
	maxStopBytes   = 256
)

// GenerateOptions configure one generation. The zero value generates
// greedily until an end-of-generation token or a full context.
type GenerateOptions struct {
	// MaxTokens caps the generated tokens; 0 means no cap but the context.
	MaxTokens int
	// Sampling chooses each token (zero value: greedy).
	Sampling sampling.Params
	// Stop strings end the generation; the text returned stops before the
	// first occurrence and never shows any part of it.
	Stop []string
	// StopTokens end the generation like the vocabulary's end-of-generation
	// tokens do (chat templates' end-of-turn markers).
	StopTokens []int
	// ParseSpecial turns special-token text in the prompt (such as "<s>" or
	// a chat template's "<|im_start|>") into those tokens.
	ParseSpecial bool
	// Trace asks for each token's sampling trace (Token.Trace): the top
	// candidates and what each sampling stage made of them.
	Trace bool
	// Logprobs asks for each token's log-probability under the model and
	// those of the TopLogprobs (0 to MaxTopLogprobs) most likely tokens
	// (Token.Logprobs): the log-softmax of the raw logits, before the
	// sampling chain and a Constraint shape them.
	Logprobs    bool
	TopLogprobs int
	// Constraint, when set, holds the generated text to a language (a
	// grammar: see package policy): before each token, every token that
	// cannot continue a text it matches is banned, ahead of the sampling
	// chain, and the end-of-generation tokens (and StopTokens) are allowed
	// only where the text so far is a whole match. A text that is a whole
	// match no token can extend ends the generation (FinishStop). Near
	// MaxTokens or the end of the context the text is steered to a whole
	// match, but the limit still ends it with FinishLength (or
	// FinishContext), as llama.cpp's server and OpenAI say: the model did
	// not choose to end there. Only a text no token could extend when the
	// limit comes ends with FinishStop.
	Constraint Constraint
	// PromptProgress, if set, is called after each block of prompt tokens
	// is evaluated (SessionOptions.PromptBlock; a cancelled context stops
	// the prefill between blocks) with the number evaluated so far and the
	// number to evaluate (cached tokens are not counted). Hosts use it to report progress on long prompts
	// and, in a browser, to yield to the event loop so an abort can arrive.
	PromptProgress func(evaluated, total int)
	// ContextShift, for a model whose sessions can shift
	// (Model.ShiftSupport), goes on past a full context as llama.cpp's
	// server does: it keeps the first ShiftKeep cached tokens, drops the
	// oldest half of the rest (Session.Shift: no re-evaluation) and
	// continues; a prompt longer than the context is cut the same way
	// before it is evaluated, by as many such halves as it needs, so that
	// the next turn's prompt, cut alike, meets the cached prefix. It needs
	// MaxTokens (a shifting generation has no other end but a stop). For a
	// model that cannot shift it changes nothing: the generation ends with
	// FinishContext, and a prompt too long is ErrPromptTooLong.
	ContextShift bool
	// ShiftKeep is how many tokens at the start of the context a shift
	// keeps, BOS included (the hosts add the BOS to the n_keep they are
	// given, as llama.cpp does): 0 keeps none. At most the prompt's tokens
	// and the context less 4 are kept (llama.cpp's bounds), so a shift
	// never keeps generated tokens.
	ShiftKeep int
}

// DefaultGenerateOptions are the options of a generation whose caller left
// them out, in every host that takes options from people: the CLI's flag
// defaults and the JS API's, so that a page and `wasmlm generate` given the
// same seed write the same text. (The zero GenerateOptions is greedy and
// unbounded, for code that sets what it wants; the HTTP API follows
// OpenAI's defaults instead.)
func DefaultGenerateOptions() GenerateOptions {
	return GenerateOptions{
		MaxTokens: 256,
		Sampling:  sampling.Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1},
	}
}

// Token is one generated token as the callback receives it.
type Token struct {
	// ID is the token id, or -1 for text released when the generation ends
	// that was held back after the last token (an unfinished UTF-8 sequence or
	// a possible stop-string prefix).
	ID int
	// Text is the text this token makes final: possibly empty (held back),
	// possibly including text held back from earlier tokens.
	Text string
	// Trace is how the token was chosen, when GenerateOptions.Trace is set
	// (nil otherwise, and for ID -1). It is reused: valid during the callback only.
	Trace *sampling.Trace
	// Logprobs is the token's log-probability and its alternatives', when
	// GenerateOptions.Logprobs is set (nil otherwise, and for ID -1). It
	// is reused: valid during the callback only.
	Logprobs *Logprobs
}

// TokenFunc receives each token as soon as it is sampled. Returning an error
// aborts the generation; Generate then returns that error.
type TokenFunc func(Token) error

// Timings measure one generation.
type Timings struct {
	TimeToFirstToken time.Duration // from the call to the first sampled token
	Prefill          time.Duration // evaluating the prompt
	PrefillTokens    int           // prompt tokens evaluated (cached ones are skipped)
	Decode           time.Duration // from the first sampled token to the end
	DecodeTokens     int           // tokens generated after the first
}

// PrefillTokensPerSecond is the prompt evaluation rate (0 when nothing was evaluated).
func (t Timings) PrefillTokensPerSecond() float64 { return rate(t.PrefillTokens, t.Prefill) }

// DecodeTokensPerSecond is the generation rate after the first token.
func (t Timings) DecodeTokensPerSecond() float64 { return rate(t.DecodeTokens, t.Decode) }

func rate(n int, d time.Duration) float64 {
	if n == 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Result is the outcome of a generation.
type Result struct {
	Text         string       // the generated text (the prompt excluded)
	Tokens       []int        // generated ids, without a final end-of-generation token
	PromptTokens []int        // the prompt's ids, with BOS if the vocabulary adds it
	FinishReason FinishReason //
	Timings      Timings
	// Shifts is how many times GenerateOptions.ContextShift shifted the
	// context (a prompt cut to fit counts one), and ShiftedTokens how many
	// tokens they dropped in all.
	Shifts, ShiftedTokens int
}

// GenerateTokens evaluates the prompt ids and generates tokens until a stop
// condition, calling onToken (which may be nil) for every generated token as
// soon as it is sampled. Cancelling ctx ends the generation with FinishAbort
// and no error. Invalid options are an *OptionError; a prompt that does not
// fit in the context is an error wrapping ErrPromptTooLong. A prompt that
// extends the session's previous one evaluates only the new tokens.
func (s *Session) GenerateTokens(ctx context.Context, prompt []int, opts GenerateOptions, onToken TokenFunc) (res Result, err error) {
	start := time.Now()
	if !s.mu.TryLock() {
		return Result{}, ErrBusy
	}
	defer s.mu.Unlock()

	m := s.model
	if err := opts.Validate(m.config.VocabSize); err != nil {
		return Result{}, err
	}
	res = Result{PromptTokens: append([]int(nil), prompt...)}
	shifts := opts.ContextShift && s.dev == nil && m.ShiftSupport() == nil
	// A shift keeps at most the prompt: never the generated tokens.
	opts.ShiftKeep = min(opts.ShiftKeep, len(prompt))
	if shifts && len(prompt) > s.context {
		prompt = s.cutPrompt(prompt, opts.ShiftKeep, &res)
	}
	if err := s.checkPrompt(prompt); err != nil {
		return Result{}, err
	}
	sampler, err := sampling.New(opts.Sampling, m.config.VocabSize)
	if err != nil {
		return Result{}, err
	}
	// The parts of a split model check that they can work together, and
	// whether their caches still hold this session's positions.
	forget, err := s.peers.Prepare()
	if err != nil {
		return res, err
	}
	if forget {
		s.tokens = s.tokens[:0]
	}

	// Prefill: reuse the cached prefix (as much as the cache can give
	// back: reusedPrefix), evaluate the rest, keep the last logits.
	first := s.reusedPrefix(prompt)
	s.tokens = s.tokens[:first]
	s.lastLogits = first == len(prompt) // kept logits (reusedPrefix)
	for pos := first; pos < len(prompt); {
		if ctx.Err() != nil {
			// The blocks evaluated so far stay in the cache: say so.
			res.FinishReason = FinishAbort
			res.Timings.Prefill, res.Timings.PrefillTokens = time.Since(start), pos-first
			return res, nil
		}
		n := min(s.promptBlock, len(prompt)-pos)
		last := pos+n == len(prompt)
		if err = s.forwardBlock(prompt[pos:pos+n], pos, last); err != nil {
			return res, err
		}
		s.tokens = append(s.tokens, prompt[pos:pos+n]...)
		pos += n
		if opts.PromptProgress != nil {
			opts.PromptProgress(pos-first, len(prompt)-first)
		}
	}
	s.lastLogits = true
	res.Timings.Prefill = time.Since(start)
	res.Timings.PrefillTokens = len(prompt) - first
	for _, id := range prompt {
		sampler.Accept(id)
	}

	g := generation{
		session: s, opts: opts, onToken: onToken, res: &res,
		decoder: tokenizer.NewStreamDecoder(m.tokenizer),
		stop:    newStopMatcher(opts.Stop),
		grammar: s.newConstraint(opts),
		shifts:  shifts,
	}
	if opts.Logprobs {
		g.logprobs = &logprobState{n: opts.TopLogprobs}
	}
	g.reserve(len(prompt))
	g.decoder.SetPrevious(prompt[len(prompt)-1])
	err = g.run(ctx, sampler, start)
	return res, err
}

// generation is the state of one decode loop.
type generation struct {
	session *Session
	opts    GenerateOptions
	onToken TokenFunc
	res     *Result
	decoder *tokenizer.StreamDecoder
	stop    stopMatcher
	grammar *constraint     // nil without GenerateOptions.Constraint
	text    strings.Builder // everything emitted; each Token.Text is a substring of it
	piece   []byte          // a token's text plus the released rest, at the end
	tail    []byte          // the held-back text released at the end
	trace   sampling.Trace
	// logprobs computes Token.Logprobs; nil unless GenerateOptions.Logprobs.
	logprobs *logprobState
	shifts   bool // GenerateOptions.ContextShift, for a session that can shift
}

// Preallocation for a generation's text, so that streaming a token
// allocates nothing: this many bytes per token it may generate (stories and
// chat average 3 to 5), at most maxReservedText bytes; past that the text
// grows by doubling.
const (
	reservedBytesPerToken = 8
	maxReservedText       = 256 << 10
)

// reserve sizes the result's token list for every token the generation may
// produce and its text for a typical text of that many tokens, so that the
// decode loop allocates nothing per token.
func (g *generation) reserve(promptTokens int) {
	limit := g.session.context - promptTokens + 1
	if g.shifts {
		limit = g.opts.MaxTokens // Validate: > 0
	}
	if g.opts.MaxTokens > 0 {
		limit = min(limit, g.opts.MaxTokens)
	}
	limit = max(limit, 1)
	g.res.Tokens = make([]int, 0, limit)
	g.text.Grow(min(limit*reservedBytesPerToken, maxReservedText))
}

// run samples, streams and evaluates tokens until a stop condition. How the
// held-back text ends depends on why the loop ends: a stop string discards
// it; a length or context limit releases it with the last token; an
// end-of-generation token or a cancel releases it as a final Token with ID -1.
func (g *generation) run(ctx context.Context, sampler *sampling.Sampler, start time.Time) error {
	s, m, res := g.session, g.session.model, g.res
	special := m.tokenizer.Special()
	var decodeStart time.Time
	defer func() {
		if !decodeStart.IsZero() {
			res.Timings.Decode = time.Since(decodeStart)
			res.Timings.DecodeTokens = max(len(res.Tokens)-1, 0)
		}
		res.Text = g.text.String()
	}()
	for {
		if ctx.Err() != nil {
			res.FinishReason = FinishAbort
			return g.emit(-1, g.flush(), nil, nil)
		}
		if g.logprobs != nil {
			g.logprobs.observe(s.logits) // the model's logits, before the mask
		}
		done, err := g.grammar.mask(s.logits, g.budget())
		if err != nil {
			return err
		}
		if g.grammar != nil {
			s.lastLogits = false // masked in place: not the model's logits any more
		}
		if done {
			res.FinishReason = FinishStop
			return g.emit(-1, g.flush(), nil, nil)
		}
		var next int
		var trace *sampling.Trace
		if g.opts.Trace {
			next = sampler.SampleTrace(s.logits, &g.trace)
			trace = &g.trace
		} else {
			next = sampler.Sample(s.logits)
		}
		if decodeStart.IsZero() {
			decodeStart = time.Now()
			res.Timings.TimeToFirstToken = decodeStart.Sub(start)
		}
		// BOS starts a new document, so the current one is over (llama2.c
		// stops there too: its TinyStories models separate stories with BOS).
		if special.IsEndOfGeneration(next) || next == special.BOS || slices.Contains(g.opts.StopTokens, next) {
			res.FinishReason = FinishStop
			return g.emit(-1, g.flush(), nil, nil)
		}
		if err := g.grammar.accept(m, g.previous(), next); err != nil {
			return err
		}
		res.Tokens = append(res.Tokens, next)
		sampler.Accept(next)
		text, hit := g.stop.push(g.decoder.AddBytes(next))
		pos := len(s.tokens) // where next would be evaluated
		if pos == s.context && g.shifts && !hit && len(res.Tokens) != g.opts.MaxTokens && g.shift() {
			pos = len(s.tokens)
		}
		switch {
		case hit:
			res.FinishReason = FinishStop
		case len(res.Tokens) == g.opts.MaxTokens:
			res.FinishReason = FinishLength
		case pos == s.context:
			res.FinishReason = FinishContext
		}
		var lp *Logprobs
		if g.logprobs != nil {
			lp = g.logprobs.pick(s.logits[next])
		}
		if res.FinishReason != "" && !hit {
			complete, err := g.grammar.complete(s.logits)
			if err != nil {
				return err
			}
			if complete {
				// The limit came as the grammar ended: the text is a whole
				// match no token can extend, as finished as an end token
				// would have made it. A whole match that could go on (the
				// budget steers a text to one near the limit) was cut: the
				// reason stays the limit's.
				res.FinishReason = FinishStop
			}
			g.piece = append(g.piece[:0], text...)
			g.piece = append(g.piece, g.flush()...)
			text = g.piece
		}
		if err := g.emit(next, text, trace, lp); err != nil {
			return err
		}
		if res.FinishReason != "" {
			return nil
		}
		s.lastLogits = false
		if err := s.forward(next, pos, true); err != nil {
			return err
		}
		s.tokens = append(s.tokens, next)
		s.lastLogits = true
	}
}

// budget is how many tokens the generation may still write, counting the
// next one: the context's room, and MaxTokens's.
func (g *generation) budget() int {
	left := g.session.context - len(g.session.tokens)
	if g.shifts {
		left = g.opts.MaxTokens // the context shifts: only MaxTokens bounds it
	}
	if g.opts.MaxTokens > 0 {
		left = min(left, g.opts.MaxTokens-len(g.res.Tokens))
	}
	return max(left, 1)
}

// previous is the token before the one just sampled: the last one
// evaluated (the prompt's last, then each generated one), which its text
// depends on (SentencePiece drops a space after BOS).
func (g *generation) previous() int {
	return g.session.tokens[len(g.session.tokens)-1]
}

// flush releases all held-back text: incomplete UTF-8 (as U+FFFD) and a
// stop-string prefix that never completed. The bytes are valid until the
// next flush.
func (g *generation) flush() []byte {
	rest, _ := g.stop.push([]byte(g.decoder.Flush()))
	g.tail = append(g.tail[:0], rest...)
	g.tail = append(g.tail, g.stop.flush()...)
	return g.tail
}

// emit appends a token's text to the result and hands the token to the
// callback, its Text a substring of the result's text (so a token allocates
// nothing). A final token (id -1) with no text is not delivered. A callback
// error aborts.
func (g *generation) emit(id int, text []byte, trace *sampling.Trace, lp *Logprobs) error {
	if id < 0 && len(text) == 0 {
		return nil
	}
	start := g.text.Len()
	g.text.Write(text)
	if g.onToken == nil {
		return nil
	}
	if err := g.onToken(Token{ID: id, Text: g.text.String()[start:], Trace: trace, Logprobs: lp}); err != nil {
		g.res.FinishReason = FinishAbort
		return fmt.Errorf("token callback: %w", err)
	}
	return nil
}

// checkPrompt rejects prompts the session cannot evaluate.
func (s *Session) checkPrompt(prompt []int) error {
	if !s.model.Generates() {
		return errEncoder(s.model)
	}
	if len(prompt) == 0 {
		return fmt.Errorf("%w: the prompt has no tokens and the vocabulary adds no BOS", ErrEmptyPrompt)
	}
	if len(prompt) > s.context {
		return fmt.Errorf("%w: %d tokens, the context holds %d", ErrPromptTooLong, len(prompt), s.context)
	}
	vocab := s.model.config.VocabSize
	for i, id := range prompt {
		if id < 0 || id >= vocab {
			return optionError("prompt", "token %d at position %d is outside the vocabulary (0..%d)", id, i, vocab-1)
		}
	}
	return nil
}

// Validate checks the options for a model of vocabSize tokens, sampling
// included; the error is an *OptionError naming the first invalid option.
// Generations validate their options; hosts that answer before generating
// (the HTTP API refuses a bad request before it waits in the queue) call it
// themselves.
func (o GenerateOptions) Validate(vocabSize int) error {
	if o.MaxTokens < 0 {
		return optionError("max_tokens", "must be >= 0 (0: until the context is full), got %d", o.MaxTokens)
	}
	if o.ContextShift && o.MaxTokens == 0 {
		return optionError("max_tokens", "must be > 0 with context_shift: a generation that shifts its context has no other bound")
	}
	if o.ShiftKeep < 0 {
		return optionError("n_keep", "must be >= 0, got %d", o.ShiftKeep)
	}
	if o.TopLogprobs < 0 || o.TopLogprobs > MaxTopLogprobs {
		return optionError("top_logprobs", "must be in [0, %d], got %d", MaxTopLogprobs, o.TopLogprobs)
	}
	if len(o.Stop) > maxStopStrings {
		return optionError("stop", "holds at most %d stop strings, got %d", maxStopStrings, len(o.Stop))
	}
	if len(o.StopTokens) > maxStopStrings {
		return optionError("stop_tokens", "holds at most %d ids, got %d", maxStopStrings, len(o.StopTokens))
	}
	for i, st := range o.Stop {
		if st == "" || len(st) > maxStopBytes || !utf8.ValidString(st) {
			return optionError(fmt.Sprintf("stop[%d]", i), "must be valid UTF-8 of 1..%d bytes", maxStopBytes)
		}
	}
	if err := o.Sampling.Validate(vocabSize); err != nil {
		var pe *sampling.ParamError
		if errors.As(err, &pe) {
			return &OptionError{Field: pe.Field, Problem: pe.Problem, Err: err}
		}
		return err
	}
	return nil
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
