package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// KVType is how a session's KV cache holds the keys and values: float32,
// or IEEE half precision (F16) in half the memory. The zero value, KVAuto,
// chooses by the model's size.
type KVType int

// The KV cache types.
const (
	// KVAuto is F16 for a model of more than AutoKVF16Parameters
	// parameters and F32 for a smaller one (Model.DefaultKVType): the
	// cache of a small model costs little next to its weights, and F32
	// keeps its output equal to llama2.c's run.c (which keeps float32
	// keys and values); a large model's cache is hundreds of megabytes at
	// a long context, and half of it is worth a result that is
	// llama.cpp's default.
	KVAuto KVType = iota
	// KVF32 keeps keys and values as float32.
	KVF32
	// KVF16 keeps them as F16, each rounded to the nearest (ties to even,
	// as ggml's GGML_FP32_TO_FP16), and attends as llama.cpp does over an
	// F16 cache on the CPU: the query rounded to F16 for its products with
	// the keys, the attention weights rounded to F16 for their products
	// with the values (ggml's F16 matrix product rounds its float32 operand
	// so), every product then exact in float32.
	KVF16
)

// AutoKVF16Parameters is the parameter count above which KVAuto is F16.
const AutoKVF16Parameters = 100_000_000

// String is the type's name as the options spell it: "auto", "f32", "f16".
func (t KVType) String() string {
	switch t {
	case KVAuto:
		return "auto"
	case KVF32:
		return "f32"
	case KVF16:
		return "f16"
	}
	return fmt.Sprintf("KVType(%d)", int(t))
}

// ParseKVType reads "auto", "f16" or "f32"; anything else is an error
// wrapping ErrInvalidOption that names kv_type.
func ParseKVType(s string) (KVType, error) {
	for _, t := range []KVType{KVAuto, KVF32, KVF16} {
		if s == t.String() {
			return t, nil
		}
	}
	return 0, optionError("kv_type", "must be auto, f16 or f32, got %q", s)
}

// MarshalText is the type's name (String), so that JSON and flags show it.
func (t KVType) MarshalText() ([]byte, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	return []byte(t.String()), nil
}

// UnmarshalText is ParseKVType.
func (t *KVType) UnmarshalText(b []byte) error {
	v, err := ParseKVType(string(b))
	if err == nil {
		*t = v
	}
	return err
}

// check reports a value that is none of the types.
func (t KVType) check() error {
	if t < KVAuto || t > KVF16 {
		return optionError("kv_type", "must be KVAuto, KVF32 or KVF16, got %d", int(t))
	}
	return nil
}

// Resolve is the type a session of a model of the given parameter count
// uses when asked for t: t itself, or for KVAuto F16 above
// AutoKVF16Parameters and F32 otherwise.
func (t KVType) Resolve(parameters int64) KVType {
	switch {
	case t != KVAuto:
		return t
	case parameters > AutoKVF16Parameters:
		return KVF16
	}
	return KVF32
}

// ValueBytes is the bytes one cached value takes: 4 for F32, 2 for F16 (and
// KVAuto's largest, 4).
func (t KVType) ValueBytes() int {
	if t == KVF16 {
		return 2
	}
	return 4
}

// KVCacheBytes is what the KV cache of a session of contextLength positions
// holding t takes: 2 (keys and values) · kvDim values for each position
// each layer holds, contextLength but for a sliding-window layer's ring
// (see AttentionSpec.Window). KVAuto counts as F32, the larger: resolve it first
// (KVType.Resolve with the model's parameter count, or
// Model.DefaultKVType) for the size a session will have.
func (c Config) KVCacheBytes(contextLength int, t KVType) int64 {
	if c.Encoder {
		return 0 // an encoder attends within one pass, from its scratch
	}
	var values int64
	for l := range c.Layers {
		if !c.Layer(l).Attention.SharedKV {
			values += int64(c.kvSlots(l, contextLength, t)) * int64(c.layerKVDim(l))
		}
	}
	return 2 * values * int64(t.ValueBytes())
}

// DefaultKVType is the type KVAuto resolves to for this model, counting
// the parameters of the whole model even in a part of a split one, so that
// every part chooses alike.
func (m *Model) DefaultKVType() KVType {
	return KVAuto.Resolve(m.wholeParameters())
}

// kvChunkValues is about the size of the chunk of positions' keys (or
// values) that attention over an F16 cache decodes at once: 128 KiB,
// which the CPU's L2 cache holds while every query head reads it.
const kvChunkValues = 32 << 10

