package gpu

// The WGSL the product kernels share, written by hand. WebGPU promises
// correctly rounded f32 addition and multiplication but not division
// (2.5 ulp) nor any rounding mode for f32 → f16 conversions, and
// implementations may flush f16 subnormals; the activation encodings must
// give the CPU's bits, so the divisions and the F16/BF16 roundings they
// need are done here with integer arithmetic.

// wgslNumbers has the exact conversions and division (and f16Fn's f16Bits).
const wgslNumbers = f16Fn + `
// f16_value decodes F16 bits exactly, subnormals included.
fn f16_value(h: u32) -> f32 {
  let s = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0u) { return bitcast<f32>(s | 0x3f800000u) * (f32(m) * 5.9604644775390625e-8); }
  if (e == 31u) { return bitcast<f32>(s | 0x7f800000u | (m << 13u)); }
  return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}

// f16_pair decodes the two F16 values of a word (low half first):
// unpack2x16float, with subnormals decoded exactly where an implementation
// would flush them.
fn f16_pair(u: u32) -> vec2<f32> {
  var v = unpack2x16float(u);
  if ((u & 0x7c00u) == 0u) { v.x = f16_value(u & 0xffffu); }
  if ((u & 0x7c000000u) == 0u) { v.y = f16_value(u >> 16u); }
  return v;
}

// round_f16 is x rounded to F16 precision (tensor.RoundF16), decoded
// without unpack2x16float, which may flush a subnormal.
fn round_f16(x: f32) -> f32 { return f16_value(f16Bits(x)); }

// round_bf16 is x rounded to BF16 precision, ties to even, NaN kept quiet
// (engine/tensor's f32ToBF16).
fn round_bf16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) { return bitcast<f32>((b | 0x400000u) & 0xffff0000u); }
  return bitcast<f32>(((b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u) << 16u);
}

// div_rn is a/b correctly rounded (ties to even) for normal, finite,
// non-zero a and b: the mantissas' quotient by long division. A quotient
// below the normal range is flushed to zero.
fn div_rn(a: f32, b: f32) -> f32 {
  let ua = bitcast<u32>(a);
  let ub = bitcast<u32>(b);
  let sign = (ua ^ ub) & 0x80000000u;
  var e = i32((ua >> 23u) & 0xffu) - i32((ub >> 23u) & 0xffu) + 127;
  let mb = (ub & 0x7fffffu) | 0x800000u;
  var r = (ua & 0x7fffffu) | 0x800000u;
  if (r < mb) { r = r << 1u; e = e - 1; }
  var q = 0u;
  for (var i = 0u; i < 25u; i++) {
    q = q << 1u;
    if (r >= mb) { r = r - mb; q = q | 1u; }
    r = r << 1u;
  }
  let up = (q & 1u) == 1u && (r != 0u || (q & 2u) == 2u);
  q = (q >> 1u) + select(0u, 1u, up);
  if (q == 0x1000000u) { q = q >> 1u; e = e + 1; }
  if (e <= 0) { return bitcast<f32>(sign); }
  if (e >= 255) { return bitcast<f32>(sign | 0x7f800000u); }
  return bitcast<f32>(sign | (u32(e) << 23u) | (q & 0x7fffffu));
}
`

// wgslWeights reads a matrix's bytes: w is the matrix as 32-bit words,
// and blocks sit at any even byte offset.
const wgslWeights = `
// u16_at is the 16 bits at byte o (even).
fn u16_at(o: u32) -> u32 { return (w[o >> 2u] >> ((o & 2u) * 8u)) & 0xffffu; }

// u32_at is the 32 bits at byte o (even).
fn u32_at(o: u32) -> u32 {
  let i = o >> 2u;
  return select((w[i] >> 16u) | (w[i + 1u] << 16u), w[i], (o & 2u) == 0u);
}

// f16_at is the F16 value at byte o (even).
fn f16_at(o: u32) -> f32 { return f16_value(u16_at(o)); }
`
