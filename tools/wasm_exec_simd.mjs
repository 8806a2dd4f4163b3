// Runs a GOOS=js GOARCH=wasm binary under Node: Go's lib/wasm/wasm_exec_node.js
// plus the SIMD kernel imports of web/simd.js. Started by wasm_exec_simd.sh
// (which sets WASMLM_GOROOT) as: node wasm_exec_simd.mjs BINARY [ARGS...].
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import os from 'node:os';

if (process.argv.length < 3) {
  console.error('usage: wasm_exec_simd.mjs BINARY [ARGS...]');
  process.exit(1);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const goroot = process.env.WASMLM_GOROOT;
if (!goroot) {
  console.error('wasm_exec_simd.mjs: WASMLM_GOROOT is not set (run it through wasm_exec_simd.sh)');
  process.exit(1);
}

// What wasm_exec_node.js sets up before wasm_exec.js defines Go.
const require = createRequire(import.meta.url);
globalThis.require = require;
globalThis.fs = require('fs');
globalThis.path = require('path');
globalThis.TextEncoder = require('util').TextEncoder;
globalThis.TextDecoder = require('util').TextDecoder;
globalThis.performance ??= require('perf_hooks').performance;
globalThis.crypto ??= require('crypto');
require(path.join(goroot, 'lib', 'wasm', 'wasm_exec.js'));

// web/simd.js is an ES module in a package Node treats as CommonJS; a data:
// URL is always loaded as a module, on every Node version.
const simdSource = readFileSync(path.join(here, '..', 'web', 'simd.js'), 'utf8');
const { simdImports, relaxedSimdSupported } = await import('data:text/javascript;base64,' + Buffer.from(simdSource).toString('base64'));

// --probe-relaxed: exit 0 where this Node runs relaxed SIMD (with the flags
// wasm_exec_simd.sh passes), 1 where it does not.
if (process.argv[2] === '--probe-relaxed') process.exit(relaxedSimdSupported() ? 0 : 1);

const kernelsPath = process.env.WASMLM_SIMD_WASM || path.join(here, '..', 'internal', 'simdgen', 'kernels.wasm');
const mode = process.env.WASMLM_SIMD || 'simd128';
if (!['simd128', 'relaxed', 'off'].includes(mode)) {
  console.error(`wasm_exec_simd.mjs: WASMLM_SIMD must be simd128, relaxed or off, got ${JSON.stringify(mode)}`);
  process.exit(1);
}
const off = mode === 'off';
const relaxedPath = process.env.WASMLM_SIMD_RELAXED_WASM || path.join(here, '..', 'internal', 'simdgen', 'kernels-relaxed.wasm');
const relaxed = mode === 'relaxed' ? readFileSync(relaxedPath) : null;
const simd = await simdImports(off ? null : readFileSync(kernelsPath), { enabled: !off, relaxed });
if (!off && !simd.enabled) {
  console.error(`wasm_exec_simd.mjs: the SIMD kernels are unavailable: ${simd.reason}`);
  process.exit(1);
}
if (relaxed && !simd.relaxed) {
  console.error('wasm_exec_simd.mjs: the relaxed SIMD kernels are unavailable (this Node has no relaxed SIMD)');
  process.exit(1);
}

const go = new Go();
go.argv = process.argv.slice(2);
go.env = Object.assign({ TMPDIR: os.tmpdir() }, process.env);
go.exit = process.exit;
try {
  const { instance } = await WebAssembly.instantiate(readFileSync(process.argv[2]), {
    ...go.importObject,
    ...simd.importObject,
  });
  await simd.attach(instance);
  process.on('exit', (code) => { // Node exits when no event is pending
    if (code === 0 && !go.exited) {
      // a deadlock: make Go print the error and the stacks
      go._pendingEvent = { id: 0 };
      go._resume();
    }
  });
  await go.run(instance);
} catch (err) {
  console.error(err);
  process.exit(1);
}
