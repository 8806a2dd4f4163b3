package gpu

import (
	"fmt"
	"strings"
)

// The WGSL of attention (attention.go): the single kernel, a workgroup per
// token and head over every position it attends to, and the four of the
// split, whose workgroups take a chunk of WG positions each. Every kernel
// of one attention has the same parameters (one slot); the scratch buffer
// scores holds the scores (a context's row per token and head) and, from
// p.maxAt, p.invAt and p.partAt on, the split's chunks' maxima, each
// head's 1/Σ and the chunks' partial outputs.

// attentionParams are the kernels' parameters, in Record's order.
const attentionParams = "n: u32, pos: u32, heads: u32, group: u32, headDim: u32, kvDim: u32, window: u32, nonCausal: u32, context: u32, slots: u32, softCap: f32, scale: f32, chunks: u32, maxAt: u32, invAt: u32, partAt: u32,"

// attentionHead finds the positions a head attends to: g is token · heads
// + head.
const attentionHead = `
struct Head { first: u32, count: u32, kvAt: u32 } // positions first..first+count-1; the head's first key in a row
fn headOf(g: u32) -> Head {
  var last = p.pos + g / p.heads;
  if (p.nonCausal == 1u) { last = p.pos + p.n - 1u; }
  var first = 0u;
  if (p.window > 0u && last + 1u > p.window) { first = last + 1u - p.window; }
  return Head(first, last + 1u - first, ((g % p.heads) / p.group) * p.headDim);
}
const lowest = bitcast<f32>(0xff7fffffu);
`

// attentionQuery loads a head's query and scores a position j of those it
// attends to: q·k, soft-capped, scaled.
const attentionQuery = `
var<workgroup> qs: array<vec4<f32>, MAXHEAD / 4>; // the query, four values at a time
fn loadQuery(g: u32, li: u32) {
  for (var d = li; d < p.headDim; d += WG) { qs[d / 4u][d % 4u] = QUERY(q[g * p.headDim + d]); }
  workgroupBarrier();
}
fn scoreAt(h: Head, j: u32) -> f32 {
  var s = score(((h.first + j) % p.slots) * p.kvDim + h.kvAt);
  if (p.softCap > 0.0) { s = tanh(clamp(s * (1.0 / p.softCap), -10.0, 10.0)) * p.softCap; }
  return s * p.scale;
}
`

// attentionValues adds weight·v over positions lo..hi-1 of a head, the
// weights its exponentials at sa (times inv), into res: the invocations
// split into slices of the head's dimensions, each slice taking every
// slices-th position, and the slices' sums are added.
const attentionValues = `
var<workgroup> res: array<f32, MAXHEAD>;
fn weighted(h: Head, sa: u32, lo: u32, hi: u32, inv: f32, li: u32) {
  let span = min(p.headDim, WG);
  let slices = WG / span;
  let slice = li / span;
  let lane = li % span;
  var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
  if (slice < slices) {
    for (var j = lo + slice; j < hi; j += slices) {
      let w = WEIGHT(scores[sa + j] * inv);
      let row = ((h.first + j) % p.slots) * p.kvDim + h.kvAt;
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
      if (d < p.headDim) { res[d] = acc[c]; }
    }
  } else if (li < span) {
    var s = 0.0;
    for (var k = 0u; k < slices; k++) { s += part[k * span + li]; }
    res[li] = s;
  }
  workgroupBarrier();
}
`

// The reads of a key's products and a value of each cache type, keys four
// values at a time (a vec4 of f32, or of F16 in a vec2 of u32); at is a
// key's first value in the layer's buffer (a multiple of 4), i a value's.
const (
	keyF32 = `
fn score(at: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < p.headDim / 4u; d++) { s += dot(qs[d], keys[at / 4u + d]); }
  return s;
}
`
	valueF32 = `
fn value(i: u32) -> f32 { return vals[i]; }
`
	keyF16 = `
fn score(at: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < p.headDim / 4u; d++) {
    let k = keys[at / 4u + d];
    s += dot(qs[d], vec4<f32>(unpack2x16float(k.x), unpack2x16float(k.y)));
  }
  return s;
}
`
	valueF16 = `
fn value(i: u32) -> f32 {
  let v = unpack2x16float(vals[i / 2u]);
  return select(v.x, v.y, (i & 1u) == 1u);
}
`
)

