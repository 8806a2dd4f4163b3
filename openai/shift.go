package openai

// Context shift (engine.GenerateOptions.ContextShift), llama.cpp's server's
// way past a full context: a request's context_shift (or the server's
// default, API.ContextShift) lets its generation, once the context is
// full, keep the first n_keep tokens (after BOS), drop the oldest half of
// the rest and go on, and lets a prompt longer than the context be cut the
// same way. Such a request must bound its cost with max_tokens; usage
// then reports the shifts (context_shifts, context_shifted_tokens).

// maxShiftedPromptContexts bounds the prompt of a request that shifts: at
// most this many contexts of tokens, the rest cut before it is evaluated
// (tokenizing it costs its length, whatever is cut).
const maxShiftedPromptContexts = 16

// shiftRequest is what a request says of context shift.
type shiftRequest struct {
	// ContextShift asks for a context shift (true), or forbids it
	// (false) where the server shifts by default; omitted: the server's
	// default.
	ContextShift *bool `json:"context_shift"`
	// NKeep is how many tokens of the prompt, BOS aside, a shift keeps
	// (llama.cpp's n_keep): 0, none; -1, the whole prompt (at most the
	// context less 4).
	NKeep *int `json:"n_keep"`
}

// shifts reports whether the request's generation may shift its context:
// asked, or the server's default, and the model able to. A request that
// asks for it of a model that cannot is refused.
func (a *API) shifts(r *SamplingRequest) (bool, *Error) {
	if r.NKeep != nil && *r.NKeep < -1 {
		return false, BadRequest("n_keep", "invalid_value", "n_keep = %d, must be >= -1 (-1: the whole prompt)", *r.NKeep)
	}
	on := a.ContextShift
	if r.ContextShift != nil {
		on = *r.ContextShift
	}
	if !on {
		return false, nil
	}
	if err := a.Model.ShiftSupport(); err != nil {
		if r.ContextShift == nil {
			return false, nil // the server's default, for models that can
		}
		return false, BadRequest("context_shift", "invalid_value", "context_shift: %v", err)
	}
	return true, nil
}

// promptLimit is the most tokens a job's prompt may have: the context,
// or for a job that shifts maxShiftedPromptContexts of them.
func (a *API) promptLimit(j *Job) int {
	if j.Options.ContextShift {
		return a.Context * maxShiftedPromptContexts
	}
	return a.Context
}

// shiftKeep sets the job's ShiftKeep from n_keep (or API.NKeep when the
// request omits it) once its prompt is known: n_keep tokens after the
// prompt's BOS (as llama.cpp adds one for it), or the whole prompt for -1.
func (a *API) shiftKeep(j *Job, r *SamplingRequest) {
	keep := a.NKeep
	if r.NKeep != nil {
		keep = *r.NKeep
	}
	switch {
	case keep < 0:
		keep = len(j.Prompt.Tokens)
	case a.startsWithBOS(j):
		keep++
	}
	j.Options.ShiftKeep = keep
}

// startsWithBOS reports whether the job's prompt starts with the
// vocabulary's BOS.
func (a *API) startsWithBOS(j *Job) bool {
	p := j.Prompt.Tokens
	return len(p) > 0 && p[0] == a.Model.Tokenizer().Special().BOS
}

// limitShiftTokens is limitTokens for a job that shifts its context: its
// max_tokens is required when the request asked for the shift, needs not
// fit in the context after the prompt (nor does the prompt: the engine
// cuts it), and is at most the server's limit, if it has one. A request that omits both
// max_tokens and context_shift, on a server that shifts by default, gets
// limitTokens' default, within the context's room: it never shifts while
// its prompt fits.
func (a *API) limitShiftTokens(j *Job, req *SamplingRequest, def int) *Error {
	mt, name := req.requestedMaxTokens()
	if mt == nil && req.ContextShift == nil && len(j.Prompt.Tokens) < a.Context {
		j.Options.ContextShift = false
		return a.limitTokens(j, req, def)
	}
	a.shiftKeep(j, req)
	switch {
	case mt == nil:
		return BadRequest("max_tokens", "missing_required_parameter",
			"max_tokens is required with context_shift: a generation that shifts its context has no other bound")
	case *mt < 1:
		return BadRequest(name, "invalid_value", "%s = %d, must be >= 1", name, *mt)
	case a.overLimit(*mt):
		return a.limitError(name, *mt)
	}
	j.Options.MaxTokens = *mt
	return nil
}
