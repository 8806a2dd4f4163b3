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
// (f32). A thread encodes one block (one value for F16 and BF16); the
// vectors of a prompt block follow one another, so block b of the whole
// input is block b of the encoding.
const wgslEncodeHead = `
struct Params { items: u32, off_d: u32, off_s: u32, groups_x: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
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
	// encodeQ8K: the element of largest magnitude (the first of equals)
	// maps to -127: q = nearest(-127/max·x) clamped, d = 1/(-127/max).
	tensor.Q8_K: `
  var amax = 0.0;
  var vmax = 0.0;
  for (var i = 0u; i < 256u; i++) {
    let v = x[256u * b + i];
    if (abs(v) > amax) { amax = abs(v); vmax = v; }
  }
  var iscale = 0.0;
  if (amax != 0.0) { iscale = div_rn(-127.0, vmax); }
  for (var g = 0u; g < 16u; g++) {
    var sum = 0i;
    for (var k = 0u; k < 4u; k++) {
      var word = 0u;
      for (var l = 0u; l < 4u; l++) {
        let q = clamp(i32(round(iscale * x[256u * b + 16u * g + 4u * k + l])), -128i, 127i);
        sum += q;
        word |= (bitcast<u32>(q) & 0xffu) << (8u * l);
      }
      a[64u * b + 4u * g + k] = word;
    }
    a[p.off_s + 16u * b + g] = bitcast<u32>(sum);
  }
  var d = 0.0;
  if (amax != 0.0) { d = div_rn(1.0, iscale); }
  a[p.off_d + b] = bitcast<u32>(d);
`,
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

// encodeItems is how many threads encode n vectors of cols elements as enc.
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
