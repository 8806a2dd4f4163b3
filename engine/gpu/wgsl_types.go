package gpu

import "github.com/wasmlm/wasmlm/engine/tensor"

// kernelType is how the product kernels read one storage type: the WGSL
// of a chunk of a row (its struct K, load_chunk and dot_chunk), how many
// elements a chunk holds and how the activation is encoded for it
// (engine/tensor's traits.vec).
type kernelType struct {
	enc   tensor.Type // F32, F16, BF16, Q8_0, Q8_1 or Q8_K
	chunk int         // elements per chunk: 32 for the quantized types, 8 for floats
	code  string
}

// Every chunk function reads the row at byte offset ro, chunk c, and dots
// it with token t's encoded activation: the integer sums within a block
// are the CPU's (dot4I8Packed over the same quants), then scaled as the
// CPU scales them. A K-quant chunk is one sub-block of 32 of a
// super-block, its integer sum scaled on its own (the CPU scales a whole
// super-block's sum), which changes only the rounding of the float sum.
var kernelTypes = map[tensor.Type]kernelType{
	tensor.F32: {tensor.F32, 8, `
struct K { v: array<f32, 8> }
fn load_chunk(ro: u32, c: u32) -> K {
  let b = ro / 4u + c * 8u;
  var k: K;
  for (var i = 0u; i < 8u; i++) { k.v[i] = bitcast<f32>(w[b + i]); }
  return k;
}
fn dot_chunk(k: K, t: u32, c: u32) -> f32 {
  var s = 0.0;
  for (var i = 0u; i < 8u; i++) { s += k.v[i] * xf(t, c, i); }
  return s;
}
`},
	tensor.F16: {tensor.F16, 8, `
struct K { v: array<vec2<f32>, 4> }
fn load_chunk(ro: u32, c: u32) -> K {
  let b = ro / 4u + c * 4u;
  var k: K;
  for (var i = 0u; i < 4u; i++) { k.v[i] = f16_pair(w[b + i]); }
  return k;
}
fn dot_chunk(k: K, t: u32, c: u32) -> f32 {
  var s = 0.0;
  for (var i = 0u; i < 4u; i++) { s += k.v[i].x * xf(t, c, 2u * i) + k.v[i].y * xf(t, c, 2u * i + 1u); }
  return s;
}
`},
	tensor.BF16: {tensor.BF16, 8, `
struct K { v: array<u32, 4> }
fn load_chunk(ro: u32, c: u32) -> K {
  let b = ro / 4u + c * 4u;
  var k: K;
  for (var i = 0u; i < 4u; i++) { k.v[i] = w[b + i]; }
  return k;
}
fn dot_chunk(k: K, t: u32, c: u32) -> f32 {
  var s = 0.0;
  for (var i = 0u; i < 4u; i++) {
    s += bitcast<f32>(k.v[i] << 16u) * xf(t, c, 2u * i) + bitcast<f32>(k.v[i] & 0xffff0000u) * xf(t, c, 2u * i + 1u);
  }
  return s;
}
`},
	tensor.Q8_0: {tensor.Q8_0, 32, `
struct K { d: f32, q: array<u32, 8> }
fn load_chunk(ro: u32, c: u32) -> K {
  let o = ro + c * 34u;
  var k: K;
  k.d = f16_at(o);
  k.q = load8(o + 2u);
  return k;
}
fn dot_chunk(k: K, t: u32, c: u32) -> f32 { return (k.d * xd32(t, c)) * f32(dot8(k.q, t, c)); }
`},
	tensor.Q4_0: {tensor.Q8_0, 32, `
struct K { d: f32, q: array<u32, 4> }
fn load_chunk(ro: u32, c: u32) -> K {
  let o = ro + c * 18u;
  var k: K;
  k.d = f16_at(o);
  k.q = load4(o + 2u);
  return k;
}
fn dot_chunk(k: K, t: u32, c: u32) -> f32 {
  return (k.d * xd32(t, c)) * f32(dot_nibbles(k.q, t, c) - 8i * bitcast<i32>(xs32(t, c)));
}
`},
	tensor.Q4_1: {tensor.Q8_1, 32, `
struct K { d: f32, m: f32, q: array<u32, 4> }
fn load_chunk(ro: u32, c: u32) -> K {
  let o = ro + c * 20u;
  var k: K;
  k.d = f16_at(o);
  k.m = f16_at(o + 2u);
  k.q = load4(o + 4u);
  return k;
}
fn dot_chunk(k: K, t: u32, c: u32) -> f32 {
  return (k.d * xd32(t, c)) * f32(dot_nibbles(k.q, t, c)) + k.m * bitcast<f32>(xs32(t, c));
}
`},
	tensor.Q5_0: {tensor.Q8_0, 32, `
struct K { d: f32, q: array<u32, 8> }
fn load_chunk(ro: u32, c: u32) -> K {
  let o = ro + c * 22u;
  var k: K;
  k.d = f16_at(o);
  k.q = quants5(u32_at(o + 2u), o + 6u);
  return k;
}
fn dot_chunk(k: K, t: u32, c: u32) -> f32 {
  return (k.d * xd32(t, c)) * f32(dot8(k.q, t, c) - 16i * bitcast<i32>(xs32(t, c)));
}
`},
	tensor.Q5_1: {tensor.Q8_1, 32, `
struct K { d: f32, m: f32, q: array<u32, 8> }
fn load_chunk(ro: u32, c: u32) -> K {
  let o = ro + c * 24u;
  var k: K;
  k.d = f16_at(o);
  k.m = f16_at(o + 2u);
  k.q = quants5(u32_at(o + 4u), o + 8u);
  return k;
}
fn dot_chunk(k: K, t: u32, c: u32) -> f32 {
  return (k.d * xd32(t, c)) * f32(dot8(k.q, t, c)) + k.m * bitcast<f32>(xs32(t, c));
}
`},
	tensor.Q2_K: {tensor.Q8_K, 32, `
struct K { d: f32, dmin: f32, sc: u32, q: array<u32, 8> }
fn load_chunk(ro: u32, c: u32) -> K {
  let j = c % 8u;
  let o = ro + (c / 8u) * 84u;
  var k: K;
  k.d = f16_at(o + 80u);
  k.dmin = f16_at(o + 82u);
  k.sc = u16_at(o + 2u * j);
  let qo = o + 16u + 32u * (j / 4u);
  let sh = 2u * (j % 4u);
  let qs = load8(qo);
  for (var i = 0u; i < 8u; i++) { k.q[i] = (qs[i] >> sh) & 0x03030303u; }
  return k;
}
fn dot_chunk(k: K, t: u32, c: u32) -> f32 {
  let s = halves(k.q, t, c);
  let dx = xd256(t, c);
  let isum = i32(k.sc & 0xfu) * s.x + i32((k.sc >> 8u) & 0xfu) * s.y;
  let msum = i32((k.sc >> 4u) & 0xfu) * xbs(t, c, 0u) + i32(k.sc >> 12u) * xbs(t, c, 1u);
  return (k.d * dx) * f32(isum) - (k.dmin * dx) * f32(msum);
}
`},
	tensor.Q3_K: {tensor.Q8_K, 32, `
struct K { d: f32, sa: i32, sb: i32, q: array<u32, 8> }
fn load_chunk(ro: u32, c: u32) -> K {
  let j = c % 8u;
  let o = ro + (c / 8u) * 110u;
  var k: K;
  k.d = f16_at(o + 108u);
  k.sa = q3k_scale(2u * j, o + 96u);
  k.sb = q3k_scale(2u * j + 1u, o + 96u);
  let qo = o + 32u + 32u * (j / 4u);
  let sh = 2u * (j % 4u);
  let qs = load8(qo);
  let hm = load8(o);
  for (var i = 0u; i < 8u; i++) {
    k.q[i] = ((qs[i] >> sh) & 0x03030303u) | (((hm[i] >> j) & 0x01010101u) << 2u);
  }
  return k;
}
fn dot_chunk(k: K, t: u32, c: u32) -> f32 {
  let s = halves(k.q, t, c);
  let isum = k.sa * (s.x - 4i * xbs(t, c, 0u)) + k.sb * (s.y - 4i * xbs(t, c, 1u));
  return (k.d * xd256(t, c)) * f32(isum);
}
`},
	tensor.Q4_K: {tensor.Q8_K, 32, `
struct K { d: f32, dmin: f32, sm: vec2<u32>, q: array<u32, 8> }
fn load_chunk(ro: u32, c: u32) -> K {
  let j = c % 8u;
  let o = ro + (c / 8u) * 144u;
  var k: K;
  k.d = f16_at(o);
  k.dmin = f16_at(o + 2u);
  k.sm = scale_min_k4(j, o + 4u);
  let qo = o + 16u + 32u * (j / 2u);
  let sh = 4u * (j & 1u);
  let qs = load8(qo);
  for (var i = 0u; i < 8u; i++) { k.q[i] = (qs[i] >> sh) & 0x0f0f0f0fu; }
  return k;
}
fn dot_chunk(k: K, t: u32, c: u32) -> f32 { return dot_scale_min(k.d, k.dmin, k.sm, k.q, t, c); }
`},
	tensor.Q5_K: {tensor.Q8_K, 32, `
struct K { d: f32, dmin: f32, sm: vec2<u32>, q: array<u32, 8> }
fn load_chunk(ro: u32, c: u32) -> K {
  let j = c % 8u;
  let o = ro + (c / 8u) * 176u;
  var k: K;
  k.d = f16_at(o);
  k.dmin = f16_at(o + 2u);
  k.sm = scale_min_k4(j, o + 4u);
  let qo = o + 48u + 32u * (j / 2u);
  let sh = 4u * (j & 1u);
  let qs = load8(qo);
  let qh = load8(o + 16u);
  for (var i = 0u; i < 8u; i++) {
    k.q[i] = ((qs[i] >> sh) & 0x0f0f0f0fu) | (((qh[i] >> j) & 0x01010101u) << 4u);
  }
  return k;
}
fn dot_chunk(k: K, t: u32, c: u32) -> f32 { return dot_scale_min(k.d, k.dmin, k.sm, k.q, t, c); }
`},
	tensor.Q6_K: {tensor.Q8_K, 32, `
struct K { d: f32, sa: i32, sb: i32, q: array<u32, 8> }
fn load_chunk(ro: u32, c: u32) -> K {
  let j = c % 8u;
  let o = ro + (c / 8u) * 210u;
  let h = j / 4u;
  let p = j % 4u;
  var k: K;
  k.d = f16_at(o + 208u);
  let sc = u16_at(o + 192u + 2u * j);
  k.sa = bitcast<i32>(sc << 24u) >> 24u;
  k.sb = bitcast<i32>(sc << 16u) >> 24u;
  let ls = 4u * (p >> 1u);
  let ql = load8(o + 64u * h + 32u * (p & 1u));
  let qh = load8(o + 128u + 32u * h);
  for (var i = 0u; i < 8u; i++) {
    k.q[i] = ((ql[i] >> ls) & 0x0f0f0f0fu) | (((qh[i] >> (2u * p)) & 0x03030303u) << 4u);
  }
  return k;
}
fn dot_chunk(k: K, t: u32, c: u32) -> f32 {
  let s = halves(k.q, t, c);
  let isum = k.sa * (s.x - 32i * xbs(t, c, 0u)) + k.sb * (s.y - 32i * xbs(t, c, 1u));
  return (k.d * xd256(t, c)) * f32(isum);
}
`},
}

