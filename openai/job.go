package openai

import (
	"errors"
	"slices"
	"strings"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/policy"
)

// DefaultCompletionMaxTokens is max_tokens for a text completion whose
// request omits it: 16, as OpenAI's completions endpoint does. Chat
// completions without max_tokens run until the context is full (or
// API.MaxTokens), as OpenAI's chat endpoint does.
const DefaultCompletionMaxTokens = 16

// API turns requests for one model into jobs: what a server holds and
// allows its requests.
type API struct {
	Model    *engine.Model
	Grammars *policy.Grammars // the grammars of Model's requests
	Context  int              // the tokens a session holds
	// MaxTokens is the most tokens a request may ask for: a server's
	// limit (its message says so). 0 sets none of the host's own (the
	// page): a request's max_tokens must still fit in the context after
	// its prompt, unless the request shifts its context.
	MaxTokens int
	// ContextShift is context_shift's default: a request that omits it
	// shifts its context (shift.go) if the model can; NKeep is n_keep's
	// default.
	ContextShift bool
	NKeep        int
	// ContextHint is a sentence the error of a prompt that leaves no room
	// for a completion ends with: how this host's context could be longer
	// ("Start the server with a longer -ctx."). "" adds none.
	ContextHint string
}

// Job is a validated completion request, ready to generate: its prompt,
// the options of its generation, and how to answer it.
type Job struct {
	Chat        bool // a chat completion (else a text completion)
	Prompt      engine.Prompt
	PromptParam string // the request field errors about the prompt name
	// GrammarParam is the request field the generation's grammar came in
	// ("grammar", "response_format", "tools" for a forced call), "" for none.
	GrammarParam string
	Options      engine.GenerateOptions
	Stream       bool
	IncludeUsage bool
	// Calls, for a chat reply that may call tools, says how to read the
	// calls out of it; nil: the reply is text.
	Calls *Calls
	// ReplyPrefix is the text the chat prompt ends with inside the reply
	// (policy.ChatPrompt.ReplyPrefix), read before the reply: pass it to
	// NewStream, NewCompletion, NewReplyStream, or in front of the text
	// to ParseReply.
	ReplyPrefix string
}

// NewSamplingRequest is what a request's shared fields are decoded into
// (CompletionRequest.SamplingRequest, ChatRequest.SamplingRequest): it
// knows how many logit_bias entries to take.
func (a *API) NewSamplingRequest() SamplingRequest {
	return SamplingRequest{LogitBias: logitBias{limit: a.Model.Config().VocabSize}}
}

// newJob validates what both endpoints share.
func (a *API) newJob(req *SamplingRequest, promptParam string) (*Job, *Error) {
	params, e := req.sampling()
	if e != nil {
		return nil, e
	}
	shifts, e := a.shifts(req)
	if e != nil {
		return nil, e
	}
	j := &Job{
		PromptParam: promptParam,
		Options:     engine.GenerateOptions{Sampling: params, Stop: slices.Clip(req.Stop.list), ContextShift: shifts},
		Stream:      req.Stream,
	}
	if shifts {
		// Validated with the max_tokens it will have (limitTokens).
		j.Options.MaxTokens = 1
	}
	// Refused now, not after a wait in the queue.
	if err := j.Options.Validate(a.Model.Config().VocabSize); err != nil {
		var oe *engine.OptionError
		if errors.As(err, &oe) && req.Stop.one && oe.Field == "stop[0]" {
			// The engine counts the stop strings; the request wrote one.
			return nil, BadRequest("stop", "invalid_value", "stop %s", oe.Problem)
		}
		return nil, ErrorOf(err, promptParam)
	}
	j.IncludeUsage = req.Stream && req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	return j, nil
}