// The kernels' entry points. The single kernel scores every position,
// takes the maximum, the exponentials and their sum, then the weighted
// values; the split's scores a chunk (and its maximum), then each head's
// softmax over its chunks, then each chunk's weighted values, then their
// sum.
const (
	mainHead = `
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
`
	mainChunk = mainHead + `
  let gi = groupIndex(wg, nwg); // (token · heads + head) · chunks + chunk
  let g = gi / p.chunks;
  let c = gi % p.chunks;
  if (g >= p.n * p.heads) { return; }
  let h = headOf(g);
  if (c * WG >= h.count) { return; }
`
	attentionSingle = mainHead + `
  let g = groupIndex(wg, nwg);
  if (g >= p.n * p.heads) { return; }
  let h = headOf(g);
  loadQuery(g, li);
  let sa = g * p.context;
  var m = lowest;
  for (var j = li; j < h.count; j += WG) {
    let s = scoreAt(h, j);
    scores[sa + j] = s;
    m = max(m, s);
  }
  m = reduceMax(li, m);
  var sum = 0.0;
  for (var j = li; j < h.count; j += WG) {
    let e = exp(scores[sa + j] - m);
    scores[sa + j] = e;
    sum += e;
  }
  let inv = 1.0 / reduceSum(li, sum);
  storageBarrier();
  weighted(h, sa, 0u, h.count, inv, li);
  for (var d = li; d < p.headDim; d += WG) { out[g * p.headDim + d] = res[d]; }
}
`
	attentionScores = mainChunk + `
  loadQuery(g, li);
  let j = c * WG + li;
  var m = lowest;
  if (j < h.count) {
    let s = scoreAt(h, j);
    scores[g * p.context + j] = s;
    m = s;
  }
  m = reduceMax(li, m);
  if (li == 0u) { scores[p.maxAt + gi] = m; }
}
`
	attentionSoftmax = mainHead + `
  let g = groupIndex(wg, nwg);
  if (g >= p.n * p.heads) { return; }
  let h = headOf(g);
  var m = lowest;
  for (var c = li; c < (h.count + WG - 1u) / WG; c += WG) { m = max(m, scores[p.maxAt + g * p.chunks + c]); }
  m = reduceMax(li, m);
  let sa = g * p.context;
  var sum = 0.0;
  for (var j = li; j < h.count; j += WG) {
    let e = exp(scores[sa + j] - m);
    scores[sa + j] = e;
    sum += e;
  }
  sum = reduceSum(li, sum);
  if (li == 0u) { scores[p.invAt + g] = 1.0 / sum; }
}
`
	attentionChunkValues = mainChunk + `
  weighted(h, g * p.context, c * WG, min(h.count, (c + 1u) * WG), scores[p.invAt + g], li);
  for (var d = li; d < p.headDim; d += WG) { scores[p.partAt + gi * p.headDim + d] = res[d]; }
}
`
	attentionCombine = mainHead + `
  let i = groupIndex(wg, nwg) * WG + li;
  if (i >= p.n * p.heads * p.headDim) { return; }
  let g = i / p.headDim;
  let d = i % p.headDim;
  let h = headOf(g);
  var s = 0.0;
  for (var c = 0u; c < (h.count + WG - 1u) / WG; c++) { s += scores[p.partAt + (g * p.chunks + c) * p.headDim + d]; }
  out[i] = s;
}
`
)

// attentionKernel is one of attention's kernels: its name, its storage
// buffers of q, out, keys, values and scores, and its source.
type attentionKernel struct {
	name    string
	buffers string // of "qokvs": q, out, keys, values, scores, in that order
	source  string
}

// attentionKernels are the single kernel and the split's four, for an f32
// or an F16 cache.
func attentionKernels(f16 bool) (single attentionKernel, split [4]attentionKernel) {
	fns, key, value, keys, vals, round, kind := "", keyF32, valueF32, "vec4<f32>", "f32", "", "f32"
	if f16 {
		fns, key, value, keys, vals, round, kind = f16Fn, keyF16, valueF16, "vec2<u32>", "u32", "roundF16", "f16"
	}
	decl := map[byte]string{'q': "q: array<f32>", 'o': "out: array<f32>", 'k': "keys: array<" + keys + ">", 'v': "vals: array<" + vals + ">", 's': "scores: array<f32>"}
	kernel := func(name, buffers string, parts ...string) attentionKernel {
		var bs []string
		for i := range len(buffers) {
			bs = append(bs, decl[buffers[i]])
		}
		body := strings.NewReplacer("MAXHEAD", fmt.Sprint(maxHeadDim), "QUERY", round, "WEIGHT", round).
			Replace(fns + reduceFns + attentionHead + strings.Join(parts, ""))
		return attentionKernel{name: "attention " + name + " " + kind, buffers: buffers, source: kernelSource(attentionParams, bs, body)}
	}
	single = kernel("single", "qokvs", key, attentionQuery, value, attentionValues, attentionSingle)
	split = [4]attentionKernel{
		kernel("scores", "qks", key, attentionQuery, attentionScores),
		kernel("softmax", "s", attentionSoftmax),
		kernel("values", "vs", value, attentionValues, attentionChunkValues),
		kernel("combine", "os", attentionCombine),
	}
	return single, split
}
