package httpapi

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/openai"
	"github.com/wasmlm/wasmlm/policy"
)

// generateFunc runs one generation on a session. It is a Handler field so
// that tests can stand in a generation they control (one that blocks, fails
// or panics half-way); runSession is the real one.
type generateFunc func(ctx context.Context, s *engine.Session, prompt engine.Prompt, opts engine.GenerateOptions, onToken engine.TokenFunc) (engine.Result, error)

// runSession generates on s, turning a panic into an error.
func runSession(ctx context.Context, s *engine.Session, prompt engine.Prompt, opts engine.GenerateOptions, onToken engine.TokenFunc) (res engine.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrPanic, p)
		}
	}()
	return s.GeneratePrompt(ctx, prompt, opts, onToken)
}

// randomID is a response id: prefix and 26 random base32 characters.
func randomID(prefix string) string { return prefix + rand.Text() }

// job is a validated completion request, ready for a slot.
type job struct {
	endpoint     string // for Completion.Endpoint
	chat         bool   // chat completion (else text completion)
	prompt       engine.Prompt
	promptParam  string // the request field errors about the prompt name
	opts         engine.GenerateOptions
	stream       bool
	includeUsage bool
	id           string
	created      int64
	// calls, for a chat reply that may call tools, says how to read the
	// calls out of it; nil: the reply is text.
	calls *openai.Calls
}

func (h *Handler) serveCompletions(w http.ResponseWriter, r *http.Request) {
	h.serveJob(w, r, func(body []byte) (*job, *apiError) {
		if e := h.refuseKind(capCompletion); e != nil {
			return nil, e
		}
		req := completionRequest{samplingRequest: h.newSamplingRequest()}
		if e := decodeJSON(body, &req); e != nil {
			return nil, e
		}
		return h.completionJob(&req)
	})
}

func (h *Handler) serveChatCompletions(w http.ResponseWriter, r *http.Request) {
	h.serveJob(w, r, func(body []byte) (*job, *apiError) {
		if e := h.refuseKind(capCompletion); e != nil {
			return nil, e
		}
		req := chatRequest{samplingRequest: h.newSamplingRequest()}
		if e := decodeJSON(body, &req); e != nil {
			return nil, e
		}
		return h.chatJob(&req)
	})
}

// serveJob serves a completion request: build makes its body a job (in
// prepare), which then waits for a slot and runs.
func (h *Handler) serveJob(w http.ResponseWriter, r *http.Request, build func(body []byte) (*job, *apiError)) {
	if j, ok := prepareJob(h, w, r, build); ok {
		h.run(w, r, j)
	}
}

// prepareJob makes r's body a job with build, in prepare. When that fails
// it answers the error; when the client leaves while its request waits to
// be prepared it reports the request dropped; then ok is false.
func prepareJob[J any](h *Handler, w http.ResponseWriter, r *http.Request, build func(body []byte) (J, *apiError)) (j J, ok bool) {
	start := time.Now()
	err := h.prepare(w, r, func(body []byte) (e *apiError) {
		j, e = build(body)
		return e
	})
	var e *apiError
	switch {
	case errors.As(err, &e):
		writeError(w, e)
	case err != nil:
		h.onComplete(Completion{Endpoint: r.URL.Path, Dropped: true, Queued: time.Since(start), FinishReason: engine.FinishAbort})
	default:
		return j, true
	}
	return j, false
}

// takeSlot waits for a slot for c's request, and returns its session and
// the context to run the request in (see scheduler.acquire). When it gets
// none it answers (503: the queue is full, or the server is shutting down)
// or, if the client left, answers nothing; it reports the request and ok is
// false.
func (h *Handler) takeSlot(ctx context.Context, w http.ResponseWriter, c *Completion) (runCtx context.Context, sess *engine.Session, ok bool) {
	start := time.Now()
	runCtx, sess, err := h.sched.acquire(ctx)
	c.Queued = time.Since(start)
	switch {
	case errors.Is(err, ErrQueueFull), errors.Is(err, ErrShuttingDown):
		c.Err = err
		writeError(w, h.refusal(err))
	case err != nil:
		c.Dropped, c.FinishReason = true, engine.FinishAbort
	default:
		return runCtx, sess, true
	}
	h.onComplete(*c)
	return nil, nil, false
}

// newSamplingRequest is what a request's shared fields are decoded into:
// it knows how many logit_bias entries to take.
func (h *Handler) newSamplingRequest() samplingRequest {
	return samplingRequest{LogitBias: logitBias{limit: h.model.Config().VocabSize}}
}

// newJob validates what both endpoints share.
func (h *Handler) newJob(req *samplingRequest, endpoint, promptParam, idPrefix string) (*job, *apiError) {
	params, e := req.sampling()
	if e != nil {
		return nil, e
	}
	j := &job{
		endpoint: endpoint, promptParam: promptParam,
		opts:   engine.GenerateOptions{Sampling: params, Stop: slices.Clip([]string(req.Stop))},
		stream: req.Stream, id: h.newID(idPrefix), created: time.Now().Unix(),
	}
	// Refused now, not after a wait in the queue.
	if err := j.opts.Validate(h.model.Config().VocabSize); err != nil {
		return nil, generationError(err, promptParam)
	}
	j.includeUsage = req.Stream && req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	return j, nil
}

