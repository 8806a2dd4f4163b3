// workerd test of web/simd.js (a worker with a test handler; run by
// internal/simdgen's Go tests with `workerd test`): the kernels come as
// the WebAssembly.Module a wasm module import gives, as on Cloudflare.
import { simdImports, simdSupported } from './simd.js';
import kernels from './kernels.wasm';
import kernelBytes from './kernels.bin';
import { checkMatVec } from './simd_check.mjs';

export default {
  async test() {
    if (!simdSupported()) throw new Error('simdSupported() is false in workerd');
    await checkMatVec(await simdImports(kernels));
    // workerd compiles no WebAssembly from bytes: those give the stubs,
    // with the reason, and no exception.
    const fromBytes = await simdImports(kernelBytes);
    console.log(`from bytes: enabled=${fromBytes.enabled} (${fromBytes.reason})`);
    if (fromBytes.enabled) await checkMatVec(fromBytes);
    else if (fromBytes.importObject.wasmlm_simd.available() !== 0) throw new Error('stubs report available');
    console.log('simd.js in workerd: kernels attached, matvec_f32 bit-exact');
  },
};