// CompletionJob validates a /v1/completions request and tokenizes its
// prompt (with BOS, as the CLI does; special-token text is kept as text).
func (a *API) CompletionJob(req *CompletionRequest) (*Job, *Error) {
	j, e := a.newJob(&req.SamplingRequest, "prompt")
	if e != nil {
		return nil, e
	}
	if e := j.askLogprobs(req.Logprobs != nil, req.Logprobs, "logprobs"); e != nil {
		return nil, e
	}
	format, e := req.responseFormat()
	if e != nil {
		return nil, e
	}
	if j.Options.Constraint, e = a.formatGrammar(format, "prompt"); e != nil {
		return nil, e
	}
	j.GrammarParam = grammarParam(j, format)
	if e := stopWithGrammar(j); e != nil {
		return nil, e
	}
	text, ids, e := req.completionPrompt(a.promptLimit(j))
	if e != nil {
		return nil, e
	}
	if ids == nil {
		if e := a.textFits(j, len(text), "prompt"); e != nil {
			return nil, e
		}
		p, err := a.Model.TextPrompt(text, false)
		if err != nil {
			return nil, ErrorOf(err, "prompt")
		}
		ids = p.Tokens
	}
	vocab := a.Model.Config().VocabSize
	if len(ids) == 0 {
		return nil, BadRequest("prompt", "invalid_value", "prompt has no tokens")
	}
	for i, id := range ids {
		if id < 0 || id >= vocab {
			return nil, BadRequest("prompt", "invalid_value", "prompt token %d at position %d is outside the vocabulary [0, %d)", id, i, vocab)
		}
	}
	j.Prompt = engine.Prompt{Tokens: ids}
	return j, a.limitTokens(j, &req.SamplingRequest, DefaultCompletionMaxTokens)
}

// ChatJob validates a /v1/chat/completions request and formats its
// messages with the model's chat template.
func (a *API) ChatJob(req *ChatRequest) (*Job, *Error) {
	j, e := a.newJob(&req.SamplingRequest, "messages")
	if e != nil {
		return nil, e
	}
	j.Chat = true
	if e := j.askLogprobs(req.Logprobs != nil && *req.Logprobs, req.TopLogprobs, "top_logprobs"); e != nil {
		return nil, e
	}
	msgs, e := req.messages()
	if e != nil {
		return nil, e
	}
	msgs, start, e := replyStart(req, msgs)
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
	if e := a.replyGrammar(j, tools, format); e != nil {
		return nil, e
	}
	if e := stopWithGrammar(j); e != nil {
		return nil, e
	}
	opts.Tools, opts.ToolChoice = tools.tools, tools.choice
	if j.Options.Constraint != nil {
		// The grammar holds the reply from its first token: a thinking
		// template's reasoning would not match it.
		opts.DisableThinking = true
	}
	// The template is applied twice, here to measure the text and again by
	// NewChatPrompt, which tokenizes it: a cost of the order of the text's
	// bytes, where tokenizing costs tens of times more. An error here
	// (an unknown template or role) is NewChatPrompt's to report.
	if tmpl, err := policy.ChatTemplate(a.Model); err == nil {
		if text, err := tmpl.ApplyWith(msgs, true, opts); err == nil {
			if e := a.textFits(j, len(text), "messages"); e != nil {
				return nil, e
			}
		}
	}
	p, err := policy.NewChatPrompt(a.Model, msgs, opts)
	if err != nil {
		if errors.Is(err, chat.ErrInvalidTool) {
			return nil, BadRequest("tools", "invalid_value", "%v", err)
		}
		e := ErrorOf(err, "messages")
		if errors.Is(err, chat.ErrUnknownRole) && !strings.Contains(e.Message, "developer") {
			// The template's roles, and the one this layer reads as system.
			e.Message = strings.Replace(e.Message, "takes system, ", "takes system, developer, ", 1)
		}
		return nil, e
	}
	if start != nil {
		if e := a.continueReply(j, &p, tools, start); e != nil {
			return nil, e
		}
	}
	j.Prompt, j.ReplyPrefix = p.Prompt, p.ReplyPrefix
	if tools.calling() {
		j.Calls = &Calls{Format: p.ToolFormat, Seed: CallSeed(j.Options.Sampling.Seed, j.Prompt.Tokens), Parallel: tools.parallel, Tools: tools.tools}
	}
	return j, a.limitTokens(j, &req.SamplingRequest, 0)
}