// allocF16 allocates the buffers attention over an F16 cache of context
// positions uses, for queries of qDim values and keys of kvDim, and prompt
// blocks of block tokens.
func (st *runState) allocF16(c Config, qDim, kvDim, context, block int) {
	st.attnScratch.allocF16(c, qDim, kvDim, context, block)
}

func (a *attnScratch) allocF16(c Config, qDim, kvDim, context, block int) {
	tokens := min(block, kvBlockTokens)
	a.scores = make([]float32, tokens*qDim/c.HeadDim()*context)
	a.qHalf = make([]float32, tokens*qDim)
	a.kvChunk = make([]float32, max(kvChunkValues/kvDim, 1)*kvDim)
}

// kvCache holds the keys and values of every position seen so far: as
// float32 in k and v, or for KVF16 as F16 bits in k16 and v16. A layer
// holds every position of the session's context, or, attending to a
// sliding window, a ring of the latest (kvLayer); a layer that shares an
// earlier layer's cache (AttentionSpec.SharedKV) holds nothing, its
// kvLayer being that layer's.
type kvCache struct {
	typ      KVType
	k, v     []float32 // every layer's (slots, kvDim), layer after layer, KVF32
	k16, v16 []uint16  // the same, KVF16
	layers   []kvLayer // where each layer's positions lie
	// validFrom is the oldest position every ring holds for sure: a
	// context shift can leave a ring without kept positions it had
	// overwritten (shift.go); 0 once the cache is filled from the start.
	validFrom int
}

// newKVCache makes the cache of a session of context positions whose
// layers' keys are all of kvDim values, evaluating prompt blocks of
// DefaultPromptBlock tokens.
func newKVCache(c Config, t KVType, kvDim, context int) kvCache {
	return newLayersKVCache(c, t, func(int) int { return kvDim }, context, DefaultPromptBlock)
}

// newLayersKVCache makes the cache of a session of context positions that
// evaluates prompt blocks of block tokens; kvDim(l) is the width of layer
// l's keys as its weights hold them (a part of a split model's, fewer).
func newLayersKVCache(c Config, t KVType, kvDim func(l int) int, context, block int) kvCache {
	kv := kvCache{typ: t, layers: make([]kvLayer, c.Layers)}
	n := 0
	for l := range kv.layers {
		if from := c.kvLayerOf(l); from != l {
			kv.layers[l] = kv.layers[from]
			continue
		}
		ly := kvLayer{at: n, slots: c.kvSlotsBlock(l, context, t, block), window: c.Layer(l).Attention.Window, kvDim: kvDim(l)}
		kv.layers[l] = ly
		n += ly.slots * ly.kvDim
	}
	if t == KVF16 {
		kv.k16, kv.v16 = make([]uint16, n), make([]uint16, n)
	} else {
		kv.k, kv.v = make([]float32, n), make([]float32, n)
	}
	return kv
}

// store puts position pos's key and value (kvDim values each) in layer l.
func (c *kvCache) store(l, pos int, k, v []float32) {
	ly := c.layers[l]
	at := ly.at + ly.slot(pos)*ly.kvDim
	if c.typ == KVF16 {
		tensor.EncodeF16(c.k16[at:at+ly.kvDim], k)
		tensor.EncodeF16(c.v16[at:at+ly.kvDim], v)
		return
	}
	copy(c.k[at:at+ly.kvDim], k)
	copy(c.v[at:at+ly.kvDim], v)
}

// attention computes, for every query head in q, softmax(q·kᵀ/√headDim)·v
// over the positions of layer l's cached keys and values that the query at
// pos attends to (0..pos, or the layer's window), into out, oldest first.
// Heads share key/value heads in groups (grouped-query attention). The
// scores are scaled and capped as the layer's recipe says
// (attentionWeights: granite's scale replaces 1/√headDim; gemma's queries
// are scaled instead).
func (s *Session) attention(out, q []float32, l, pos int) {
	s.attentionWith(&s.state.attnScratch, out, q, l, pos)
}

