package httpapi

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/openai"
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

// job is a validated completion request (openai.Job), ready for a slot.
type job struct {
	*openai.Job
	endpoint string // for Completion.Endpoint
	id       string
	created  int64
	// responses is a /v1/responses request, answered in its shapes (a
	// Response, typed events); nil for the completion endpoints.
	responses *openai.ResponsesRequest
}

// generationError is generationError's for an error of j's generation,
// which names the field of j's grammar when it is the grammar that failed
// (openai.Job.ErrorOf).
func (j *job) generationError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return requestError(j.ErrorOf(err))
}

// newJob is the job of a request to endpoint, built by build.
func (h *Handler) newJob(endpoint, idPrefix string, build func() (*openai.Job, *openai.Error)) (*job, *apiError) {
	oj, e := build()
	if e != nil {
		return nil, requestError(e)
	}
	return &job{Job: oj, endpoint: endpoint, id: h.newID(idPrefix), created: time.Now().Unix()}, nil
}

func (h *Handler) serveCompletions(w http.ResponseWriter, r *http.Request) {
	h.serveJob(w, r, func(body []byte) (*job, *apiError) {
		if e := h.refuseKind(capCompletion); e != nil {
			return nil, e
		}
		req := openai.CompletionRequest{SamplingRequest: h.api.NewSamplingRequest()}
		if e := decodeJSON(body, &req); e != nil {
			return nil, e
		}
		return h.newJob("/v1/completions", "cmpl-", func() (*openai.Job, *openai.Error) { return h.api.CompletionJob(&req) })
	})
}

func (h *Handler) serveChatCompletions(w http.ResponseWriter, r *http.Request) {
	h.serveJob(w, r, func(body []byte) (*job, *apiError) {
		if e := h.refuseKind(capCompletion); e != nil {
			return nil, e
		}
		req := openai.ChatRequest{SamplingRequest: h.api.NewSamplingRequest()}
		if e := decodeJSON(body, &req); e != nil {
			return nil, e
		}
		return h.newJob("/v1/chat/completions", "chatcmpl-", func() (*openai.Job, *openai.Error) { return h.api.ChatJob(&req) })
	})
}

// serveJob serves a completion request: build makes its body a job (in
// prepare), which then waits for a slot and runs.
func (h *Handler) serveJob(w http.ResponseWriter, r *http.Request, build func(body []byte) (*job, *apiError)) {
	if j, leave, ok := prepareJob(h, w, r, build); ok {
		defer leave()
		h.run(w, r, j, leave)
	}
}