// completionJob validates a /v1/completions request and tokenizes its
// prompt (with BOS, as the CLI does; special-token text is kept as text).
func (h *Handler) completionJob(req *completionRequest) (*job, *apiError) {
	j, e := h.newJob(&req.samplingRequest, "/v1/completions", "prompt", "cmpl-")
	if e != nil {
		return nil, e
	}
	format, e := req.responseFormat()
	if e != nil {
		return nil, e
	}
	if j.opts.Constraint, e = h.formatGrammar(format, "prompt"); e != nil {
		return nil, e
	}
	if e := stopWithGrammar(j); e != nil {
		return nil, e
	}
	text, ids, e := req.completionPrompt(h.context)
	if e != nil {
		return nil, e
	}
	if ids == nil {
		if e := h.textFits(len(text), "prompt"); e != nil {
			return nil, e
		}
		p, err := h.model.TextPrompt(text, false)
		if err != nil {
			return nil, generationError(err, "prompt")
		}
		ids = p.Tokens
	}
	vocab := h.model.Config().VocabSize
	if len(ids) == 0 {
		return nil, badRequest("prompt", "invalid_value", "prompt has no tokens")
	}
	for i, id := range ids {
		if id < 0 || id >= vocab {
			return nil, badRequest("prompt", "invalid_value", "prompt token %d at position %d is outside the vocabulary [0, %d)", id, i, vocab)
		}
	}
	j.prompt = engine.Prompt{Tokens: ids}
	return j, h.limitTokens(j, &req.samplingRequest, DefaultCompletionMaxTokens)
}

// chatJob validates a /v1/chat/completions request and formats its
// messages with the model's chat template.
func (h *Handler) chatJob(req *chatRequest) (*job, *apiError) {
	j, e := h.newJob(&req.samplingRequest, "/v1/chat/completions", "messages", "chatcmpl-")
	if e != nil {
		return nil, e
	}
	j.chat = true
	msgs, e := req.messages()
	if e != nil {
		return nil, e
	}
	opts, e := req.templateOptions()
	if e != nil {
		return nil, e
	}
	tools, e := req.toolOptions()
	if e != nil {
		return nil, e
	}
	format, e := req.responseFormat()
	if e != nil {
		return nil, e
	}
	if e := h.replyGrammar(j, tools, format); e != nil {
		return nil, e
	}
	if e := stopWithGrammar(j); e != nil {
		return nil, e
	}
	opts.Tools, opts.ToolChoice = tools.tools, tools.choice
	if j.opts.Constraint != nil {
		// The grammar holds the reply from its first token: a thinking
		// template's reasoning would not match it.
		opts.DisableThinking = true
	}
	// The template is applied twice, here to measure the text and again by
	// NewChatPrompt, which tokenizes it: a cost of the order of the text's
	// bytes, where tokenizing costs tens of times more. An error here
	// (an unknown template or role) is NewChatPrompt's to report.
	if tmpl, err := policy.ChatTemplate(h.model); err == nil {
		if text, err := tmpl.ApplyWith(msgs, true, opts); err == nil {
			if e := h.textFits(len(text), "messages"); e != nil {
				return nil, e
			}
		}
	}
	p, err := policy.NewChatPrompt(h.model, msgs, opts)
	if err != nil {
		if errors.Is(err, chat.ErrInvalidTool) {
			return nil, badRequest("tools", "invalid_value", "%v", err)
		}
		return nil, generationError(err, "messages")
	}
	j.prompt = p.Prompt
	if tools.calling() {
		j.calls = &openai.Calls{Format: p.ToolFormat, Seed: callSeed(req.Seed, j.prompt.Tokens), Parallel: tools.parallel}
	}
	return j, h.limitTokens(j, &req.samplingRequest, 0)
}

// textFits refuses, before it is tokenized, a prompt's text of n bytes that
// cannot leave room for a completion: no token stands for more than
// MaxTokenBytes bytes of text, so it takes at least n / MaxTokenBytes
// tokens. Tokenizing a megabyte takes tens of megabytes and a good part of
// a second; this takes nothing. param names the prompt ("prompt",
// "messages": the text their template makes of them).
func (h *Handler) textFits(n int, param string) *apiError {
	per := h.model.MaxTokenBytes()
	least := (n + per - 1) / per
	if least < h.context {
		return nil
	}
	return badRequest(param, "context_length_exceeded",
		"This model's maximum context length is %d tokens, and %s at least %d tokens (%d bytes of text, at most %d bytes a token): no room is left for a completion.",
		h.context, promptIs(param), least, n, per)
}

// promptIs begins a sentence about the prompt's length.
func promptIs(param string) string {
	if param == "messages" {
		return "the messages are"
	}
	return "the " + param + " is"
}