// attentionWith is attention with the scratch memory sc.
func (s *Session) attentionWith(sc *attnScratch, out, q []float32, l, pos int) {
	if s.kv.typ == KVF16 {
		s.attentionF16(sc, out, q, 1, l, pos)
		return
	}
	c, kv := &s.model.config, &s.kv
	headDim, group := c.layerHeadDim(l), c.Heads/c.layerKVHeads(l)
	a := c.Layer(l).Attention
	scale, sinks := c.layerScoreScale(l), s.sinks(&a, l)
	ly := kv.layers[l]
	first := ly.first(pos)
	// Positions first..pos fill slots from first's on, wrapping round a
	// ring at mid: two runs of consecutive rows.
	mid, slot := ly.wrap(first, pos+1)
	scores := sc.scores[:pos+1-first]
	older, newer := scores[:mid-first], scores[mid-first:]
	for h := range len(q) / headDim {
		qh, oh := q[h*headDim:(h+1)*headDim], out[h*headDim:(h+1)*headDim]
		at := ly.at + h/group*headDim // the head's first key (and value)
		// q·k_t for every attended t
		tensor.DotF32Rows(older, qh, kv.k[at+slot*ly.kvDim:], ly.kvDim)
		tensor.DotF32Rows(newer, qh, kv.k[at:], ly.kvDim)
		attentionWeights(scores, a.SoftCap, scale, sinks, h)
		clear(oh)
		// Σ_t score[t]·v_t
		tensor.AddScaledRows(oh, older, kv.v[at+slot*ly.kvDim:], ly.kvDim)
		tensor.AddScaledRows(oh, newer, kv.v[at:], ly.kvDim)
	}
}

// kvBlockTokens is how many tokens of a prompt block attend together over
// an F16 cache, sharing each decoded chunk: decoding the cache again for
// each token took natively a seventh of the prompt's time at 900 positions
// (stories110M's shape), a quarter of that is little, and the scores of
// four tokens take four times one's memory.
const kvBlockTokens = 4

// attentionBlock stores the keys and values of the n tokens of a prompt
// block, at positions pos..pos+n-1, in layer l, and computes their
// attention; their queries, keys, values and outputs are the rows of q, k,
// v and out. It goes token by token over an F32 cache, kvBlockTokens at a
// time over an F16 one, storing each group's keys and values just before
// the group attends, so that a sliding-window layer's ring needs room for
// its window and one group only (Config.kvSlots). Each token's result is
// the bits attention gives it alone.
func (s *Session) attentionBlock(out, q, k, v []float32, n, l, pos int) {
	step := 1
	if s.kv.typ == KVF16 {
		step = kvBlockTokens
	}
	shared := s.model.config.Layer(l).Attention.SharedKV // k and v are nil: the cache holds them
	groups := (n + step - 1) / step
	s.attnTask = attnTask{s: s, out: out, q: q, n: n, l: l, pos: pos, step: step}
	if ws := s.state.ws; ws.Threads() > 1 && groups > 1 && (s.kv.layers[l].window == 0 || shared) {
		// A layer holding the whole context can take every key and value
		// first (a layer sharing a cache finds them there, its ring holding
		// a block more than its window); then the groups attend at once,
		// on the session's threads.
		if !shared {
			for j := range n {
				s.kv.store(l, pos+j, row(k, j, len(k)/n), row(v, j, len(k)/n))
			}
		}
		s.ensureAttnParts(ws.Threads() - 1)
		ws.Split(groups, 1, 1, &s.attnTask)
	} else {
		for g := range groups {
			for j := g * step; j < min((g+1)*step, n) && !shared; j++ {
				s.kv.store(l, pos+j, row(k, j, len(k)/n), row(v, j, len(k)/n))
			}
			s.attnTask.Run(0, g, g+1)
		}
	}
	s.attnTask = attnTask{}
}

// attnTask is a prompt block's attention split among threads
// (tensor.Workspace.Split): the items are groups of step tokens, and part
// p works in scratch memory of its own.
type attnTask struct {
	s         *Session
	out, q    []float32
	n, l, pos int
	step      int
}

func (t *attnTask) Run(part, lo, hi int) {
	s := t.s
	sc := &s.state.attnScratch
	if part > 0 {
		sc = &s.attnParts[part-1]
	}
	qDim := len(t.q) / t.n
	for g := lo; g < hi; g++ {
		i := g * t.step
		c := min(t.step, t.n-i)
		out, q := t.out[i*qDim:(i+c)*qDim], t.q[i*qDim:(i+c)*qDim]
		if s.kv.typ == KVF16 {
			s.attentionF16(sc, out, q, c, t.l, t.pos+i)
		} else {
			s.attentionWith(sc, out, q, t.l, t.pos+i)
		}
	}
}

// ensureAttnParts makes sure the session has scratch memory for n more
// threads' attention, as its own run state's.
func (s *Session) ensureAttnParts(n int) {
	for len(s.attnParts) < n {
		a := attnScratch{scores: make([]float32, len(s.state.scores))}
		if s.kv.typ == KVF16 {
			a.qHalf = make([]float32, len(s.state.qHalf))
			a.kvChunk = make([]float32, len(s.state.kvChunk))
		}
		s.attnParts = append(s.attnParts, a)
	}
}

