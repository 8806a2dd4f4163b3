package modelsource

import (
	"fmt"
	"strings"

	"github.com/wasmlm/wasmlm/engine"
)

// What a model may take in an isolate. Cloudflare gives each isolate
// IsolateBytes of memory, the WebAssembly memory and the JavaScript heap
// together, and ends an isolate that goes over. The model, its session and
// the Go runtime (engine.EstimateMemory's total: the weights as the file
// holds them, a KV cache of the context and type the worker serves with,
// the session's buffers, the tokenizer and the runtime's own share) must fit
// in DefaultBudget: the isolate less JSReserveBytes for what is not Go's —
// the worker's JavaScript, the compiled code, a chunk of the model in
// flight while it loads, requests' and responses' bodies.
const (
	IsolateBytes   = 128 << 20
	JSReserveBytes = 16 << 20
	DefaultBudget  = IsolateBytes - JSReserveBytes
)

// CollectorHeadroom is how far below DefaultBudget the worker holds the Go
// heap (debug.SetMemoryLimit): the collector runs concurrently with the
// requests, which allocate meanwhile, and WebAssembly memory, once grown,
// never shrinks, so a limit at the budget itself let the memory of a model
// that fills the budget pass it (measured: 116 MiB after concurrent chat
// streams on stories110M's shape in Q4_0).
const CollectorHeadroom = 8 << 20

// estimate is what the model of header h, whose file in memory takes
// weights bytes, takes with one session of contextLength positions (0: the
// model's, at most engine.DefaultContextLength) holding its KV cache as kv
// (KVAuto resolved by the model's parameter count, as a session resolves
// it): the session the worker serves with.
func estimate(h *engine.Header, weights int64, contextLength int, kv engine.KVType) (engine.Memory, int, engine.KVType, error) {
	c := h.Config()
	positions := min(c.ContextLength, engine.DefaultContextLength)
	if contextLength > 0 {
		if contextLength > c.ContextLength {
			return engine.Memory{}, 0, kv, fmt.Errorf("the context of %d tokens asked for is longer than the model's %d", contextLength, c.ContextLength)
		}
		positions = contextLength
	}
	kv = kv.Resolve(h.Info(int(weights)).Parameters)
	return engine.EstimateMemory(c, weights, positions, kv), positions, kv, nil
}

// checkFits refuses (CodeTooLarge) a model whose estimate m, plus held
// bytes of it the store keeps in JavaScript while it loads, exceeds budget;
// the message names every number.
func checkFits(name string, m engine.Memory, positions int, kv engine.KVType, held, budget int64) error {
	if m.Total+held <= budget {
		return nil
	}
	extra := ""
	if held > 0 {
		extra = fmt.Sprintf(" + %s of the file held in JavaScript (the server ignored Range and sent it whole)", mib(held))
	}
	recurrent := ""
	if m.RecurrentState > 0 {
		recurrent = fmt.Sprintf(" + recurrent state %s", mib(m.RecurrentState))
	}
	return fail(CodeTooLarge, "%s needs %s: weights %s + KV cache %s (%d positions, %s)%s + scratch, tokenizer and Go runtime %s%s; "+
		"an isolate has %s, %s of it for the model (%s kept for JavaScript)",
		name, mib(m.Total+held), mib(m.Weights), mib(m.KVCache), positions, strings.ToUpper(kv.String()), recurrent, mib(m.Scratch), extra,
		mib(IsolateBytes), mib(budget), mib(IsolateBytes-budget))
}

// mib is n bytes in MiB, to a tenth.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