// replyGrammar sets the grammar a chat job's reply is sampled under: the
// forced call's (tool_choice "required" or a function), else f's; every
// tool's parameters are checked on the way. A JSON
// response_format or a grammar applies to a reply that is text: with tools
// that may be called, it is refused.
func (a *API) replyGrammar(j *Job, t toolRequest, f policy.ResponseFormat) *Error {
	if t.calling() && f.Constrains() {
		param := "response_format"
		if f.Grammar != "" {
			param = "grammar"
		}
		return BadRequest(param, "invalid_value",
			"%s applies with tool_choice \"none\" only: with tools and tool_choice %s, the reply may be a tool call", param, t.choice.String())
	}
	if len(t.tools) > 0 {
		// Every tool's parameters are checked, whatever the choice; a
		// forced call gets its grammar.
		tmpl, err := policy.ChatTemplate(a.Model)
		if err != nil {
			return nil // the model's template is unusable: NewChatPrompt says so
		}
		g, err := a.Grammars.ToolGrammar(tmpl.ToolFormat(), t.tools, t.choice, t.parallel)
		if err != nil {
			return ErrorOf(err, "messages")
		}
		if g != nil {
			j.Options.Constraint, j.GrammarParam = g, "tools"
			return nil
		}
	}
	var e *Error
	tmpl, _ := policy.ChatTemplate(a.Model) // unusable: NewChatPrompt says so
	j.Options.Constraint, e = a.chatFormatGrammar(f, tmpl)
	j.GrammarParam = grammarParam(j, f)
	return e
}

// grammarParam is the request field of the grammar j generates under, if
// any: the format's.
func grammarParam(j *Job, f policy.ResponseFormat) string {
	switch {
	case j.Options.Constraint == nil:
		return ""
	case f.Grammar != "":
		return "grammar"
	}
	return "response_format"
}

// ErrorOf is the error object of err, an error of the job's generation:
// ErrorOf's, but a grammar that failed midway (engine.ErrGrammar: the
// matcher's limits, a character no token can write) names the field the
// grammar came in, not the prompt.
func (j *Job) ErrorOf(err error) *Error {
	return ErrorOf(policy.GrammarFailed(err, j.GrammarParam), j.PromptParam)
}

// textFits refuses, before it is tokenized, a prompt's text of n bytes that
// cannot leave room for a completion: no token stands for more than
// MaxTokenBytes bytes of text, so it takes at least n / MaxTokenBytes
// tokens. Tokenizing a megabyte takes tens of megabytes and a good part of
// a second; this takes nothing. param names the prompt ("prompt",
// "messages": the text their template makes of them).
func (a *API) textFits(j *Job, n int, param string) *Error {
	per := a.Model.MaxTokenBytes()
	least := (n + per - 1) / per
	if least < a.Context {
		return nil
	}
	if limit := a.promptLimit(j); j.Options.ContextShift {
		if least <= limit {
			return nil // cut to fit
		}
		return a.tooLong(param,
			"This model's maximum context length is %d tokens, and %s at least %d tokens (%d bytes of text, at most %d bytes a token): more than the %d a request that shifts its context may have.",
			a.Context, promptIs(param), least, n, per, limit)
	}
	return a.tooLong(param,
		"This model's maximum context length is %d tokens, and %s at least %d tokens (%d bytes of text, at most %d bytes a token): no room is left for a completion.",
		a.Context, promptIs(param), least, n, per)
}

