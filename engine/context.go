package engine

import "fmt"

// MaxContextLength bounds a session's context beyond the model's trained
// one (SessionContextLength): far more positions than any KV cache this
// engine allocates holds, and small enough that sizes computed from it
// cannot overflow.
const MaxContextLength = 1 << 24

// SessionContextLength is Model.SessionContextLength for the model the
// header describes: what a load with that context would get, or its error.
func (h *Header) SessionContextLength(requested int) (int, error) {
	return sessionContextLength(h.arch, h.config, requested)
}

// sessionContextLength is SessionContextLength for a model of architecture
// a and config c.
func sessionContextLength(a *architecture, c Config, requested int) (int, error) {
	trained := c.ContextLength
	limit := max(trained, MaxContextLength)
	for _, t := range a.tensors {
		if t.at == slotPositionEmbedding {
			limit = trained // learned positions: only the trained ones exist
		}
	}
	if requested < 0 || requested > limit {
		return 0, optionError("context_length", "must be in 0..%d (0: the model's, at most %d), got %d", limit, DefaultContextLength, requested)
	}
	if requested > 0 {
		return requested, nil
	}
	return min(trained, DefaultContextLength), nil
}

// ContextWarning is what a host says once when a session of positions is
// longer than the model was trained for ("" when it is not): its rotary
// positions beyond the trained ones are outside what the model learned, and
// its output degrades there, as llama.cpp warns ("n_ctx_seq > n_ctx_train")
// and goes on.
func (m *Model) ContextWarning(positions int) string {
	trained := m.config.ContextLength
	if positions <= trained {
		return ""
	}
	return fmt.Sprintf("context length %d exceeds the %d positions the model was trained for: "+
		"positions beyond %d are outside its training and its output degrades there", positions, trained, trained)
}

// CheckContextMemory refuses a session of positions, its KV cache held as
// kv (resolved: not KVAuto), that is longer than the model was trained for and would not fit in
// memoryLimit with the weights (EstimateMemory): within the trained
// context the trained length is the bound, beyond it the memory is.
// NewSession checks it; a host that makes its session later checks it
// when it takes the context.
func (m *Model) CheckContextMemory(positions int, kv KVType) error {
	if positions <= m.config.ContextLength {
		return nil
	}
	need := EstimateMemory(m.config, int64(m.fileSize), positions, kv).Total
	if need > memoryLimit {
		return optionError("context_length", "%d positions beyond the model's trained %d take about %d MiB with the weights, more than the %d MiB this host can address",
			positions, m.config.ContextLength, need>>20, int64(memoryLimit)>>20)
	}
	return nil
}
