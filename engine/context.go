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

// fallbackMemory bounds a session and its model where the host's memory is
// not known (hostMemory): 1 TiB, more than a machine this runs on has.
const (
	fallbackMemory     = 1 << 40
	fallbackMemoryWhat = "the 1048576 MiB (1 TiB) this engine allocates at most"
)

// CheckContextMemory refuses a session of positions, its KV cache held as
// kv (resolved: not KVAuto), that is longer than the model was trained for
// and would not fit in the host's memory with the weights (EstimateMemory):
// within the trained context the trained length is the bound, beyond it
// the memory is. The host's memory is the machine's physical memory, or the
// address space the process may map when that is less (Linux; 1 TiB
// elsewhere natively), and 4 GiB in WebAssembly. NewSession checks it; a
// host that makes its session later checks it when it takes the context.
func (m *Model) CheckContextMemory(positions int, kv KVType) error {
	return m.CheckSessionsMemory(positions, kv, 1)
}

// CheckSessionsMemory is CheckContextMemory for sessions sessions of the
// model at once (a server's slots), each with its own KV cache and buffers
// beside the one copy of the weights.
func (m *Model) CheckSessionsMemory(positions int, kv KVType, sessions int) error {
	if positions <= m.config.ContextLength {
		return nil
	}
	est := EstimateMemory(m.config, int64(m.fileSize), positions, kv)
	need := est.Total + int64(max(sessions-1, 0))*(est.KVCache+est.RecurrentState+est.Scratch)
	limit, what := hostMemory()
	if need > limit {
		of := ""
		if sessions > 1 {
			of = fmt.Sprintf(" in %d sessions", sessions)
		}
		return optionError("context_length", "%d positions beyond the model's trained %d take about %d MiB%s with the weights (a %d MiB KV cache each), more than %s",
			positions, m.config.ContextLength, need>>20, of, est.KVCache>>20, what)
	}
	return nil
}
