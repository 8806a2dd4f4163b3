// workerd test of web/simd.js (a worker with a test handler; run by
// internal/simdgen's Go tests with `workerd test`): the kernels come as
// the WebAssembly.Module a wasm module import gives, as on Cloudflare.
import { simdImports, simdSupported, relaxedSimdSupported } from './simd.js';
import kernels from './kernels.wasm';
import relaxedKernels from './kernels-relaxed.wasm';
import kernelBytes from './kernels.bin';
import { checkMatVec } from './simd_check.mjs';

export default {
  async test() {
    if (!simdSupported()) throw new Error('simdSupported() is false in workerd');
    await checkMatVec(await simdImports(kernels));
    // workerd's V8, as Cloudflare's, has relaxed SIMD: the edge worker
    // (cmd/worker/worker.mjs) runs the relaxed kernels.
    if (!relaxedSimdSupported()) throw new Error('relaxedSimdSupported() is false in workerd');
    const relaxed = await simdImports(kernels, { relaxed: relaxedKernels });
    if (!relaxed.relaxed) throw new Error(`the relaxed kernels did not load: ${relaxed.reason}`);
    await checkMatVec(relaxed);
    // workerd compiles no WebAssembly from bytes: those give the stubs,
    // with the reason, and no exception.
    const fromBytes = await simdImports(kernelBytes);
    console.log(`from bytes: enabled=${fromBytes.enabled} (${fromBytes.reason})`);
    if (fromBytes.enabled) await checkMatVec(fromBytes);
    else if (fromBytes.importObject.wasmlm_simd.available() !== 0) throw new Error('stubs report available');
    console.log('simd.js in workerd: kernels and relaxed kernels attached, matvec_f32 bit-exact');
  },
};
