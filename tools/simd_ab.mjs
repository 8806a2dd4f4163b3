// Times a batched kernel (matmul_*) of two kernel modules side by side, as
// the Go side calls it (internal/simdgen's batch descriptor), on one
// memory: random weights (their fp16 scales finite), random encoded
// vectors. It first checks that both give the same bits, then alternates
// the two, keeping each one's best time: on a loaded machine single timings
// say little.
//
//   node --experimental-wasm-relaxed-simd tools/simd_ab.mjs KERNEL [ROWS COLS VECTORS [A.wasm B.wasm]]
//   node --experimental-wasm-relaxed-simd tools/simd_ab.mjs matmul_q6_k 2048 5632 32
//
// A and B default to internal/simdgen's kernels.wasm and
// kernels-relaxed.wasm; TRIALS (default 100) sets how many alternations.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

// Per kernel: the weight block's bytes and elements, the offsets of its
// fp16 scales, and the activation's encoding (Q8_0: 32 quants a block, a
// float32 scale and Σq; Q8_K: 256, a float32 scale, sixteen int16 sums).
const kernels = {
  matmul_q8_0: { bytes: 34, elems: 32, halves: [0] },
  matmul_q4_0: { bytes: 18, elems: 32, halves: [0] },
  matmul_q5_0: { bytes: 22, elems: 32, halves: [0] },
  matmul_q4_k: { bytes: 144, elems: 256, halves: [0, 2] },
  matmul_q6_k: { bytes: 210, elems: 256, halves: [208] },
};

const simdgen = join(dirname(fileURLToPath(import.meta.url)), '..', 'internal', 'simdgen');
const [name, rowsArg = '2048', colsArg = '768', nArg = '32',
  fileA = join(simdgen, 'kernels.wasm'), fileB = join(simdgen, 'kernels-relaxed.wasm')] = process.argv.slice(2);
const typ = kernels[name];
if (!typ) {
  console.error(`usage: simd_ab.mjs KERNEL [ROWS COLS VECTORS [A.wasm B.wasm]]; KERNEL one of ${Object.keys(kernels).join(', ')}`);
  process.exit(2);
}
const rows = +rowsArg, cols = +colsArg, n = +nArg, blocks = cols / typ.elems;
const sumBytes = typ.elems === 256 ? 32 : 4; // a block's sums: sixteen int16, or Σq as int32
const scratchBytes = 12288;

let at = 4096;
const alloc = (bytes) => { const p = at; at += (bytes + 63) & ~63; return p; };
const W = alloc(rows * blocks * typ.bytes), XQ = alloc(n * cols);
// d and the block sums spaced alike, one stride for both (BatchDStride).
const dStride = blocks * sumBytes, XD = alloc(n * dStride), XS = alloc(n * dStride);
const S = alloc(scratchBytes), A = alloc(64 * n), DESC = alloc(64), OUT = [alloc(4 * n * rows), alloc(4 * n * rows)];
const memory = new WebAssembly.Memory({ initial: Math.ceil(at / 65536) + 1 });
const run = [];
for (const f of [fileA, fileB]) {
  const { instance } = await WebAssembly.instantiate(readFileSync(f), { go: { mem: memory } });
  run.push(instance.exports[name]);
}
const u8 = new Uint8Array(memory.buffer), dv = new DataView(memory.buffer);

let seed = 7;
const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8;
for (let b = 0; b < rows * blocks; b++) {
  const p = W + b * typ.bytes;
  for (let i = 0; i < typ.bytes; i++) u8[p + i] = rnd() & 0xff;
  for (const h of typ.halves) dv.setUint16(p + h, 0x2000 + (rnd() & 0x3ff), true); // 2^-7..2^-6
}
for (let t = 0; t < n; t++) {
  for (let b = 0; b < blocks; b++) {
    const sums = new Array(typ.elems / 16).fill(0);
    for (let i = 0; i < typ.elems; i++) {
      const q = (rnd() % 256) - 128;
      u8[XQ + t * cols + b * typ.elems + i] = q & 0xff;
      sums[i >> 4] += q;
    }
    dv.setFloat32(XD + t * dStride + 4 * b, 0.01 * (1 + ((t + b) % 7)), true);
    if (typ.elems === 256) sums.forEach((s, i) => dv.setInt16(XS + t * dStride + 32 * b + 2 * i, s, true));
    else dv.setInt32(XS + t * dStride + 4 * b, sums[0] + sums[1], true);
  }
}
// The batch descriptor (internal/simdgen.Batch*).
[n, 4 * rows, XQ, XD, XS, cols, dStride, S, scratchBytes, A, 0].forEach((v, i) => dv.setInt32(DESC + 4 * i, v, true));

for (let m = 0; m < 2; m++) run[m](OUT[m], W, rows, blocks, DESC);
for (let i = 0; i < n * rows; i++) {
  if (dv.getUint32(OUT[0] + 4 * i) !== dv.getUint32(OUT[1] + 4 * i)) {
    console.log(`${name}: the modules differ at output ${i}`);
    process.exit(1);
  }
}
const flop = 2 * rows * cols * n;
const reps = Math.max(1, Math.round(2e8 / flop));
const best = [Infinity, Infinity];
const trials = +(process.env.TRIALS ?? 100);
for (let trial = 0; trial < trials; trial++) {
  for (let m = 0; m < 2; m++) {
    const t0 = performance.now();
    for (let k = 0; k < reps; k++) run[m](OUT[m], W, rows, blocks, DESC);
    best[m] = Math.min(best[m], (performance.now() - t0) / reps);
  }
}
const gflops = (ms) => (flop / (ms * 1e6)).toFixed(1);
console.log(`${name} ${rows}×${cols}, ${n} vectors: A ${gflops(best[0])} GFLOP/s, B ${gflops(best[1])} GFLOP/s, B/A ${(best[0] / best[1]).toFixed(2)}`);
