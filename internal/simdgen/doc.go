// Package simdgen emits kernels.wasm, the WebAssembly SIMD128 module whose
// kernels engine/tensor calls (through //go:wasmimport, in builds with the
// wasmlm_simd tag) in place of its pure-Go ones: the matrix–vector products
// of F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K and
// MXFP4 weights (Q4_1's and Q5_1's in matvec_mins.go, Q5_K's Q4_K's kernel
// with fifth bits), their batched products with a block of prompt tokens
// (matmul_*, matmul.go and matmul_float.go: each block of weights decoded
// once for all the tokens; Q4_1's, Q5_1's and Q5_K's in matmul_mins.go)
// and those of Q2_K and Q3_K weights (matmul_q2_k.go, which alone serve a
// single vector too), the Q8_0 and Q8_K encoders of the
// activation, the two products of attention over the KV cache, and the
// decoder of an F16 KV cache's rows (attention over it decodes a chunk of
// positions once and runs the F32 products over it); and the glue between
// the products whose scalar loops cost most in Go's WebAssembly (softmax.go,
// rows.go): softmax and SwiGLU, with fmath.Exp64's e^x in f64x2 lanes; ggml's GELU by
// table; the rounding and encoding of float32 to F16; a vector's sum with
// another; LayerNorm. Together they took a MiniLM-L6 embedding of 256
// tokens under Node from 3.4 to 7.3 a second.
//
// The module imports the Go instance's own memory and the Go side passes
// byte offsets of the weights, the activation and the output, so nothing is
// copied. Every kernel computes exactly the bits of its pure-Go
// counterpart (the matrix–vector kernels of Q8_0, Q4_0, Q5_0, Q4_1 and
// Q5_1 where their F16 block scales are finite, the only matrices
// engine/tensor gives them: f16ToF32Finite): the integer part of a quantized dot product is exact in any
// order, and the float operations are the pure-Go ones in the pure-Go
// order, with four rows in the four lanes of an f32x4 (the F32-like kernels
// keep the pure-Go four partial sums of one row in the lanes instead); a
// batched kernel computes each of its vectors exactly as the matrix–vector
// kernel would. WebAssembly SIMD has no fused multiply-add, so every
// product is rounded before it is added, as in Go.
//
// RelaxedModule emits the same kernels as kernels-relaxed.wasm for engines
// with WebAssembly relaxed SIMD (Chromium since 114, workerd, Node 22 and
// later, Node 20 with --experimental-wasm-relaxed-simd): there the matrix–vector kernels of
// Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K keep their 4- to 6-bit quants as bytes and multiply
// them with the activation bytes by i16x8.relaxed_dot_i8x16_i7x16_s
// (x86's pmaddubsw), where the plain kernels widen both to int16 first
// (Q8_0's too, its operands made so: see below). Its result is
// implementation-defined only where the second operand has its top bit
// set, which these quants (0..63, Q8_0's |x| ≤ 127) never do, and no pair
// of products can saturate int16: the same bits on every engine. Measured
// under Node on 2048×768 matrices: Q4_0 and Q4_K 1.43 times the plain
// kernels' GFLOP/s (26 → 37), Q5_0 1.3–1.5 times (its fifth bits picked
// per byte by i8x16.shuffle and tested by i8x16.eq), Q6_K 1.17 times
// (15 → 17.6). Q4_1's, Q5_1's and Q5_K's matrix–vector kernels, measured
// on 4 December 2026 against the batched kernels with one vector that
// served single vectors before (BenchmarkMatVec, 2048×768, Node 20, two
// cores shared with other work, so in GFLOP/s of the process's CPU time
// over 20000 products), plain → relaxed: Q4_1 18.7 → 19.3 and 19.0 → 25.7,
// Q5_1 11.4 → 11.6 and 11.3 → 14.0, Q5_K 11.7 → 13.2 and 11.4 → 19.2;
// and the plain 5-bit block dot made its quants as bytes the way the
// relaxed one does, which took Q5_0's plain kernel from 8.9 to 12.4. The batched
// matmul_q4_0, matmul_q5_0 and matmul_q4_k keep their decoded quants as
// bytes too, four rows' elements interleaved by fours (matmulType.byteOffset
// and quadsK), so that one relaxed dot serves the four rows: 1.1–1.2 times
// the plain ones (TinyLlama's prompt under Node: Q4_0 20 → 24.7 tokens/s,
// Q4_K 22.7 → 27.4). Q5_0's 5-bit quants (their fifth bits picked per byte
// as in its matrix–vector kernel) are widened to int32 every four relaxed
// dots rather than eight: 1.47 times the plain kernel's GFLOP/s on
// 2048×768 and 32 vectors (48.9 → 71.9), 1.19 times on TinyLlama's
// 2048×5632 (37.6 → 44.9; Node 20, both modules on one memory and timed
// interleaved, 2 shared cores, 2026-12-04). matmul_q6_k keeps its 6-bit
// quants (0..63; the offset 32 comes off through the activation's block
// sums) as bytes in quads too, each 16-element sub-block's scales of the
// four rows as an i16x8 that i32x4.dot_i16x8_s applies to every two
// relaxed dots' int16 sums (four products of at most 63·128: 32256) as it
// widens them: 1.36–1.39 times the plain kernel's GFLOP/s on 2048×768 and
// 32 vectors (46–48 → 63–66), 1.6–1.8 times on 2048×5632 (35–39 → 63–64),
// the same conditions. tools/simd_ab.mjs is that measurement, for any
// batched kernel of two modules.
//
// Q8_0's relaxed matvec_q8_0 moves each activation quant's sign onto the
// weight quant it multiplies: Σw·x = Σ(±w)·|x|, |x| in 0..127 as
// relaxed_dot needs, ±w = (w XOR m) − m with m = (x < 0), made with |x|
// once per block for the four rows, so one relaxed dot takes sixteen
// products (pairs of at most 127·128 fit int16) and an extadd widens them.
// It holds for quants in -127..127, which ggml's quantizers and the
// activation's encoder keep to; engine/tensor gives the kernel no matrix or
// activation with a -128 quant (its minQuants). The plain kernel's
// sign extensions and i32x4.dot_i16x8_s take 15 instructions for a row's
// 32 products, this one 11. TinyLlama's shape in Q8_0 decodes at 7.2 → 8.1
// tokens/s in Chromium 156 (2 shared cores, 2026-12-06). Two kernels that
// split one operand instead were measured and left out, both with two
// dots per sixteen products: with each activation byte x as x&127 and
// x<0 (Σw·x = Σw·(x&127) − 128·Σ_{x<0} w), 0.97–1.01 times the plain
// kernel; matmul_q8_0 with each weight byte as the two nibbles h, l of w
// XOR 0x80 (Σw·x = 16·Σh·x + Σl·x − 128·Σx), 0.73 times (51.6 → 37.7
// GFLOP/s; 0.71 on 2048×5632).
//
// The hosts (web/simd.js) use it where the engine validates relaxed SIMD and fall
// back to kernels.wasm. i32x4.relaxed_dot_i8x16_i7x16_add_s is not used:
// Node 20's V8 computes it wrongly (twice the products, no addend).
//
// The kernels are Go code that emits instructions with internal/wasmgen
// (its package comment says why not WebAssembly text); `go generate
// ./internal/simdgen` writes the module to kernels.wasm, which is
// committed, and a test fails if regenerating would change it. Nothing
// imports this package: it is a build tool, and the hosts load the module
// it wrote.
//
// V8 makes each v128.const anew at each use, three instructions on x64,
// even inside a loop; the matrix–vector kernels read their loops'
// constants (the nibble mask, the finite F16 decode's two) from mutable
// globals into locals before the loops instead (hoistConstants), which V8
// cannot fold and keeps in registers: TinyLlama's shape in Q4_0 decoded
// 3–4% faster in Chromium 156, Q8_0 about 2%.
//
// V8 schedules a long basic block with no regard for register pressure, so
// the kernels loop over sub-blocks rather than unroll them (unrolled, Q4_K
// ran at 13 GFLOP/s instead of 31, spilling). It places a block's loads
// first, in program order, and the arithmetic on them as late as it can: a
// store between two groups of loads makes it finish the first group's
// arithmetic before it loads the second (the batched kernels send a pair
// of rows' sums through memory so: 49 GFLOP/s for Q8_0 instead of 38).
// Small inner loops it unrolls itself, up to five times, more readily the
// deeper they nest (a loop over the two pairs of rows only reached 43).
// x86 has no byte shifts: V8 emulates i8x16.shl and i8x16.shr_u with
// word shifts and masks, and a shift by a variable count costs several
// instructions more, so where only some bits of each byte are kept the
// kernels shift int16 lanes (Q5_K's relaxed kernel, shifting its fifth
// bits by 2c with i8x16.shr_u, ran at 12 GFLOP/s, with i16x8.shr_u 19).
// `node --print-wasm-code --no-liftoff` shows what it made of a kernel.
package simdgen

//go:generate go run gen.go
