package gpu

import (
	"fmt"
	"strings"
)

// Attention: a workgroup per token and query head computes the head's
// scores over the positions the token attends to, their softmax and the
// weighted sum of the values, in three sweeps over the positions, the
// scores kept in a scratch buffer of the cache's (one row of the context
// for every token and head) rather than in workgroup memory, so that any
// context fits:
//
//  1. each invocation takes every WG-th position: the score q·k, soft-capped
//     and scaled as the layer says; the workgroup's maximum;
//  2. each the same positions: e^(score − max), their sum;
//  3. the invocations split into slices of the head's dimensions, each
//     slice taking every slices-th position, adding weight·v (the weight
//     e/sum) into its dimensions; the slices' sums are added at the end.
//
// Over an F16 cache the query is rounded to F16 before its products with
// the keys and the weights before theirs with the values, as the engine
// attends over an F16 cache (kv.go's attentionF16): each product is then
// exact in f32, and only the order of the sums differs.

// maxHeadDim is the widest head the kernel takes: its query is kept in
// workgroup memory, and an invocation adds into at most 4 dimensions. A
// head's width is a multiple of 4, its keys read four values at a time.
const maxHeadDim = 2 * workgroup

// AttentionSpec is what an attention's layer and model say of it.
type AttentionSpec struct {
	Heads, KVHeads, HeadDim int // query heads, key/value heads (a divisor), their width
	// Window is how many positions a query attends to, its own included
	// (a sliding window); 0: every position from 0.
	Window int
	// SoftCap caps the scores, cap·tanh(score/cap), before they are
	// scaled (gemma2); 0: not capped.
	SoftCap float32
	// Scale multiplies the scores before the softmax (the engine's
	// scoreScale: 1/√headDim, a family's scale, or 1).
	Scale float32
	// NonCausal lets every token of a pass attend to every position up to
	// the pass's last (the encoders); otherwise a token attends up to its
	// own position.
	NonCausal bool
	// MaxTokens is the most tokens one Record takes (a prompt block).
	MaxTokens int
}

// Attention computes the attention of n tokens' queries over a layer of
// the KV cache.
type Attention struct {
	op
	cache  *KVCache
	slots  int // the layer's
	spec   AttentionSpec
	q, out Binding
}

const attentionBody = `
var<workgroup> qs: array<vec4<f32>, MAXHEAD / 4>; // the query, four values at a time
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let g = groupIndex(wg, nwg); // token · heads + head
  if (g >= p.n * p.heads) { return; }
  let token = g / p.heads;
  let head = g % p.heads;
  var last = p.pos + token;
  if (p.nonCausal == 1u) { last = p.pos + p.n - 1u; }
  var first = 0u;
  if (p.window > 0u && last + 1u > p.window) { first = last + 1u - p.window; }
  let count = last + 1u - first;
  let qa = g * p.headDim;
  for (var d = li; d < p.headDim; d += WG) { qs[d / 4u][d % 4u] = QUERY(q[qa + d]); }
  workgroupBarrier();
  let kvAt = (head / p.group) * p.headDim; // the head's first key in a row
  let sa = g * p.context; // its scores
  var m = bitcast<f32>(0xff7fffffu); // the lowest f32
  for (var j = li; j < count; j += WG) {
    var s = score(((first + j) % p.slots) * p.kvDim + kvAt);
    if (p.softCap > 0.0) { s = tanh(clamp(s * (1.0 / p.softCap), -10.0, 10.0)) * p.softCap; }
    s *= p.scale;
    scores[sa + j] = s;
    m = max(m, s);
  }
  m = reduceMax(li, m);
  var sum = 0.0;
  for (var j = li; j < count; j += WG) {
    let e = exp(scores[sa + j] - m);
    scores[sa + j] = e;
    sum += e;
  }
  let inv = 1.0 / reduceSum(li, sum);
  storageBarrier();
  let span = min(p.headDim, WG);
  let slices = WG / span;
  let slice = li / span;
  let lane = li % span;
  var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
  if (slice < slices) {
    for (var j = slice; j < count; j += slices) {
      let w = WEIGHT(scores[sa + j] * inv);
      let row = ((first + j) % p.slots) * p.kvDim + kvAt;
      for (var c = 0u; c < 4u; c++) {
        let d = lane + c * span;
        if (d < p.headDim) { acc[c] += w * value(row + d); }
      }
    }
  }
  part[li] = acc[0];
  workgroupBarrier();
  if (slices == 1u) {
    for (var c = 0u; c < 4u; c++) {
      let d = li + c * span;
      if (d < p.headDim) { out[qa + d] = acc[c]; }
    }
  } else if (li < span) {
    var s = 0.0;
    for (var k = 0u; k < slices; k++) { s += part[k * span + li]; }
    out[qa + li] = s;
  }
}
`