// wgslQuants has the bit helpers of the quantized types.
const wgslQuants = `
// fifth_bits spreads the low 4 bits of h to bit 4 of each byte (the 5th
// bits of Q5_0/Q5_1 quants).
fn fifth_bits(h: u32) -> u32 {
  return ((h & 1u) | ((h & 2u) << 7u) | ((h & 4u) << 14u) | ((h & 8u) << 21u)) << 4u;
}

// u8_at is the byte at o.
fn u8_at(o: u32) -> u32 { return (w[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu; }

// scale_min_k4 is sub-block j's 6-bit scale and min from the 12 bytes at
// o of a Q4_K/Q5_K super-block (engine/tensor's scaleMinK4).
fn scale_min_k4(j: u32, o: u32) -> vec2<u32> {
  if (j < 4u) { return vec2<u32>(u8_at(o + j) & 63u, u8_at(o + j + 4u) & 63u); }
  let b = u8_at(o + j + 4u);
  return vec2<u32>((b & 0xfu) | ((u8_at(o + j - 4u) >> 6u) << 4u), (b >> 4u) | ((u8_at(o + j) >> 6u) << 4u));
}

// dot8 is the integer dot product of 32 int8 quants (8 words) with chunk
// c of token t's quants.
fn dot8(q: array<u32, 8>, t: u32, c: u32) -> i32 {
  var s = 0i;
  for (var i = 0u; i < 8u; i++) { s += dot4I8Packed(q[i], xq(t, c, i)); }
  return s;
}

// halves is dot8 of the two halves of 16 apart (the sub-blocks of 16 of
// Q2_K, Q3_K and Q6_K).
fn halves(q: array<u32, 8>, t: u32, c: u32) -> vec2<i32> {
  var s = vec2<i32>(0i, 0i);
  for (var i = 0u; i < 4u; i++) {
    s.x += dot4I8Packed(q[i], xq(t, c, i));
    s.y += dot4I8Packed(q[i + 4u], xq(t, c, i + 4u));
  }
  return s;
}

// q3k_scale is scale k of a Q3_K super-block, minus 32, from the 12 bytes
// at o (engine/tensor's q3KScales).
fn q3k_scale(k: u32, o: u32) -> i32 {
  let lo = (u8_at(o + k % 8u) >> (4u * (k / 8u))) & 0xfu;
  let hi = (u8_at(o + 8u + k % 4u) >> (2u * (k / 4u))) & 3u;
  return i32(lo | (hi << 4u)) - 32i;
}

// dot_nibbles is dot8 for 32 4-bit quants: element j in the low nibble of
// byte j, element j+16 in its high nibble (Q4_0, Q4_1).
fn dot_nibbles(q: array<u32, 4>, t: u32, c: u32) -> i32 {
  var s = 0i;
  for (var i = 0u; i < 4u; i++) {
    s += dot4I8Packed(q[i] & 0x0f0f0f0fu, xq(t, c, i)) + dot4I8Packed((q[i] >> 4u) & 0x0f0f0f0fu, xq(t, c, i + 4u));
  }
  return s;
}

// load4 is the 4 words at byte o (even): 5 words read, and for an o ≡ 2
// (mod 4) each put together from the halves of two.
fn load4(o: u32) -> array<u32, 4> {
  let i = o >> 2u;
  let odd = (o & 2u) != 0u;
  var r: array<u32, 4>;
  var prev = w[i];
  for (var k = 0u; k < 4u; k++) {
    let next = w[i + k + 1u];
    r[k] = select(prev, (prev >> 16u) | (next << 16u), odd);
    prev = next;
  }
  return r;
}

// load8 is load4 for 8 words (9 read).
fn load8(o: u32) -> array<u32, 8> {
  let i = o >> 2u;
  let odd = (o & 2u) != 0u;
  var r: array<u32, 8>;
  var prev = w[i];
  for (var k = 0u; k < 8u; k++) {
    let next = w[i + k + 1u];
    r[k] = select(prev, (prev >> 16u) | (next << 16u), odd);
    prev = next;
  }
  return r;
}

// quants5 is the 32 5-bit quants of a Q5_0/Q5_1 block, element order: 5th
// bits qh, low nibbles at byte qs.
fn quants5(qh: u32, qs: u32) -> array<u32, 8> {
  var q: array<u32, 8>;
  let lo = load4(qs);
  for (var i = 0u; i < 4u; i++) {
    let v = lo[i];
    q[i] = (v & 0x0f0f0f0fu) | fifth_bits(qh >> (4u * i));
    q[i + 4u] = ((v >> 4u) & 0x0f0f0f0fu) | fifth_bits(qh >> (16u + 4u * i));
  }
  return q;
}

// dot_scale_min is a Q4_K/Q5_K sub-block's part of the dot product:
// d·dx·sc·Σq·x_q − dmin·dx·m·Σx_q.
fn dot_scale_min(d: f32, dmin: f32, sm: vec2<u32>, q: array<u32, 8>, t: u32, c: u32) -> f32 {
  let dx = xd256(t, c);
  return (d * dx) * f32(i32(sm.x) * dot8(q, t, c)) - (dmin * dx) * f32(i32(sm.y) * (xbs(t, c, 0u) + xbs(t, c, 1u)));
}
`
