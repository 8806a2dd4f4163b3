// compile.js: the WebAssembly modules wasmlm.js starts its workers with —
// the engine (wasmlm.wasm, or wasmlm-serve.wasm for a load with
// { serve: true }) and the SIMD kernels — compiled once per page and shared
// by every model of it, and their URLs for a SharedWorker, which compiles
// them itself.

import { host, unbundledURL } from './host.js';
import { codedError } from './errors.js';
import { compileURL } from './engine.js';
import { simdSupported, relaxedSimdSupported } from './simd.js';

// Each asset's URL in the literal form new URL('./file', import.meta.url),
// which bundlers (Vite, webpack 5, Rollup, esbuild) recognise and copy the
// file for.
const WASM_URL = new URL('./wasmlm.wasm', import.meta.url).href;
const SIMD_URL = new URL('./wasmlm-simd.wasm', import.meta.url).href;
const SIMD_RELAXED_URL = new URL('./wasmlm-simd-relaxed.wasm', import.meta.url).href;

// The compiled wasmlm.wasm, wasmlm-serve.wasm and SIMD kernels, shared by
// every model of the page: each model has its own worker, and a
// WebAssembly.Module can be posted to a worker, so only the first load (of
// each build) pays for compiling.
let compiled = null;
let compiledServe = null;
const compiledKernels = new Map(); // 'relaxed' or 'simd128' → Promise of {module, relaxed} or {module: null, reason}

/**
 * The URL of wasmlm-serve.wasm, the engine with lm.serve's OpenAI endpoint
 * (package httpapi, and with it net/http: 2.8 MB more, 0.8 MB gzipped), which
 * only a load with { serve: true } fetches: serve-engine.js's (the entry
 * wasmlm/serve, whose literal URL bundlers copy the file for), else the one
 * beside this module — not written as a literal here, so that an app that
 * never serves does not ship it.
 */
function serveEngineURL() {
  return host.serveEngine ?? unbundledURL('./wasmlm-serve.wasm').href;
}

/** The compiled engine: wasmlm-serve.wasm for serve (a load with { serve: true }), else wasmlm.wasm. */
export function compileWasm(serve = false) {
  if (serve) {
    compiledServe ??= compileURL(serveEngineURL()).catch((err) => {
      if (err?.code !== 'fetch_failed' || host.serveEngine) throw err;
      throw codedError('fetch_failed', `${err.message} — a bundled app that loads with { serve: true } imports the serving engine: import 'wasmlm/serve'`, { cause: err, status: err.status });
    });
    compiledServe.catch(() => { compiledServe = null; }); // a failed compile is tried again by the next load
    return compiledServe;
  }
  compiled ??= compileURL(WASM_URL);
  compiled.catch(() => { compiled = null; });
  return compiled;
}

/**
 * The SIMD kernels: {module, relaxed} or, where they cannot run, {module:
 * null, reason}. The relaxed-SIMD build where the browser has relaxed SIMD
 * and allowRelaxed, else (or if it fails to load) the SIMD128 one. Never
 * rejects: without the kernels the engine runs its pure-Go ones, so a
 * missing or broken wasmlm-simd.wasm only costs speed.
 */
export function compileKernels(allowRelaxed) {
  if (!simdSupported()) return Promise.resolve({ module: null, reason: 'this browser has no WebAssembly SIMD128' });
  const kind = allowRelaxed && relaxedSimdSupported() ? 'relaxed' : 'simd128';
  if (!compiledKernels.has(kind)) {
    const plain = () => compileURL(SIMD_URL).then((module) => ({ module, relaxed: false }));
    const p = (kind === 'relaxed' ? compileURL(SIMD_RELAXED_URL).then((module) => ({ module, relaxed: true }), plain) : plain())
      .catch((err) => {
        compiledKernels.delete(kind); // tried again by the next load
        return { module: null, reason: `the SIMD kernels did not load: ${String(err?.message ?? err).replace(/^wasmlm: /, '')}` };
      });
    compiledKernels.set(kind, p);
  }
  return compiledKernels.get(kind);
}


/**
 * The boot message of a SharedWorker, which compiles the engine and the
 * SIMD kernels itself: a WebAssembly.Module cannot be posted to it (another
 * agent cluster), so it gets their URLs.
 */
export function sharedBoot(serve, simd) {
  const relaxed = simd === true && relaxedSimdSupported();
  let kernels = null;
  let simdReason;
  if (!simd) simdReason = 'disabled by the simd: false load option';
  else if (!simdSupported()) simdReason = 'this browser has no WebAssembly SIMD128';
  else kernels = relaxed ? SIMD_RELAXED_URL : SIMD_URL;
  return { type: 'boot', module: serve ? serveEngineURL() : WASM_URL, kernels, simdRelaxed: kernels != null && relaxed, simdReason };
}
