package jsbridge

import (
	"encoding/json"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/openai"
)

// A chat is OpenAI's chat completion request, as the page's
// chat.completions.create sends it: the request body's JSON text, which
// package openai decodes, checks and makes a job of (openai.API.ChatJob)
// exactly as the HTTP API does — the same fields, defaults (OpenAI's:
// temperature 1, top_p 1, as many tokens as the context holds), grammar,
// tools and errors — so that the same request with the same seed gives the
// same tokens in the page and over HTTP. The bridge adds only what a page
// needs: a seed drawn from crypto.getRandomValues when the request has none
// (a seed JavaScript holds exactly, which the result reports).

// chatFields are the keys of chat's options: what the page adds to the
// request, which is not part of it: its signal, and load's contextShift
// default (contextShift, nKeep: context_shift and n_keep for a request
// that omits them; see openai.API.ContextShift), and the session it runs
// in (sessions_js.go).
var chatFields = []string{"signal", "contextShift", "nKeep", "session"}

// parseChat reads chat's request (a JSON string) and options into r. The
// request is decoded when its turn comes, with the model then loaded; here
// only its seed is read, for the result of a chat aborted before its turn.
func (b *Binding) parseChat(args []js.Value, r *request) error {
	body, err := b.str(arg(args, 0), "request")
	if err != nil {
		return err
	}
	r.body = []byte(body)
	f, err := b.readFields(arg(args, 1), "options", chatFields)
	if err != nil {
		return err
	}
	if r.signal, err = f.signal(); err != nil {
		return err
	}
	if r.session, err = f.session(); err != nil {
		return err
	}
	if r.opts.ContextShift, err = f.boolean("contextShift", false); err != nil {
		return err
	}
	if r.opts.ShiftKeep, err = f.integer("nKeep", 0, -1, maxInt32, ">= -1 (-1: the whole prompt)"); err != nil {
		return err
	}
	r.opts.Sampling.Seed = uint64(b.randomSeed())
	var given struct {
		Seed *int64 `json:"seed"`
	}
	if json.Unmarshal(r.body, &given) == nil && given.Seed != nil {
		r.opts.Sampling.Seed = uint64(*given.Seed)
	}
	r.onPromptProgress = js.Undefined()
	return nil
}

// contextHint ends the error of a chat completion (lm.chat.completions,
// lm.serve) whose prompt leaves no room for a reply: the page chose the
// context when it loaded the model.
const contextHint = "Load the model with a longer contextLength."

// chatJob decodes r's request and makes it a job for m and a session of
// contextLength tokens, as httpapi does; a request without a seed takes
// the one parseChat drew. The page sets no limit of its own on max_tokens:
// it must fit in the context after the prompt, unless the request shifts
// its context (then it is what bounds the generation).
func (b *Binding) chatJob(m *engine.Model, contextLength int, r *request) (*openai.Job, error) {
	api := openai.API{Model: m, Grammars: b.grammarsOf(m), Context: contextLength,
		ContextShift: r.opts.ContextShift, NKeep: r.opts.ShiftKeep, ContextHint: contextHint}
	req := openai.ChatRequest{SamplingRequest: api.NewSamplingRequest()}
	if e := openai.Decode(r.body, &req); e != nil {
		return nil, e
	}
	if req.Seed == nil {
		seed := int64(r.opts.Sampling.Seed)
		req.Seed = &seed
	}
	job, e := api.ChatJob(&req)
	if e != nil {
		return nil, e
	}
	return job, nil
}

// openaiError makes an OpenAI error object a JavaScript Error: its message
// (after "wasmlm: invalid argument: " for a bad request), param and field
// (the request field at fault, as OpenAI names it; absent when the request
// as a whole is) and a code as the bridge's other errors have
// (openaiCode).
func (b *Binding) openaiError(e *openai.Error) js.Value {
	code := openaiCode(e)
	msg := "wasmlm: " + e.Message
	if code == engine.CodeInvalidArgument {
		msg = ErrInvalidArgument.Error() + ": " + e.Message
	}
	je := b.errorCtor.New(msg)
	je.Set("code", string(code))
	if e.Param != "" {
		je.Set("field", e.Param)
		je.Set("param", e.Param)
	}
	return je
}

// openaiCode is the code of an OpenAI error in the page: prompt_too_long
// for a request the context cannot hold (context_length_exceeded),
// invalid_argument for any other bad request; a server error keeps the
// engine's code it carries (invalid_model, unsupported_model), or is
// "error".
func openaiCode(e *openai.Error) engine.Code {
	switch {
	case e.Type == openai.TypeInvalidRequest && e.Code == "context_length_exceeded":
		return engine.CodePromptTooLong
	case e.Type == openai.TypeInvalidRequest:
		return engine.CodeInvalidArgument
	case e.Code == string(engine.CodeInvalidModel), e.Code == string(engine.CodeUnsupportedModel):
		return engine.Code(e.Code)
	}
	return engine.CodeUnknown
}
