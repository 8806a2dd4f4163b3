package modelsource

import (
	"sort"

	"github.com/wasmlm/wasmlm/engine"
)

// FitContext, as Options.ContextLength, asks Load for the session Fit
// chooses (its KV type and the longest context the budget holds) rather
// than a fixed one; Options.KVType is then ignored.
const FitContext = -1

// MinContextLength is the shortest context worth serving with: a model
// whose session fits the budget only with fewer positions (or the model's
// own context, if shorter) is refused as too large.
const MinContextLength = 256

// ContextFor is the context, in positions, that a session of the model of
// config c, whose file takes weights bytes, gets in budget with its KV
// cache as kv: the largest n, at most the model's context and
// engine.DefaultContextLength, for which engine.EstimateMemory(c, weights,
// n, kv).Total ≤ budget. The estimate grows by a fixed amount per position
// (the KV cache's 2 × layers × kvDim values, 2 bytes each in F16, and the
// session's per-position scratch: scores, rotary tables), so this is
// n = (budget − weights − the estimate's fixed part) / its per-position
// part, found by bisection on the estimate itself so that it is exactly
// what Load checks. It is 0 when not even one position fits.
func ContextFor(c engine.Config, weights int64, kv engine.KVType, budget int64) int {
	most := min(c.ContextLength, engine.DefaultContextLength)
	return sort.Search(most, func(n int) bool {
		return engine.EstimateMemory(c, weights, n+1, kv).Total > budget
	})
}

// Fit is the KV cache type and context of the session a worker serves the
// model of config c, whose file takes weights bytes, with in budget: F32,
// a native session's for a model this small, when the whole context (the
// model's, at most engine.DefaultContextLength) fits with it; otherwise
// F16, half the bytes per position, and ContextFor's context with it.
func Fit(c engine.Config, weights int64, budget int64) (engine.KVType, int) {
	if n := ContextFor(c, weights, engine.KVF32, budget); n == min(c.ContextLength, engine.DefaultContextLength) {
		return engine.KVF32, n
	}
	return engine.KVF16, ContextFor(c, weights, engine.KVF16, budget)
}

// fitted is the KV cache type and context Load's estimate uses for
// FitContext: Fit's, or, when that context is shorter than
// MinContextLength (and the model's context), that minimum, which the
// budget check then refuses, naming its numbers.
func fitted(c engine.Config, weights int64, budget int64) (engine.KVType, int) {
	kv, n := Fit(c, weights, budget)
	return kv, max(n, min(MinContextLength, c.ContextLength, engine.DefaultContextLength))
}
