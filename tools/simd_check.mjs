// simd_check.mjs: a check of web/simd.js shared by its Node test
// (simd_js.test.mjs) and its workerd test (simd_workerd_test.mjs, run by
// internal/simdgen's Go tests): a stand-in for the Go instance (an object
// whose exports.mem is a WebAssembly.Memory) gets the kernels attached, and
// matvec_f32 called through its trampoline must give, bit for bit, the
// float32 sums of tensor.DotF32 computed here with Math.fround.

// dotF32 is tensor.DotF32 in JavaScript: four lanes i%4, the tail added to
// lane 0, then (s0+s1)+(s2+s3), every operation rounded to float32.
export function dotF32(a, b) {
  const f = Math.fround;
  const s = [0, 0, 0, 0];
  const n4 = a.length - (a.length % 4);
  for (let i = 0; i < n4; i++) s[i % 4] = f(s[i % 4] + f(a[i] * b[i]));
  for (let i = n4; i < a.length; i++) s[0] = f(s[0] + f(a[i] * b[i]));
  return f(f(s[0] + s[1]) + f(s[2] + s[3]));
}

// A small deterministic generator of float32 values in [-1, 1).
function values(n, seed) {
  const out = new Float32Array(n);
  let state = seed >>> 0;
  for (let i = 0; i < n; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = state / 2 ** 31 - 1;
  }
  return out;
}

// checkMatVec attaches simd (the result of simdImports, enabled) to a fresh
// memory and checks a 5×11 F32 product through the imports; it throws on
// any difference and returns the number of rows checked.
export async function checkMatVec(simd) {
  if (!simd.enabled) throw new Error(`the kernels are not enabled: ${simd.reason}`);
  const imports = simd.importObject.wasmlm_simd;
  if (imports.available() !== 0) throw new Error('available() is 1 before attach');
  let threw = false;
  try {
    imports.matvec_f32(0, 0, 0, 0, 0, 0);
  } catch {
    threw = true;
  }
  if (!threw) throw new Error('a kernel ran before attach');

  const memory = new WebAssembly.Memory({ initial: 1 });
  if ((await simd.attach({ exports: { mem: memory } })) !== true) throw new Error('attach did not return true');
  if (imports.available() !== 1) throw new Error('available() is not 1 after attach');

  const rows = 5, cols = 11, w = 1024, x = 2048, out = 4096;
  const heap = new Float32Array(memory.buffer);
  const wv = values(rows * cols, 1), xv = values(cols, 2);
  heap.set(wv, w / 4);
  heap.set(xv, x / 4);
  heap[out / 4 + rows] = 42; // must stay: only rows outputs are written
  imports.matvec_f32(out, w, x, rows, cols, cols);
  for (let r = 0; r < rows; r++) {
    const want = dotF32(wv.subarray(r * cols, (r + 1) * cols), xv);
    const got = heap[out / 4 + r];
    if (!Object.is(got, want)) throw new Error(`row ${r}: got ${got}, want ${want}`);
  }
  if (heap[out / 4 + rows] !== 42) throw new Error('the kernel wrote past its output');

  let again = false;
  try {
    await simd.attach({ exports: { mem: memory } });
  } catch {
    again = true;
  }
  if (!again) throw new Error('a second attach did not throw');
  return rows;
}
