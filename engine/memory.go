package engine

// Memory is what a model takes in memory once loaded, with one session of
// it, in bytes: an estimate from the shapes alone (a Header is enough), so
// that a host can tell before downloading a model whether it fits.
type Memory struct {
	Weights int64 `json:"weights"`  // the model's bytes, held as they are in the file
	KVCache int64 `json:"kv_cache"` // a session's keys and values
	// RecurrentState is a session's recurrent layers' state (a hybrid
	// model's: Config.RecurrentStateBytes), float32 whatever the KV
	// cache's type; 0 without recurrent layers.
	RecurrentState int64 `json:"recurrent_state,omitempty"`
	// Scratch is everything else: a session's buffers (activations,
	// logits, a prompt block's, the rotary table, the sampler's), the
	// tokenizer and the Go runtime.
	Scratch int64 `json:"scratch"`
	Total   int64 `json:"total"`
}

// runtimeBytes is the Go runtime's own share of a program's memory (its
// code's data, the heap's bookkeeping, goroutine stacks), and
// tokenizerBytesPerToken what the tokenizer takes per vocabulary entry
// (strings, maps, merge tables): measured by TestMemoryEstimateCovers.
const (
	runtimeBytes           = 24 << 20
	tokenizerBytesPerToken = 160
)

// EstimateMemory is the memory that a model of config c, whose weights
// take weights bytes in memory, takes with a session of contextLength
// positions whose keys and values are held as kv (KVAuto counts as F32:
// resolve it first, see KVType.Resolve). contextLength is the session's:
// see SessionContextLength.
func EstimateMemory(c Config, weights int64, contextLength int, kv KVType) Memory {
	m := Memory{Weights: weights}
	ctx := int64(contextLength)
	m.KVCache = c.KVCacheBytes(contextLength, kv)
	m.RecurrentState = c.RecurrentStateBytes()
	dim, qDim, kvDim := int64(c.Dim), int64(c.QDim()), int64(c.KVDim())
	hidden, vocab := int64(c.HiddenDim), int64(c.VocabSize)
	perToken := 4*dim + 2*qDim + 2*kvDim + 2*hidden // one position's activations
	floats := perToken + ctx + vocab +              // the run state, scores and logits
		int64(DefaultPromptBlock)*perToken + // a prompt block's
		ctx*int64(c.HeadDim())*int64(c.ropeTables()) + // the rotary tables
		2*max(dim, hidden, qDim) // the kernels' workspace
	if kv == KVF16 { // a few tokens' scores and rounded queries, a decoded chunk
		tokens := int64(min(DefaultPromptBlock, kvBlockTokens))
		floats += tokens*(int64(c.Heads)*ctx+qDim) + int64(max(kvChunkValues/c.KVDim(), 1)*c.KVDim())
	}
	if c.Encoder { // no logits; a pass's activations (encoderState), a pooled vector per text
		pass := int64(max(contextLength, encodePassTokens))
		floats = pass*(3*dim+2*qDim+2*kvDim+2*hidden) + pass + dim +
			ctx*int64(c.HeadDim()) + 2*max(dim, hidden, qDim)
	}
	m.Scratch = 4*floats + 8*ctx + 40*vocab + // the session's buffers, the sampler's
		c.moeScratchBytes(DefaultPromptBlock) + // a mixture of experts' (moe.go)
		c.streamsScratchBytes(DefaultPromptBlock) + // per-layer embeddings' and AltUp's (altup.go)
		tokenizerBytesPerToken*vocab + runtimeBytes
	m.Total = m.Weights + m.KVCache + m.RecurrentState + m.Scratch
	return m
}
