package gpu

import (
	"fmt"
	"strings"
)

// The WGSL of attention (attention.go): the single kernel, a workgroup per
// token and head over every position it attends to, and the three of the
// split, whose workgroups take a chunk of p.chunkLen positions each. Every
// kernel of one attention has the same parameters (one slot); the split's
// scratch holds each chunk's softmax statistics (its maximum and Σ e^(s −
// max)) and, from p.partAt on, its partial output.

// attentionParams are the kernels' parameters, in Record's order.
const attentionParams = "n: u32, pos: u32, heads: u32, group: u32, headDim: u32, kvDim: u32, window: u32, nonCausal: u32, context: u32, slots: u32, softCap: f32, scale: f32, chunks: u32, chunkLen: u32, partAt: u32,"

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

// attentionQuery loads a head's query and scores the j-th position of
// those it attends to: q·k, soft-capped, scaled; stats is the softmax's
// statistics over positions lo..hi-1 (their maximum m and Σ e^(s − m)),
// each invocation keeping its own as it goes (an online softmax) and the
// workgroup combining them.
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
var<workgroup> part2: array<f32, WG>;
fn combine(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let m = max(a.x, b.x);
  return vec2<f32>(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}
fn reducePair(li: u32, v: vec2<f32>) -> vec2<f32> {
  part[li] = v.x;
  part2[li] = v.y;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (li < k) {
      let c = combine(vec2<f32>(part[li], part2[li]), vec2<f32>(part[li + k], part2[li + k]));
      part[li] = c.x;
      part2[li] = c.y;
    }
    workgroupBarrier();
  }
  let r = vec2<f32>(part[0], part2[0]);
  workgroupBarrier();
  return r;
}
fn stats(h: Head, lo: u32, hi: u32, li: u32) -> vec2<f32> {
  var st = vec2<f32>(lowest, 0.0);
  for (var j = lo + li; j < hi; j += WG) { st = combine(st, vec2<f32>(scoreAt(h, j), 1.0)); }
  return reducePair(li, st);
}
`

// attentionValues adds weight·v into acc over positions lo..hi-1 (at most
// WG) of a head, the weights e·inv, e the positions' exponentials in sc:
// the invocations split into slices of the head's dimensions, each slice
// taking every slices-th position. finish adds the slices' sums into res;
// chunkValues computes the exponentials of positions lo..hi-1 (any number)
// from their scores and the maximum m, WG at a time, and adds their values.
const attentionValues = `
var<workgroup> sc: array<f32, WG>;
var<workgroup> res: array<f32, MAXHEAD>;
fn accumulate(h: Head, lo: u32, hi: u32, inv: f32, li: u32, acc: ptr<function, array<f32, 4>>) {
  let span = min(p.headDim, WG);
  let slices = WG / span;
  let slice = li / span;
  let lane = li % span;
  if (slice >= slices) { return; }
  for (var j = lo + slice; j < hi; j += slices) {
    let w = WEIGHT(sc[j - lo] * inv);
    let row = ((h.first + j) % p.slots) * p.kvDim + h.kvAt;
    for (var c = 0u; c < 4u; c++) {
      let d = lane + c * span;
      if (d < p.headDim) { (*acc)[c] += w * value(row + d); }
    }
  }
}
fn finish(li: u32, acc: array<f32, 4>) {
  let span = min(p.headDim, WG);
  let slices = WG / span;
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
fn chunkValues(h: Head, lo: u32, hi: u32, m: f32, inv: f32, li: u32, acc: ptr<function, array<f32, 4>>) {
  for (var base = lo; base < hi; base += WG) {
    let j = base + li;
    var e = 0.0;
    if (j < hi) { e = exp(scoreAt(h, j) - m); }
    sc[li] = e;
    workgroupBarrier();
    accumulate(h, base, min(hi, base + WG), inv, li, acc);
    workgroupBarrier();
  }
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

// The kernels' entry points. The single kernel, for heads that attend to
// at most WG positions, scores each in an invocation, takes their maximum,
// exponentials and sum, and adds the weighted values, the exponentials
// kept in workgroup memory (the CPU's softmax, in another order of sums).
// The split's, for more: each chunk's statistics; each chunk's weighted
// values, the weights from the statistics of all its head's chunks, the
// exponentials computed again WG positions at a time (the keys are read
// twice, and no scores are kept in device memory); their sum.
const (
	mainHead = `
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
`
	mainChunk = mainHead + `
  let gi = groupIndex(wg, nwg); // (token · heads + head) · chunks + chunk
  let g = gi / p.chunks;
  if (g >= p.n * p.heads) { return; }
  let h = headOf(g);
  let lo = (gi % p.chunks) * p.chunkLen;
  if (lo >= h.count) { return; }
  let hi = min(h.count, lo + p.chunkLen);
  loadQuery(g, li);
`
	attentionSingle = mainHead + `
  let g = groupIndex(wg, nwg);
  if (g >= p.n * p.heads) { return; }
  let h = headOf(g);
  loadQuery(g, li);
  var s = lowest;
  if (li < h.count) { s = scoreAt(h, li); }
  let m = reduceMax(li, s);
  var e = 0.0;
  if (li < h.count) { e = exp(s - m); }
  sc[li] = e;
  let inv = 1.0 / reduceSum(li, e);
  var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
  accumulate(h, 0u, h.count, inv, li, &acc);
  finish(li, acc);
  for (var d = li; d < p.headDim; d += WG) { out[g * p.headDim + d] = res[d]; }
}
`
	attentionStats = mainChunk + `
  let st = stats(h, lo, hi, li);
  if (li == 0u) {
    scratch[2u * gi] = st.x;
    scratch[2u * gi + 1u] = st.y;
  }
}
`
	attentionChunkValues = mainChunk + `
  var st = vec2<f32>(lowest, 0.0);
  for (var c = li; c < (h.count + p.chunkLen - 1u) / p.chunkLen; c += WG) {
    let at = 2u * (g * p.chunks + c);
    st = combine(st, vec2<f32>(scratch[at], scratch[at + 1u]));
  }
  st = reducePair(li, st);
  var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
  chunkValues(h, lo, hi, st.x, 1.0 / st.y, li, &acc);
  finish(li, acc);
  for (var d = li; d < p.headDim; d += WG) { scratch[p.partAt + gi * p.headDim + d] = res[d]; }
}
`
	attentionCombine = mainHead + `
  let i = groupIndex(wg, nwg) * WG + li;
  if (i >= p.n * p.heads * p.headDim) { return; }
  let g = i / p.headDim;
  let d = i % p.headDim;
  let h = headOf(g);
  var s = 0.0;
  for (var c = 0u; c < (h.count + p.chunkLen - 1u) / p.chunkLen; c++) { s += scratch[p.partAt + (g * p.chunks + c) * p.headDim + d]; }
  out[i] = s;
}
`
)

// attentionKernel is one of attention's kernels: its name, its storage
// buffers of q, out, keys, values and scores, and its source.
type attentionKernel struct {
	name    string
	buffers string // of "qokvs": q, out, keys, values, scratch, in that order
	source  string
}

// attentionKernels are the single kernel and the split's three, for an
// f32 or an F16 cache.
func attentionKernels(f16 bool) (single attentionKernel, split [3]attentionKernel) {
	fns, key, value, keys, vals, round, kind := "", keyF32, valueF32, "vec4<f32>", "f32", "", "f32"
	if f16 {
		fns, key, value, keys, vals, round, kind = f16Fn, keyF16, valueF16, "vec2<u32>", "u32", "roundF16", "f16"
	}
	decl := map[byte]string{'q': "q: array<f32>", 'o': "out: array<f32>", 'k': "keys: array<" + keys + ">", 'v': "vals: array<" + vals + ">", 's': "scratch: array<f32>"}
	kernel := func(name, buffers string, parts ...string) attentionKernel {
		var bs []string
		for i := range len(buffers) {
			bs = append(bs, decl[buffers[i]])
		}
		body := strings.NewReplacer("MAXHEAD", fmt.Sprint(maxHeadDim), "QUERY", round, "WEIGHT", round).
			Replace(fns + reduceFns + attentionHead + strings.Join(parts, ""))
		return attentionKernel{name: "attention " + name + " " + kind, buffers: buffers, source: kernelSource(attentionParams, bs, body)}
	}
	single = kernel("single", "qokv", key, value, attentionQuery, attentionValues, attentionSingle)
	split = [3]attentionKernel{
		kernel("stats", "qks", key, attentionQuery, attentionStats),
		kernel("values", "qkvs", key, value, attentionQuery, attentionValues, attentionChunkValues),
		kernel("combine", "os", attentionCombine),
	}
	return single, split
}