// limitTokens sets the job's MaxTokens: the request's, which must fit in the
// server's limit and in the context after the prompt, or def (0: as many as
// fit) bounded the same way. Like OpenAI, it counts prompt + completion
// against the context.
func (h *Handler) limitTokens(j *job, req *samplingRequest, def int) *apiError {
	room := h.context - len(j.prompt.Tokens)
	if room <= 0 {
		return badRequest(j.promptParam, "context_length_exceeded",
			"This model's maximum context length is %d tokens, and %s %d tokens: no room is left for a completion.",
			h.context, promptIs(j.promptParam), len(j.prompt.Tokens))
	}
	mt, name := req.requestedMaxTokens()
	switch {
	case mt == nil && def > 0:
		j.opts.MaxTokens = min(def, h.maxTokens, room)
	case mt == nil:
		j.opts.MaxTokens = min(h.maxTokens, room)
	case *mt < 1:
		return badRequest(name, "invalid_value", "%s = %d, must be >= 1", name, *mt)
	case *mt > h.maxTokens:
		return badRequest(name, "invalid_value", "%s = %d exceeds this server's limit of %d", name, *mt, h.maxTokens)
	case *mt > room:
		return badRequest(name, "context_length_exceeded",
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the %s, %d for the completion).",
			h.context, len(j.prompt.Tokens)+*mt, len(j.prompt.Tokens), j.promptParam, *mt)
	default:
		j.opts.MaxTokens = *mt
	}
	return nil
}

// run waits for a slot, generates, and answers.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, j *job) {
	ctx, stopped, release := h.generationContext(r)
	defer release()
	c := Completion{Endpoint: j.endpoint, Stream: j.stream, PromptTokens: len(j.prompt.Tokens)}
	ctx, sess, ok := h.takeSlot(ctx, w, &c)
	if !ok {
		return
	}
	// The slot is free again as soon as the generation ends, before the
	// last bytes reach a slow client.
	gen := func(onToken engine.TokenFunc) (engine.Result, error) {
		defer h.sched.release(sess)
		return h.generate(ctx, sess, j.prompt, j.opts, onToken)
	}
	var (
		res engine.Result
		err error
	)
	if j.stream {
		res, err = h.stream(ctx, w, gen, j, c.Queued, stopped)
	} else {
		res, err = h.complete(w, gen, j, c.Queued, stopped)
	}
	c.CompletionTokens, c.FinishReason, c.Timings, c.Err = len(res.Tokens), res.FinishReason, res.Timings, err
	h.spend(r, c.PromptTokens+c.CompletionTokens)
	h.onComplete(c)
}

// complete answers with one JSON response once the generation is over.
// stopped says whether an abort was Shutdown's.
func (h *Handler) complete(w http.ResponseWriter, gen func(engine.TokenFunc) (engine.Result, error), j *job, queued time.Duration, stopped func() bool) (engine.Result, error) {
	res, err := gen(nil)
	switch {
	case err != nil:
		writeError(w, generationError(err, j.promptParam))
		return res, err
	case res.FinishReason == engine.FinishAbort && stopped():
		writeError(w, stoppedError(res))
		return res, ErrShuttingDown
	case res.FinishReason == engine.FinishAbort:
		return res, nil // the client left: nobody to answer
	}
	writeJSON(w, http.StatusOK, openai.NewCompletion(j.id, j.created, h.name, j.chat, j.calls, res, queued))
	return res, nil
}

// stream answers with Server-Sent Events: one content chunk per token as
// soon as it is sampled. The response starts with the first token, so an
// error before it (a stop string the engine refuses, say) is still an
// ordinary error response; an error after it is an "error" event. stopped
// says whether an abort was Shutdown's.
func (h *Handler) stream(ctx context.Context, w http.ResponseWriter, gen func(engine.TokenFunc) (engine.Result, error), j *job, queued time.Duration, stopped func() bool) (engine.Result, error) {
	s := &eventStream{w: w, rc: http.NewResponseController(w), chunks: openai.NewStream(j.id, j.created, h.name, j.chat, j.includeUsage, j.calls)}
	onToken := func(t engine.Token) error {
		if t.Text == "" {
			return nil // held back (part of a character or of a stop string): nothing to show yet
		}
		return s.token(t.Text)
	}
	res, err := gen(onToken)
	switch {
	case res.FinishReason == engine.FinishAbort && stopped() && s.err == nil:
		if s.started {
			s.fail(stoppedError(res))
		} else {
			writeError(w, stoppedError(res))
		}
		return res, ErrShuttingDown
	case err != nil && (ctx.Err() != nil || s.err != nil):
		return res, nil // the client left (FinishAbort): nobody to tell, nothing failed
	case err != nil && !s.started:
		writeError(w, generationError(err, j.promptParam))
		return res, err
	case err != nil:
		s.fail(generationError(err, j.promptParam))
		return res, err
	case res.FinishReason == engine.FinishAbort:
		return res, nil
	}
	s.finish(res, queued)
	return res, nil
}

// stoppedError is the answer to a request whose generation Shutdown stopped.
func stoppedError(res engine.Result) *apiError {
	return shuttingDown(fmt.Sprintf("The server is shutting down: the generation was stopped after %d tokens. Retry later.", len(res.Tokens)))
}
