package gpu

// f16Fn converts f32 to IEEE half precision in integer arithmetic, rounding
// to the nearest, ties to even, as ggml's GGML_FP32_TO_FP16 and the
// engine's tensor.EncodeF16 do: WGSL leaves the rounding of quantizeToF16
// and pack2x16float to the implementation (SwiftShader truncates), and
// shader-f16 is not everywhere. f16Bits gives the bits (low 16 of the
// u32), roundF16 the value as f32 (unpack2x16float is exact).
const f16Fn = `
fn f16Bits(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  if (a >= 0x7f800000u) { return sign | 0x7c00u | select(0u, 0x200u, a > 0x7f800000u); }
  if (a >= 0x477ff000u) { return sign | 0x7c00u; }
  if (a < 0x38800000u) { return sign | u32(round(bitcast<f32>(a) * 16777216.0)); }
  let r = a - 0x38000000u;
  return sign | ((r + 0xfffu + ((r >> 13u) & 1u)) >> 13u);
}
fn roundF16(x: f32) -> f32 { return unpack2x16float(f16Bits(x)).x; }
`