// attentionF16 is attention over an F16 cache for tokens consecutive
// tokens, at positions pos..pos+tokens-1, whose queries and outputs are the
// rows of q and out. It goes a chunk of positions at a time: the chunk's
// keys (then values), contiguous in the cache for all the key/value heads,
// are decoded to float32 once, in one sequential read, and the F32 products
// of every query head of every token run over them. A decoded F16 value is
// exact, and each score and each output is still its own chain of
// operations in the F32 path's order (the sums over t go chunk after
// chunk, oldest position first), so the bits are those of the F32 products
// over the whole decoded cache, token by token. Decoding each value once
// for all the query heads that read it (grouped-query attention shares a
// key among several), in one sequential read of the cache, makes it about
// as fast as attention over an F32 cache, which reads twice the bytes
// (decoding inside the products instead, once per query head, measured 1.2
// to 1.6 times as slow in wasm with SIMD).
func (s *Session) attentionF16(st *attnScratch, out, q []float32, tokens, l, pos int) {
	c, kv := &s.model.config, &s.kv
	headDim, group, qDim := c.layerHeadDim(l), c.Heads/c.layerKVHeads(l), len(q)/tokens
	a := c.Layer(l).Attention
	scale, sinks := c.layerScoreScale(l), s.sinks(&a, l)
	ly := kv.layers[l]
	heads, end := qDim/headDim, pos+tokens // positions ly.first(pos)..end-1 are read
	chunk := len(st.kvChunk) / ly.kvDim    // positions a chunk holds
	// each calls f for the chunks [t0, t1) of the positions read, with
	// their rows of cache decoded into rows: (t1-t0, kvDim). A chunk ends
	// where a ring wraps round.
	each := func(cache []uint16, f func(t0, t1 int, rows []float32)) {
		for t0 := ly.first(pos); t0 < end; {
			t1, slot := ly.wrap(t0, min(end, t0+chunk))
			rows := st.kvChunk[:(t1-t0)*ly.kvDim]
			tensor.DecodeF16Rows(rows, cache[ly.at+slot*ly.kvDim:], len(rows), len(rows))
			f(t0, t1, rows)
			t0 = t1
		}
	}
	qs := st.qHalf[:len(q)]
	tensor.RoundF16(qs, q)
	// score(i, h) is token i's head h's scores over the positions it
	// attends to, ly.first(pos+i)..pos+i.
	score := func(i, h int) []float32 {
		at := (i*heads + h) * (end - ly.first(pos))
		return st.scores[at : at+pos+i+1-ly.first(pos+i)]
	}
	// products runs f(sc, a, b) for each token i and head h over positions
	// [a, b), those of the chunk [t0, t1) that token i attends to, sc being
	// their scores.
	products := func(t0, t1 int, f func(sc []float32, i, h, a, b int)) {
		for i := range tokens {
			first := ly.first(pos + i)
			a, b := max(t0, first), min(t1, pos+i+1)
			if a >= b {
				continue
			}
			for h := range heads {
				f(score(i, h)[a-first:b-first], i, h, a, b)
			}
		}
	}
	each(kv.k16, func(t0, t1 int, keys []float32) {
		products(t0, t1, func(sc []float32, i, h, a, _ int) { // q·k_t for every t
			at := i*qDim + h*headDim
			tensor.DotF32Rows(sc, qs[at:at+headDim], keys[(a-t0)*ly.kvDim+h/group*headDim:], ly.kvDim)
		})
	})
	for i := range tokens {
		for h := range heads {
			sc := score(i, h)
			attentionWeights(sc, a.SoftCap, scale, sinks, h)
			tensor.RoundF16(sc, sc)
		}
	}
	clear(out)
	each(kv.v16, func(t0, t1 int, values []float32) {
		products(t0, t1, func(sc []float32, i, h, a, _ int) { // Σ_t score[t]·v_t over the chunk's t
			at := i*qDim + h*headDim
			tensor.AddScaledRows(out[at:at+headDim], sc, values[(a-t0)*ly.kvDim+h/group*headDim:], ly.kvDim)
		})
	})
}

// scaledSoftmax replaces x with softmax(scale·x) (tensor.Softmax: one
// kernel call with the SIMD kernels).
func scaledSoftmax(x []float32, scale float32) {
	tensor.Softmax(x, scale)
}
