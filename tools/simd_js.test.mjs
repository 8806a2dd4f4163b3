// Node tests of web/simd.js (node --test tools/simd_js.test.mjs; run by
// internal/simdgen's Go tests): every form of kernel source, the stub
// path, and a product through the trampolines (simd_check.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { checkMatVec } from './simd_check.mjs';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
// web/ is not an ES-module package for Node; a data: URL always is.
const source = readFileSync(path.join(root, 'web', 'simd.js'), 'utf8');
const { simdImports, simdSupported, relaxedSimdSupported } = await import('data:text/javascript;base64,' + Buffer.from(source).toString('base64'));
const kernels = readFileSync(path.join(root, 'internal', 'simdgen', 'kernels.wasm'));
const relaxedKernels = readFileSync(path.join(root, 'internal', 'simdgen', 'kernels-relaxed.wasm'));

test('Node has SIMD128', () => {
  assert.equal(simdSupported(), true);
});

for (const [name, make] of [
  ['Uint8Array', () => new Uint8Array(kernels)],
  ['ArrayBuffer', () => kernels.buffer.slice(kernels.byteOffset, kernels.byteOffset + kernels.byteLength)],
  ['WebAssembly.Module', () => new WebAssembly.Module(kernels)],
  ['Response (application/wasm)', () => new Response(kernels, { headers: { 'content-type': 'application/wasm' } })],
  ['Response (other type)', () => new Response(kernels, { headers: { 'content-type': 'application/octet-stream' } })],
  ['Promise of a Response', () => Promise.resolve(new Response(kernels, { headers: { 'content-type': 'application/wasm' } }))],
]) {
  test(`kernels from a ${name}`, async () => {
    assert.equal(await checkMatVec(await simdImports(make())), 5);
  });
}

test('every export of the kernel module is an import', async () => {
  const simd = await simdImports(kernels);
  const names = WebAssembly.Module.exports(new WebAssembly.Module(kernels)).map((e) => e.name);
  for (const name of [...names, 'available']) {
    assert.equal(typeof simd.importObject.wasmlm_simd[name], 'function', name);
  }
});

for (const [name, args, reason] of [
  ['no source', [null], /no kernel module/],
  ['disabled', [kernels, { enabled: false }], /disabled/],
  ['bytes that are not a module', [new Uint8Array([1, 2, 3])], /did not load/],
  ['a failed fetch', [new Response('missing', { status: 404 })], /did not load/],
]) {
  test(`stubs for ${name}`, async () => {
    const simd = await simdImports(...args);
    assert.equal(simd.enabled, false);
    assert.match(simd.reason, reason);
    const imports = simd.importObject.wasmlm_simd;
    assert.equal(imports.available(), 0);
    assert.throws(() => imports.matvec_q4_k(0, 0, 0, 0, 0, 0, 0), /not available/);
    assert.throws(() => imports.any_name_a_build_imports(), /not available/);
    assert.equal(await simd.attach({ exports: { mem: new WebAssembly.Memory({ initial: 1 }) } }), false);
  });
}

// Node 20 has relaxed SIMD only behind --experimental-wasm-relaxed-simd
// (simd_js.test.mjs runs once without it and once with it where Node knows
// the flag): the relaxed kernels where the engine has it, else the plain ones.
test('relaxed kernels where the engine has relaxed SIMD', async () => {
  const simd = await simdImports(kernels, { relaxed: relaxedKernels });
  assert.equal(simd.enabled, true);
  assert.equal(simd.relaxed, relaxedSimdSupported());
  assert.equal(await checkMatVec(simd), 5);
  const plain = await simdImports(kernels);
  assert.equal(plain.relaxed, false);
});

test('a relaxed module that does not load falls back to the plain one', async () => {
  const simd = await simdImports(kernels, { relaxed: new Uint8Array([1, 2, 3]) });
  assert.equal(simd.enabled, true);
  assert.equal(simd.relaxed, false);
  assert.equal(await checkMatVec(simd), 5);
});

test('disabled is disabled, relaxed or not', async () => {
  const simd = await simdImports(kernels, { enabled: false, relaxed: relaxedKernels });
  assert.equal(simd.enabled, false);
  assert.equal(simd.relaxed, false);
});

test('attach needs the Go instance', async () => {
  const simd = await simdImports(kernels);
  await assert.rejects(simd.attach({ exports: {} }), /exports\.mem/);
});