// The reads of a key's products and a value of each cache type, keys four
// values at a time (a vec4 of f32, or of F16 in a vec2 of u32); at is a
// key's first value in the layer's buffer (a multiple of 4), i a value's.
const (
	attentionF32 = `
fn score(at: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < p.headDim / 4u; d++) { s += dot(qs[d], keys[at / 4u + d]); }
  return s;
}
fn value(i: u32) -> f32 { return vals[i]; }
`
	attentionF16 = f16Fn + `
fn score(at: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < p.headDim / 4u; d++) {
    let k = keys[at / 4u + d];
    s += dot(qs[d], vec4<f32>(unpack2x16float(k.x), unpack2x16float(k.y)));
  }
  return s;
}
fn value(i: u32) -> f32 {
  let v = unpack2x16float(vals[i / 2u]);
  return select(v.x, v.y, (i & 1u) == 1u);
}
`
)

func attentionSource(f16 bool) string {
	key, value, reads, round := "vec4<f32>", "f32", attentionF32, ""
	if f16 {
		key, value, reads, round = "vec2<u32>", "u32", attentionF16, "roundF16"
	}
	body := strings.NewReplacer("MAXHEAD", fmt.Sprint(maxHeadDim), "QUERY", round, "WEIGHT", round).Replace(attentionBody)
	return kernelSource("n: u32, pos: u32, heads: u32, group: u32, headDim: u32, kvDim: u32, window: u32, nonCausal: u32, context: u32, slots: u32, softCap: f32, scale: f32,",
		[]string{"q: array<f32>", "out: array<f32>", "keys: array<" + key + ">", "vals: array<" + value + ">", "scores: array<f32>"},
		reads+reduceFns+body)
}

// NewAttention makes the attention of the rows of q (heads·headDim values
// each) over layer l of cache, into the rows of out (the same shape). The
// cache's kvDim must be kvHeads·headDim.
func NewAttention(lib *Library, pass *Pass, cache *KVCache, l int, q, out Binding, s AttentionSpec) (*Attention, error) {
	switch {
	case l < 0 || l >= len(cache.slots):
		return nil, fmt.Errorf("gpu: attention: layer %d is not one of the cache's %d", l, len(cache.slots))
	case s.Heads < 1 || s.KVHeads < 1 || s.Heads%s.KVHeads != 0:
		return nil, fmt.Errorf("gpu: attention: heads %d must be a multiple of kvHeads %d", s.Heads, s.KVHeads)
	case s.HeadDim < 4 || s.HeadDim > maxHeadDim || s.HeadDim%4 != 0:
		return nil, fmt.Errorf("gpu: attention: headDim %d must be a multiple of 4, from 4 to %d", s.HeadDim, maxHeadDim)
	case s.KVHeads*s.HeadDim != cache.kvDim:
		return nil, fmt.Errorf("gpu: attention: kvHeads %d × headDim %d is not the cache's kvDim %d", s.KVHeads, s.HeadDim, cache.kvDim)
	case s.Window < 0 || s.MaxTokens < 1:
		return nil, fmt.Errorf("gpu: attention: window %d must not be negative, maxTokens %d at least 1", s.Window, s.MaxTokens)
	case !(s.Scale > 0) || !(s.SoftCap >= 0):
		return nil, fmt.Errorf("gpu: attention: scale %v must be positive, softCap %v not negative", s.Scale, s.SoftCap)
	case cache.slots[l] < cache.context && (s.Window == 0 || s.Window+s.MaxTokens-1 > cache.slots[l]):
		return nil, fmt.Errorf("gpu: attention: layer %d's %d slots hold less than its window %d and a block of maxTokens %d less one", l, cache.slots[l], s.Window, s.MaxTokens)
	}
	scores, err := cache.scores(s.MaxTokens * s.Heads * cache.context)
	if err != nil {
		return nil, err
	}
	name := "attention f32"
	if cache.f16 {
		name = "attention f16"
	}
	o, err := newOp(lib, pass, name, attentionSource(cache.f16), q, out,
		Binding{Buffer: cache.k[l]}, Binding{Buffer: cache.v[l]}, Binding{Buffer: scores})
	if err != nil {
		return nil, err
	}
	return &Attention{op: o, cache: cache, slots: cache.slots[l], spec: s, q: q, out: out}, nil
}

// Record records the attention of n tokens at positions pos..pos+n-1,
// whose keys and values are in the cache.
func (a *Attention) Record(n, pos int) error {
	s, c := a.spec, a.cache
	width := s.Heads * s.HeadDim
	if err := rowsFit("attention q", a.q, n, width); err != nil {
		return err
	}
	if err := rowsFit("attention out", a.out, n, width); err != nil {
		return err
	}
	switch {
	case n > s.MaxTokens:
		return fmt.Errorf("gpu: attention: %d tokens are more than maxTokens %d", n, s.MaxTokens)
	case pos < 0 || pos+n > c.context:
		return fmt.Errorf("gpu: attention: positions %d..%d are past the cache's %d", pos, pos+n-1, c.context)
	}
	nonCausal := 0
	if s.NonCausal {
		nonCausal = 1
	}
	for i, v := range [...]int{n, pos, s.Heads, s.Heads / s.KVHeads, s.HeadDim, c.kvDim, s.Window, nonCausal, c.context, a.slots} {
		a.params.SetU32(i, uint32(v))
	}
	a.params.SetF32(10, s.SoftCap)
	a.params.SetF32(11, s.Scale)
	a.dispatch(n * s.Heads)
	return nil
}
