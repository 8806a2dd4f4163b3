// worker.mjs: wasmlm's entry module for the edge worker. `make worker` puts it
// in place of the entry module syumai/workers' workers-assets-gen writes,
// beside that tool's runtime.mjs and wasm_exec.js, which it uses.
//
// syumai/workers serves each request with a fresh Go instance: the entry
// compiles app.wasm once per isolate (runtime.mjs's loadModule), instantiates
// it, runs it with a runtime context carrying the request's env and ctx, and
// waits for the Go side to call the `workers.ready` import, which it does
// once its handler is registered in the binding. We write the entry ourselves
// because app.wasm is built with -tags wasmlm_simd: it imports wasmlm's SIMD128
// kernels (module `wasmlm_simd`), which must be in the import object, and the
// kernels must be attached to the Go instance's memory before go.run
// (web/simd.js explains the sequence; stubs stand in where SIMD is missing).
// The kernels come in as a wasm module import, a compiled WebAssembly.Module,
// because workerd, like Cloudflare, compiles no WebAssembly from bytes at run
// time. This worker only answers HTTP, so it exports only fetch.
import "./wasm_exec.js";
import { createRuntimeContext, loadModule } from "./runtime.mjs";
import { simdImports } from "./simd.js";
import simdKernels from "./simd.wasm";
import simdRelaxedKernels from "./simd-relaxed.wasm";

// syumai/workers' Go side calls JavaScript through tryCatch, which turns a
// thrown exception into a value Go can inspect.
globalThis.tryCatch = (fn) => {
  try {
    return { result: fn() };
  } catch (error) {
    return { error };
  }
};

let compiled; // app.wasm, compiled once per isolate

// startGo runs a fresh Go instance for one request and resolves to the
// binding its handler registered itself in.
async function startGo(env, ctx) {
  compiled ??= await loadModule();
  const go = new Go();
  // The relaxed-SIMD build of the kernels where the runtime has relaxed SIMD
  // (Cloudflare's and workerd's V8 do), the SIMD128 one otherwise.
  const simd = await simdImports(simdKernels, { relaxed: simdRelaxedKernels });
  let ready;
  const registered = new Promise((resolve) => { ready = resolve; });
  const instance = new WebAssembly.Instance(compiled, {
    ...go.importObject,
    ...simd.importObject,
    workers: { ready: () => ready() },
  });
  // On failure the Go side finds the kernels unavailable and uses pure Go.
  await simd.attach(instance).catch((err) => console.warn(`wasmlm: pure-Go kernels: ${err}`));
  const binding = {};
  go.run(instance, createRuntimeContext({ env, ctx, binding }));
  await registered;
  return binding;
}

export default {
  async fetch(request, env, ctx) {
    const binding = await startGo(env, ctx);
    return binding.handleRequest(request);
  },
};
