package httpapi

import (
	"fmt"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// Admission by cost: what a request may cost is known before it waits for
// a slot. An embeddings or rerank request costs the tokens the model will
// evaluate, counted here (countTokens) and bounded by
// Options.MaxEmbedTokens; a completion costs its prompt and its max_tokens,
// bounded by the context (openai.API). The Limiter reserves that cost
// before the request takes a slot (reserve) and gets back what it did not
// use when it ends.

// countTokens counts what the model will evaluate for j — each text's
// tokens with the vocabulary's special tokens, as the engine tokenizes it
// (a rerank's: each pair's, the query's and the pair's special tokens
// included), at most the context for a text truncate cuts — into j.tokens,
// and refuses a job beyond Options.MaxEmbedTokens with 400, naming param
// ("input", "documents"). It tokenizes every text, so the message gives
// the whole count; the body's bound (MaxBodyBytes) bounds that work, and
// prepare's places how many requests do it at once.
func (h *Handler) countTokens(j *embedJob, param string) *apiError {
	opts, frame := tokenizer.EncodeOptions{AddSpecial: true}, 0
	if j.rerank != nil {
		opts, frame = tokenizer.EncodeOptions{}, j.rerank.queryTokens+h.model.RerankSpecialTokens()
	}
	total := 0
	for i, text := range j.texts {
		ids, err := h.model.Tokenizer().Encode(text, opts)
		if err != nil {
			name := textName(param, i, len(j.texts))
			return generationError(fmt.Errorf("%s: %w", name, err), name)
		}
		n := frame + len(ids)
		switch {
		case j.opts.Truncate:
			n = min(n, h.context)
		case j.rerank == nil && n > h.context: // the engine would refuse it, naming it the same way
			name := textName(param, i, len(j.texts))
			return badRequest(name, "context_length_exceeded",
				"This model's maximum context length is %d tokens, and %s is %d tokens with its special tokens (truncate: true cuts it to fit).", h.context, name, n)
		}
		total += n
	}
	j.tokens = total
	if h.maxEmbed > 0 && total > h.maxEmbed {
		what := "texts"
		if j.rerank != nil {
			what = "documents"
		}
		return badRequest(param, "max_tokens_per_request",
			"Requested %d tokens, max %d tokens per request: %s holds more than this server evaluates in one request (special tokens included); send the %s in several requests.",
			total, h.maxEmbed, param, what)
	}
	return nil
}

// textName names text i of n of param as the engine's errors do: "input"
// for a lone text, "input[3]" or "documents[3]" in a list.
func textName(param string, i, n int) string {
	if n == 1 && param == "input" {
		return param
	}
	return fmt.Sprintf("%s[%d]", param, i)
}
