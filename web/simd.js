// simd.js: the host side of wasmlm's SIMD128 kernels, for every host (page
// workers, Node ≥ 20, workerd). No dependencies; an ES module.
//
// A wasmlm build with the wasmlm_simd tag imports the kernels as functions
// of the module "wasmlm_simd". They live in a second, small WebAssembly
// module (kernels.wasm, emitted by internal/simdgen) that must share the Go
// instance's memory, so it can only be instantiated once the Go instance
// exists; the Go instance's imports are therefore trampolines that forward to
// it. Per Go instance:
//
//   const simd = await simdImports(kernelsSource);      // before the Go instance
//   const { instance } = await WebAssembly.instantiate(goModuleOrBytes,
//     { ...go.importObject, ...simd.importObject });
//   await simd.attach(instance);                          // before go.run
//   go.run(instance);
//
// kernelsSource is the kernel module as a WebAssembly.Module (workerd, where
// `import kernels from "./simd.wasm"` gives one), a Response or a Promise of
// one (fetch), an ArrayBuffer or typed array, or a URL to fetch. Where the
// engine has no SIMD, or kernelsSource is null or fails to load, or
// { enabled: false } is passed, the imports are stubs and the Go side runs
// its pure-Go kernels (the result's `enabled` and `reason` say which).
//
// kernels-relaxed.wasm has the same kernels, some of them written with
// relaxed SIMD's integer dot product (faster, and the same bits): pass it
// as { relaxed: source } and it is used where the engine has relaxed SIMD
// (relaxedSimdSupported), kernelsSource otherwise or if it fails to load
// (the result's `relaxed` says which).

const IMPORT_MODULE = 'wasmlm_simd';

// The smallest module that uses SIMD128: (func (result v128) i32.const 0
// i8x16.splat). Engines without SIMD reject it.
const PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
  0x03, 0x02, 0x01, 0x00, // one function of type 0
  0x0a, 0x08, 0x01, 0x06, 0x00, 0x41, 0x00, 0xfd, 0x0f, 0x0b, // body
]);

// The smallest module that uses the relaxed SIMD instruction the relaxed
// kernels use: (func (result v128) i32.const 0 i8x16.splat i32.const 0
// i8x16.splat i16x8.relaxed_dot_i8x16_i7x16_s).
const RELAXED_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
  0x03, 0x02, 0x01, 0x00, // one function of type 0
  0x0a, 0x0f, 0x01, 0x0d, 0x00, 0x41, 0x00, 0xfd, 0x0f, 0x41, 0x00, 0xfd, 0x0f, 0xfd, 0x92, 0x02, 0x0b, // body
]);

function validates(bytes) {
  try {
    return WebAssembly.validate(bytes);
  } catch {
    return false;
  }
}

/** Whether this WebAssembly engine supports SIMD128. */
export function simdSupported() {
  return validates(PROBE);
}

/** Whether it also supports relaxed SIMD (its integer dot product). */
export function relaxedSimdSupported() {
  return validates(PROBE) && validates(RELAXED_PROBE);
}

async function compile(source) {
  if (source instanceof WebAssembly.Module) return source;
  source = await source;
  if (typeof source === 'string' || source instanceof URL) source = await fetch(source);
  if (typeof Response !== 'undefined' && source instanceof Response) {
    if (!source.ok) throw new Error(`HTTP ${source.status} for ${source.url}`);
    const type = source.headers.get('content-type') ?? '';
    if (WebAssembly.compileStreaming && type.split(';')[0].trim() === 'application/wasm') {
      return WebAssembly.compileStreaming(source);
    }
    source = await source.arrayBuffer();
  }
  return WebAssembly.compile(source);
}

function notAttached() {
  throw new Error('wasmlm simd: a kernel was called before attach()');
}

function stub() {
  throw new Error('wasmlm simd: the kernels are not available (the Go side should have checked available())');
}

// Stubs for every name the Go module imports: the import object is read
// with [[Get]], so a Proxy answers whatever the build imports.
function stubImports() {
  return new Proxy({}, { get: (_, name) => (name === 'available' ? () => 0 : stub) });
}

/**
 * The imports a wasmlm_simd build needs, and attach(goInstance) to call
 * between instantiating it and go.run. One call per Go instance.
 * @param {WebAssembly.Module|Response|Promise<Response>|BufferSource|string|URL|null} source
 * @param {{enabled?: boolean, relaxed?: WebAssembly.Module|Response|Promise<Response>|BufferSource|string|URL|null}} [options]
 *   enabled: false forces the pure-Go kernels; relaxed: kernels-relaxed.wasm, used instead of source where the engine has relaxed SIMD
 * @returns {Promise<{importObject: object, attach: (goInstance: WebAssembly.Instance) => Promise<boolean>, enabled: boolean, relaxed: boolean, reason: string}>}
 */
export async function simdImports(source, { enabled = true, relaxed: relaxedSource = null } = {}) {
  let module = null;
  let reason = '';
  if (enabled && relaxedSource != null && relaxedSimdSupported()) {
    module = await compile(relaxedSource).catch(() => null); // else the plain kernels, if they load
  }
  const relaxed = module != null;
  if (!relaxed) {
    if (!enabled) {
      reason = 'disabled';
    } else if (source == null) {
      reason = 'no kernel module given';
    } else if (!(source instanceof WebAssembly.Module) && !simdSupported()) {
      reason = 'this WebAssembly engine has no SIMD128';
    } else {
      module = await compile(source).catch((err) => {
        reason = `the kernel module did not load: ${err?.message ?? err}`;
        return null;
      });
    }
  }
  const memoryImport = module && WebAssembly.Module.imports(module).find((i) => i.kind === 'memory');
  if (module && !memoryImport) {
    module = null;
    reason = 'the kernel module imports no memory (is it kernels.wasm?)';
  }
  if (!module) {
    return { importObject: { [IMPORT_MODULE]: stubImports() }, attach: async () => false, enabled: false, relaxed: false, reason };
  }

  const imports = {};
  const binders = [];
  let attached = false;
  for (const { name, kind } of WebAssembly.Module.exports(module)) {
    if (kind !== 'function') continue;
    let kernel = notAttached;
    // Every kernel takes at most nine i32s; missing arguments arrive as
    // undefined and are ignored, extra ones are dropped.
    imports[name] = (a, b, c, d, e, f, g, h, i) => kernel(a, b, c, d, e, f, g, h, i);
    binders.push((exports) => { kernel = exports[name]; });
  }
  imports.available = () => (attached ? 1 : 0);

  async function attach(goInstance) {
    const memory = goInstance?.exports?.mem;
    if (!(memory instanceof WebAssembly.Memory)) throw new Error('wasmlm simd: attach needs the Go instance (its exports.mem)');
    if (attached) throw new Error('wasmlm simd: already attached; call simdImports once per Go instance');
    const kernels = await WebAssembly.instantiate(module, { [memoryImport.module]: { [memoryImport.name]: memory } });
    for (const bind of binders) bind(kernels.exports);
    attached = true;
    return true;
  }
  return { importObject: { [IMPORT_MODULE]: imports }, attach, enabled: true, relaxed, reason };
}
