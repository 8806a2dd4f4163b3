package gpu

import (
	"fmt"
	"strings"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// encodeThreads is the encoding kernels' workgroup size.
const encodeThreads = 64

// The activation encodings, as engine/tensor's Workspace.encode makes
// them, into one buffer of 32-bit words a: for Q8_0 and Q8_1 the quants
// (four to a word, element order), at off_d each block's scale rounded to
// F16 and at off_s its Σq (Q8_0, i32) or s = fp16(d·Σq) (Q8_1, f32); for
// Q8_K the quants, at off_d each super-block's scale and at off_s its
// sums per 16 (i32); for F16 and BF16 the values rounded to that type
// (f32). A thread encodes one block of 32 (one value for F16 and BF16; a
// workgroup one Q8_K super-block); the vectors of a prompt block follow
// one another, so block b of the whole input is block b of the encoding.
const wgslEncodeHead = `
struct Params { items: u32, off_d: u32, off_s: u32, groups_x: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>; // read_write: x may share a buffer with writable ranges
@group(0) @binding(2) var<storage, read_write> a: array<u32>;

@compute @workgroup_size(THREADSu)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = (wg.x + wg.y * p.groups_x) * THREADSu + lid;
  if (b >= p.items) { return; }
ENCODE
}
`

var wgslEncodes = map[tensor.Type]string{
	// encodeQ8_0 and encodeQ8_1: d = max|x|/127, q = round(x·(127/max|x|))
	// halves to even, clamped to [-128, 127].
	tensor.Q8_0: wgslEncodeQ8,
	tensor.Q8_1: wgslEncodeQ8,
	tensor.F16:  `  a[b] = bitcast<u32>(round_f16(x[b]));`,
	tensor.BF16: `  a[b] = bitcast<u32>(round_bf16(x[b]));`,
}

const wgslEncodeQ8 = `
  var amax = 0.0;
  for (var i = 0u; i < 32u; i++) { amax = max(amax, abs(x[32u * b + i])); }
  var d = 0.0;
  var id = 0.0;
  if (amax != 0.0) {
    d = div_rn(amax, 127.0);
    id = div_rn(127.0, amax);
  }
  var sum = 0i;
  for (var k = 0u; k < 8u; k++) {
    var word = 0u;
    for (var l = 0u; l < 4u; l++) {
      let q = clamp(i32(round(x[32u * b + 4u * k + l] * id)), -128i, 127i);
      sum += q;
      word |= (bitcast<u32>(q) & 0xffu) << (8u * l);
    }
    a[8u * b + k] = word;
  }
  a[p.off_d + b] = bitcast<u32>(round_f16(d));
  SUM
`

// wgslEncodeQ8K is encodeQ8K, a workgroup of 64 threads per super-block,
// each thread four elements (one word of quants): the element of largest
// magnitude (the first of equals) maps to -127, q = nearest(-127/max·x)
// clamped, d = 1/(-127/max). The largest is found in two ordered steps
// (eight threads each take eight threads' firsts, then one takes theirs),
// so that "first" is the CPU's.
const wgslEncodeQ8K = `
struct Params { items: u32, off_d: u32, off_s: u32, groups_x: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>; // read_write: x may share a buffer with writable ranges
@group(0) @binding(2) var<storage, read_write> a: array<u32>;

var<workgroup> firsts: array<f32, 64>; // each thread's first largest element
var<workgroup> eighths: array<f32, 8>;
var<workgroup> sums: array<i32, 64>;

fn first_largest(v: f32, m: f32) -> f32 { return select(m, v, abs(v) > abs(m)); }

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = wg.x + wg.y * p.groups_x;
  let live = b < p.items;
  var v = vec4<f32>(0.0);
  if (live) { v = vec4<f32>(x[256u * b + 4u * lid], x[256u * b + 4u * lid + 1u], x[256u * b + 4u * lid + 2u], x[256u * b + 4u * lid + 3u]); }
  firsts[lid] = first_largest(v.w, first_largest(v.z, first_largest(v.y, first_largest(v.x, 0.0))));
  workgroupBarrier();
  if (lid < 8u) {
    var m = 0.0;
    for (var k = 0u; k < 8u; k++) { m = first_largest(firsts[8u * lid + k], m); }
    eighths[lid] = m;
  }
  workgroupBarrier();
  var vmax = 0.0;
  for (var k = 0u; k < 8u; k++) { vmax = first_largest(eighths[k], vmax); }
  var iscale = 0.0;
  if (vmax != 0.0) { iscale = div_rn(-127.0, vmax); }
  var word = 0u;
  var sum = 0i;
  for (var l = 0u; l < 4u; l++) {
    let q = clamp(i32(round(iscale * v[l])), -128i, 127i);
    sum += q;
    word |= (bitcast<u32>(q) & 0xffu) << (8u * l);
  }
  sums[lid] = sum;
  workgroupBarrier();
  if (!live) { return; }
  a[64u * b + lid] = word;
  if (lid % 4u == 0u) { a[p.off_s + 16u * b + lid / 4u] = bitcast<u32>(sums[lid] + sums[lid + 1u] + sums[lid + 2u] + sums[lid + 3u]); }
  if (lid == 0u) {
    var d = 0.0;
    if (vmax != 0.0) { d = div_rn(1.0, iscale); }
    a[p.off_d + b] = bitcast<u32>(d);
  }
}
`

// encodeGroups is how many workgroups encode items as enc: a workgroup per
// Q8_K super-block, a thread per item otherwise.
func encodeGroups(enc tensor.Type, items int) int {
	if enc == tensor.Q8_K {
		return items
	}
	return (items + encodeThreads - 1) / encodeThreads
}

// encodeItems is how many threads encode n vectors of cols elements as enc
// (Q8_K: how many super-blocks).
func encodeItems(enc tensor.Type, n, cols int) int {
	switch enc {
	case tensor.Q8_0, tensor.Q8_1:
		return n * cols / 32
	case tensor.Q8_K:
		return n * cols / 256
	}
	return n * cols
}

// encodeSource is the WGSL of the kernel encoding activations as enc.
func encodeSource(enc tensor.Type) (string, error) {
	if enc == tensor.Q8_K {
		return wgslEncodeQ8K + wgslNumbers, nil
	}
	body, ok := wgslEncodes[enc]
	if !ok {
		return "", fmt.Errorf("%w: no activation encoding %v", ErrUnsupported, enc)
	}
	sum := `a[p.off_s + b] = bitcast<u32>(sum);`
	if enc == tensor.Q8_1 {
		sum = `a[p.off_s + b] = bitcast<u32>(round_f16(d * f32(sum)));`
	}
	src := strings.NewReplacer("ENCODE", body, "THREADSu", fmt.Sprint(encodeThreads, "u")).Replace(wgslEncodeHead)
	return strings.Replace(src, "SUM", sum, 1) + wgslNumbers, nil
}