// tooLong is the context_length_exceeded error of a prompt (param) too
// long for the context, its message format's followed by the host's
// ContextHint.
func (a *API) tooLong(param, format string, args ...any) *Error {
	e := BadRequest(param, "context_length_exceeded", format, args...)
	if a.ContextHint != "" {
		e.Message += " " + a.ContextHint
	}
	return e
}

// promptIs begins a sentence about the prompt's length.
func promptIs(param string) string {
	if param == "messages" {
		return "the messages are"
	}
	return "the " + param + " is"
}

// limitTokens sets the job's MaxTokens: the request's, which must fit in the
// server's limit (API.MaxTokens, if any) and in the context after the
// prompt, or def (0: as many as fit) bounded the same way. Like OpenAI, it
// counts prompt + completion against the context.
func (a *API) limitTokens(j *Job, req *SamplingRequest, def int) *Error {
	if j.Options.ContextShift {
		return a.limitShiftTokens(j, req, def)
	}
	room := a.Context - len(j.Prompt.Tokens)
	if room <= 0 {
		return a.tooLong(j.PromptParam,
			"This model's maximum context length is %d tokens, and %s %d tokens: no room is left for a completion.",
			a.Context, promptIs(j.PromptParam), len(j.Prompt.Tokens))
	}
	if a.MaxTokens > 0 {
		room = min(room, a.MaxTokens)
	}
	mt, name := req.requestedMaxTokens()
	switch {
	case mt == nil && def > 0:
		j.Options.MaxTokens = min(def, room)
	case mt == nil:
		j.Options.MaxTokens = room
	case *mt < 1:
		return BadRequest(name, "invalid_value", "%s = %d, must be >= 1", name, *mt)
	case a.overLimit(*mt):
		return a.limitError(name, *mt)
	case len(j.Prompt.Tokens)+*mt > a.Context:
		return BadRequest(name, "context_length_exceeded",
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the %s, %d for the completion).",
			a.Context, len(j.Prompt.Tokens)+*mt, len(j.Prompt.Tokens), j.PromptParam, *mt)
	default:
		j.Options.MaxTokens = *mt
	}
	return nil
}

// overLimit reports whether max_tokens n is past the server's limit
// (API.MaxTokens; none when 0).
func (a *API) overLimit(n int) bool {
	return a.MaxTokens > 0 && n > a.MaxTokens
}

// limitError is the error of max_tokens n (the field name) past the
// server's limit.
func (a *API) limitError(name string, n int) *Error {
	return BadRequest(name, "invalid_value", "%s = %d exceeds this server's limit of %d", name, n, a.MaxTokens)
}

// formatGrammar compiles f for the generation (nil for free text). The
// errors name the field at fault.
func (a *API) formatGrammar(f policy.ResponseFormat, promptParam string) (engine.Constraint, *Error) {
	g, err := a.Grammars.FormatGrammar(f)
	if err != nil {
		return nil, ErrorOf(err, promptParam)
	}
	return g, nil
}

// chatFormatGrammar compiles a chat request's response format for the
// content of tmpl's replies (policy.Grammars.ChatFormatGrammar).
func (a *API) chatFormatGrammar(f policy.ResponseFormat, tmpl chat.Template) (engine.Constraint, *Error) {
	g, err := a.Grammars.ChatFormatGrammar(f, tmpl)
	if err != nil {
		return nil, ErrorOf(err, "messages")
	}
	return g, nil
}

// stopWithGrammar refuses stop strings beside a grammar (a response_format,
// a grammar, a forced tool call) before the request waits: a stop string
// could cut the text the grammar keeps whole (the engine refuses it too).
func stopWithGrammar(j *Job) *Error {
	if j.Options.Constraint != nil && len(j.Options.Stop) > 0 {
		return BadRequest("stop", "invalid_value",
			"stop cannot be combined with a grammar (a JSON schema or object, a GBNF grammar, a forced tool call): a stop string could cut the text the grammar keeps whole")
	}
	return nil
}