// prepareJob makes r's body a job with build, in prepare. When that fails
// it answers the error; when the client leaves while its request waits to
// be prepared it reports the request dropped; then ok is false. When ok,
// the request still holds its preparation place: leave (see prepare) gives
// it up, and takeSlot calls it once the request is in the slot line.
func prepareJob[J any](h *Handler, w http.ResponseWriter, r *http.Request, build func(body []byte) (J, *apiError)) (j J, leave func(), ok bool) {
	start := time.Now()
	leave, err := h.prepare(w, r, func(body []byte) (e *apiError) {
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
		return j, leave, true
	}
	return j, leave, false
}

// takeSlot waits for a slot for c's request, and returns its session and
// the context to run the request in (see scheduler.acquire). It joins the
// slot line, then calls leave (the request's preparation place: see
// prepare), then waits. When it gets none it answers (503: the queue is
// full, or the server is shutting down) or, if the client left, answers
// nothing; it reports the request and ok is false.
func (h *Handler) takeSlot(ctx context.Context, w http.ResponseWriter, c *Completion, leave func()) (runCtx context.Context, sess *engine.Session, ok bool) {
	start := time.Now()
	wait := h.sched.join(ctx)
	leave()
	runCtx, sess, err := wait()
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

// run reserves the most the job can use (its prompt and max_tokens: see
// limitTokens), waits for a slot (leaving its preparation place once in
// the slot line: see takeSlot), generates, answers, and is charged the
// prompt and the tokens generated.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, j *job, leave func()) {
	held, e := h.reserve(r, len(j.Prompt.Tokens)+j.Options.MaxTokens)
	if e != nil {
		writeError(w, e)
		return
	}
	ctx, stopped, release := h.generationContext(r)
	defer release()
	c := Completion{Endpoint: j.endpoint, Stream: j.Stream, PromptTokens: len(j.Prompt.Tokens)}
	ctx, sess, ok := h.takeSlot(ctx, w, &c, leave)
	if !ok {
		held.settle(0)
		return
	}
	// The slot is free again as soon as the generation ends, before the
	// last bytes reach a slow client.
	gen := func(onToken engine.TokenFunc) (engine.Result, error) {
		defer h.sched.release(ctx, sess)
		return h.generate(ctx, sess, j.Prompt, j.Options, onToken)
	}
	var (
		res engine.Result
		err error
	)
	if j.Stream {
		res, err = h.stream(ctx, w, gen, j, c.Queued, stopped)
	} else {
		res, err = h.complete(w, gen, j, c.Queued, stopped)
	}
	c.CompletionTokens, c.FinishReason, c.Timings, c.Err = len(res.Tokens), res.FinishReason, res.Timings, err
	held.settle(c.PromptTokens + c.CompletionTokens)
	h.onComplete(c)
}

// complete answers with one JSON response once the generation is over.
// stopped says whether an abort was Shutdown's.
func (h *Handler) complete(w http.ResponseWriter, gen func(engine.TokenFunc) (engine.Result, error), j *job, queued time.Duration, stopped func() bool) (engine.Result, error) {
	lp := openai.NewLogprobs(j.Job, h.api.Model)
	var onToken engine.TokenFunc
	if lp != nil {
		onToken = func(t engine.Token) error { lp.Add(t); return nil }
	}
	res, err := gen(onToken)
	switch {
	case err != nil:
		writeError(w, j.generationError(err))
		return res, err
	case res.FinishReason == engine.FinishAbort && stopped():
		writeError(w, stoppedError(res))
		return res, ErrShuttingDown
	case res.FinishReason == engine.FinishAbort:
		return res, nil // the client left: nobody to answer
	}
	if j.responses != nil {
		writeJSON(w, http.StatusOK, openai.NewResponse(j.id, j.created, h.name, j.responses.Echo(), j.parallel(), j.Calls, j.ReplyPrefix, res, lp))
		return res, nil
	}
	c := openai.NewCompletion(j.id, j.created, h.name, j.Chat, j.Calls, j.ReplyPrefix, res, queued)
	c.SetLogprobs(lp)
	writeJSON(w, http.StatusOK, c)
	return res, nil
}

// stream answers with Server-Sent Events: one content chunk per token as
// soon as it is sampled. The response starts with the first token, so an
// error before it (a stop string the engine refuses, say) is still an
// ordinary error response; an error after it is an "error" event. stopped
// says whether an abort was Shutdown's.
func (h *Handler) stream(ctx context.Context, w http.ResponseWriter, gen func(engine.TokenFunc) (engine.Result, error), j *job, queued time.Duration, stopped func() bool) (engine.Result, error) {
	s := &eventStream{w: w, rc: http.NewResponseController(w)}
	lp := openai.NewLogprobs(j.Job, h.api.Model)
	if j.responses != nil {
		s.events = openai.NewResponseStream(j.id, j.created, h.name, j.responses.Echo(), j.parallel(), j.Calls, j.ReplyPrefix)
		s.events.SetLogprobs(lp)
	} else {
		s.chunks = openai.NewStream(j.id, j.created, h.name, j.Chat, j.IncludeUsage, j.Calls, j.ReplyPrefix)
		s.chunks.SetLogprobs(lp)
	}
	onToken := func(t engine.Token) error {
		lp.Add(t)
		if t.Text == "" {
			return nil // held back (part of a character or of a stop string): nothing to show yet
		}
		return s.token(t.Text)
	}
	res, err := gen(onToken)
	switch {
	case res.FinishReason == engine.FinishAbort && stopped() && s.err == nil:
		if s.started {
			s.fail(stoppedStreamError(res, s.sent))
		} else {
			writeError(w, stoppedError(res))
		}
		return res, ErrShuttingDown
	case err != nil && (ctx.Err() != nil || s.err != nil):
		return res, nil // the client left (FinishAbort): nobody to tell, nothing failed
	case err != nil && !s.started:
		writeError(w, j.generationError(err))
		return res, err
	case err != nil:
		s.fail(j.generationError(err))
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

// stoppedStreamError is the error event ending a stream that Shutdown
// stopped after chunks chunks. It counts the tokens and the chunks apart:
// they differ (a chat's role chunk, tokens whose text is held back, the
// held-back text released when the generation stops).
func stoppedStreamError(res engine.Result, chunks int) *apiError {
	return shuttingDown(fmt.Sprintf("The server is shutting down: the generation was stopped after %d tokens, sent in %d chunks. Retry later.", len(res.Tokens), chunks))
}
