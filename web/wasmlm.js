// wasmlm.js: run a language model in a Web Worker, from any static host.
//
//   import { WasmLM } from './wasmlm.js';
//   const lm = await WasmLM.load();                      // the default model beside this file
//   for await (const chunk of lm.stream('Once upon a time')) out.textContent += chunk.text;
//
// The model runs in a dedicated worker (wasmlm.worker.js, which runs
// wasmlm.wasm through Go's wasm_exec.js — or wasmlm-serve.wasm, the build
// with lm.serve's OpenAI endpoint, for a model loaded with { serve: true }),
// so the page's main thread never blocks. The engine's matrix products run on SIMD128 kernels
// (wasmlm-simd.wasm, attached by simd.js) where the browser has SIMD — the
// relaxed-SIMD build of them (wasmlm-simd-relaxed.wasm, the same bits)
// where it also has relaxed SIMD — on pure Go otherwise. No SharedArrayBuffer and no special headers are needed.
//
// With the load option workers: N the model is split across N workers, each
// holding 1/N of the weights (its attention heads, feed-forward rows and
// vocabulary rows) and computing its part of every layer and of every prompt
// block; the workers swap activations by postMessage over MessageChannels,
// or through shared memory where the page is cross-origin isolated (and in
// Node.js). Worker 0 leads (tokenizes, samples, streams); the tokens are
// exactly those of one worker.
//
// With the load option shared: true the worker is a SharedWorker (shared.js)
// that every tab of the origin loading the same model uses: one model, one
// queue, a session per tab.
// Types: wasmlm.d.ts. Option names and defaults: see there and the README.

import { host, unbundledURL } from './host.js';
import { CACHE_NAME, cache as modelCache } from './cache.js';

export { CACHE_NAME };
import {
  abortError, argumentError, checkSendable, checkSignal, codedError, describe, describeThrown, invalidCall, withCode,
} from './errors.js';
import {
  Progress, cachedSources, checkContextShift, checkDevice, checkGPUWorkers, checkKVType, fromCache, checkSource, checkSources, feedBytes, inspectHeaders, modelTooLarge,
  readHeaders, readSource, resolveSource, sourceName,
} from './load.js';
import { countChatTokens, createChatCompletion } from './chat-completions.js';
import { sessionStore } from './sessions.js';
import { createEmbeddings, rerankDocuments } from './embeddings.js';
import { checkServeOptions, serveModel, servesNowhere } from './serve.js'; // lm.serve: the OpenAI HTTP API answered from the page
import { Follower, autoWorkers, compileURL, newWorker, wasmlmError } from './engine.js';

export { MAX_AUTO_WORKERS, autoWorkers } from './engine.js';
import { simdSupported, relaxedSimdSupported } from './simd.js';
import { sharedName, sharedUnsupported, sharedWorker } from './shared.js';

// Each asset's URL in the literal form new URL('./file', import.meta.url),
// which bundlers (Vite, webpack 5, Rollup, esbuild) recognise and copy the
// file for.
const WASM_URL = new URL('./wasmlm.wasm', import.meta.url).href;
const SIMD_URL = new URL('./wasmlm-simd.wasm', import.meta.url).href;
const SIMD_RELAXED_URL = new URL('./wasmlm-simd-relaxed.wasm', import.meta.url).href;

const LOAD_OPTIONS = ['onProgress', 'tokenizer', 'cache', 'contextLength', 'signal', 'name', 'simd', 'workers', 'kvType', 'sha256', 'serve', 'device', 'contextShift', 'shared', 'hfEndpoint'];


const created = Symbol('WasmLM constructor');

let servable = null; // the last model loaded with { serve: true } that is still loaded: WasmLM.serve's default

// Why device: 'auto' runs the page's next loads on the CPU: a GPU device was
// lost under a model of this page (the driver reset, the GPU was removed,
// device.destroy()), which a new device on the same adapter may lose again.
let gpuLost = null;

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
function compileWasm(serve = false) {
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
function compileKernels(allowRelaxed) {
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
function sharedBoot(serve, simd) {
  const relaxed = simd === true && relaxedSimdSupported();
  let kernels = null;
  let simdReason;
  if (!simd) simdReason = 'disabled by the simd: false load option';
  else if (!simdSupported()) simdReason = 'this browser has no WebAssembly SIMD128';
  else kernels = relaxed ? SIMD_RELAXED_URL : SIMD_URL;
  return { type: 'boot', module: serve ? serveEngineURL() : WASM_URL, kernels, simdRelaxed: kernels != null && relaxed, simdReason };
}

/** A language model running in its own Web Worker. Create one with WasmLM.load(). */
export class WasmLM {
  #worker;
  #pending = new Map(); // id → {resolve, reject, onChunk}
  #nextID = 1;
  #dead = null; // why the worker can no longer be used, once it cannot
  #info = null;
  #name;
  #followers = []; // the workers of shards 1..N-1 of a model split across N workers
  #control = null; // their SharedArrayBuffer of control words, when they exchange through shared memory
  #serves = false; // loaded with { serve: true }: its worker runs wasmlm-serve.wasm, which lm.serve needs
  #api; // the model as chat-completions.js and embeddings.js use it
  #shift = { contextShift: false, nKeep: 0 }; // load's contextShift: chat's default context_shift and n_keep
  #sha256 = null; // the model file's SHA-256 (the load option sha256), which saved sessions record
  #sessions; // the model's saved sessions in OPFS (sessions.js)
  #shared = null; // loaded with shared: true: {lock} in a SharedWorker (shared.js), {reason} where it fell back to a dedicated worker

  constructor(token, worker, name) {
    if (token !== created) throw new TypeError('wasmlm: use WasmLM.load() to create a model');
    this.#worker = worker;
    this.#name = name;
    this.#listen(worker);
    // What chat-completions.js and embeddings.js see of the model.
    const lm = this;
    this.#api = Object.freeze({
      get name() { return lm.#name; },
      get info() { return lm.#info; },
      get shift() { return lm.#shift; },
      run: (message, signal) => this.#run(message, signal),
      iterable: (message, signal, map) => this.#iterable(message, signal, map),
      call: (method, args) => this.#request({ type: 'call', method, args }),
      restoreSession: (name) => this.restoreSession(name),
    });
    this.#sessions = sessionStore({
      get info() { return lm.#info; },
      get sha256() { return lm.#sha256; },
      call: (method, args) => this.#request({ type: 'call', method, args }),
    });
    /** The model's saved sessions: lm.sessions.list(), lm.sessions.delete(name). */
    this.sessions = Object.freeze({
      list: () => this.#sessions.list(),
      delete: (name) => Promise.resolve().then(() => this.#sessions.delete(name)),
    });
    /**
     * OpenAI-shaped chat completions: lm.chat.completions.create({messages, stream, response_format, tools, tool_choice, ...});
     * lm.chat.countTokens({messages, tools}): the tokens such a request's prompt takes.
     */
    this.chat = Object.freeze({
      completions: Object.freeze({ create: (body, opts) => createChatCompletion(this.#api, body, opts) }),
      countTokens: (body) => countChatTokens(this.#api, body),
    });
    /** OpenAI-shaped embeddings: lm.embeddings.create({input, encoding_format, dimensions, truncate, normalize}). */
    this.embeddings = Object.freeze({ create: (body, opts) => createEmbeddings(this.#api, body, opts) });
  }

  /**
   * Loads a model into a new worker. source: a URL (string or URL), an
   * ArrayBuffer, a typed array or a Blob/File, a model description {model,
   * name} (DEFAULT_MODEL of wasmlm/default-model), in Node.js a file path
   * too; nothing for the default model beside this module (from a static
   * folder; a bundled app imports wasmlm/default-model). options: {tokenizer, onProgress, cache = true, contextLength,
   * signal, name, simd = true, workers = 'auto', serve = false}; simd: false runs the
   * pure-Go kernels even where the SIMD128 ones could run, 'simd128' the
   * SIMD128 ones even where the relaxed-SIMD ones could; workers: the
   * number of workers to split the model across, or 'auto' (autoWorkers);
   * serve: true runs wasmlm-serve.wasm, which lm.serve needs.
   */
  static async load(source, options = {}) {
    try {
      const lm = await WasmLM.#load(source, options);
      if (lm.#serves) servable = lm;
      if (lm.#shared?.lock) lm.#info.shared = true;
      else if (lm.#shared) Object.assign(lm.#info, { shared: false, sharedReason: lm.#shared.reason });
      // A contextLength beyond the trained context loads, as llama.cpp's does, with a warning.
      if (lm.#info?.warning) console.warn(`wasmlm: ${lm.#info.warning}`);
      return lm;
    } catch (err) {
      throw withCode(err);
    }
  }

  /**
   * Answers the page's fetches under scope ('/v1/') with the OpenAI-compatible
   * API over a model (options.model, a WasmLM loaded with { serve: true };
   * by default the last one loaded so that is still loaded): model.serve(options).
   */
  static serve(options = {}) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      return Promise.reject(withCode(argumentError('options', `must be an object, got ${describe(options)}`)));
    }
    const { model = servable, ...rest } = options;
    const notHere = servesNowhere(); // before asking for { serve: true }, which would not help
    if (notHere) return Promise.reject(notHere);
    if (model == null) {
      return Promise.reject(codedError('serve_failed', 'wasmlm: no model loaded with { serve: true } is still loaded: WasmLM.load(source, { serve: true }) first, or give options.model'));
    }
    if (!(model instanceof WasmLM)) return Promise.reject(withCode(argumentError('model', `must be a WasmLM, got ${describe(model)}`)));
    return model.serve(rest);
  }

  /**
   * [worker, sharing] of a load with shared: true: the SharedWorker's port
   * and {lock} (shared.js), or [null, {reason}] where the model cannot run
   * in one here (the load then starts a dedicated worker, and info says why).
   */
  static async #sharedWorker(files, tok, options) {
    let reason = sharedUnsupported(files, tok);
    if (!reason) {
      try {
        const { worker, lock } = await sharedWorker(sharedName(files, tok, options));
        return [worker, { lock }];
      } catch (err) {
        reason = `the SharedWorker did not start: ${err?.message ?? err}`;
      }
    }
    return [null, { reason }];
  }

  static async #load(source, options) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw argumentError('options', `must be an object, got ${describe(options)}`);
    }
    for (const k of Object.keys(options)) {
      if (!LOAD_OPTIONS.includes(k)) {
        throw invalidCall(`unknown load option "${k}" (known: ${LOAD_OPTIONS.join(', ')})`);
      }
    }
    const { onProgress, cache = true, contextLength, signal, simd = true, serve = false, shared = false } = options;
    let { workers = 'auto' } = options;
    if (onProgress != null && typeof onProgress !== 'function') {
      throw argumentError('onProgress', `must be a function, got ${describe(onProgress)}`);
    }
    if (typeof cache !== 'boolean') throw argumentError('cache', `must be a boolean, got ${describe(cache)}`);
    if (typeof serve !== 'boolean') throw argumentError('serve', `must be a boolean, got ${describe(serve)}`);
    if (typeof shared !== 'boolean') throw argumentError('shared', `must be a boolean, got ${describe(shared)}`);
    if (typeof simd !== 'boolean' && simd !== 'simd128') {
      throw argumentError('simd', `must be a boolean or 'simd128', got ${describe(simd)}`);
    }
    if (workers !== 'auto' && !(Number.isInteger(workers) && workers >= 1 && workers <= 64)) {
      throw argumentError('workers', `must be an integer in 1..64 or 'auto', got ${describe(workers)}`);
    }
    if (options.name != null && typeof options.name !== 'string') {
      throw argumentError('name', `must be a string, got ${describe(options.name)}`);
    }
    if (shared && Number.isInteger(workers) && workers > 1) {
      throw argumentError('workers', `must be 1 or 'auto' with shared: true, got ${workers}: a shared model runs in one SharedWorker, which cannot start the workers a split model needs`);
    }
    checkSignal(signal);
    const { kvType, sha256 } = options;
    checkKVType(kvType);
    checkDevice(options.device);
    const shift = checkContextShift(options.contextShift);
    // After a lost device, 'auto' keeps to the CPU (cpuReason: why).
    const device = gpuLost && (options.device ?? 'auto') === 'auto' ? 'cpu' : (options.device ?? 'auto');
    const cpuReason = device === 'cpu' && options.device !== 'cpu' ? gpuLost : undefined;
    if (device === 'webgpu') checkGPUWorkers(workers);
    checkSendable({ contextLength }); // the Go side checks it
    if (sha256 != null && !(typeof sha256 === 'string' && /^[0-9a-fA-F]{64}$/.test(sha256))) {
      throw argumentError('sha256', `must be a SHA-256 digest as 64 hex digits, got ${describe(sha256)}`);
    }
    const tokenizer = options.tokenizer;
    let name = options.name ?? undefined;
    [source, name] = await resolveSource(source, name, options.hfEndpoint);
    // Wrong sources reject before a worker starts.
    const files = checkSources(source, 'source');
    if (sha256 != null && files.length > 1) { // before the cache, which checks each file it has against it
      throw argumentError('sha256', 'is the digest of one file; a split model comes in parts');
    }
    const tok = tokenizer == null ? null : checkSource(tokenizer, 'tokenizer');
    name ??= sourceName(files[0].source);
    if (signal?.aborted) throw abortError(signal);

    let worker = null;
    let sharing = null;
    if (shared) {
      [worker, sharing] = await WasmLM.#sharedWorker(files, tok, { contextLength, kvType, simd, serve, device, sha256 });
      if (worker) workers = 1;
    }
    worker ??= newWorker('wasmlm');
    const lm = new WasmLM(created, worker, name);
    lm.#shared = sharing;
    lm.#sha256 = sha256?.toLowerCase() ?? null;
    lm.#serves = serve;
    lm.#shift = shift;
    try {
      // The worker starts the Go program while the model's header downloads.
      // A split model's followers boot the same build as worker 0 (only it
      // serves, but one module downloads and compiles once).
      const kernels = () => (simd ? compileKernels(simd === true) : Promise.resolve({ module: null, reason: 'disabled by the simd: false load option' }));
      const boot = lm.#shared?.lock ? Promise.resolve(sharedBoot(serve, simd)) : Promise.all([compileWasm(serve), kernels()]).then(([module, k]) =>
        ({ type: 'boot', module, kernels: k.module, simdRelaxed: k.relaxed === true, simdReason: k.reason }));
      const booted = boot.then((message) => lm.#request(message));
      booted.catch(() => {}); // awaited below; a download failure must not leave it unhandled
      if (lm.#shared?.lock) {
        // The model loads once, in the first tab to claim it; the others wait for it.
        await booted;
        const claim = await untilAborted(lm.#request({ type: 'claim', lock: lm.#shared.lock }), signal);
        if (claim.info) {
          lm.#info = claim.info;
          delete lm.#info.shardIndex;
          delete lm.#info.shardCount;
          lm.#info.workers = 1;
          // Another tab read the model: one report, of the whole file, held already.
          new Progress(onProgress, 1).part(0)(lm.#info.fileSize, lm.#info.fileSize, true);
          return lm;
        }
      }
      // A GGUF model is read range by range into the workers' memory; a
      // llama2.c checkpoint (and its tokenizer) whole.
      const known = tok == null ? await fromCache(files, { cache, sha256, signal }) : files;
      const head = tok == null ? await readHeaders(known, signal) : null;
      const placement = { device, cpuReason };
      if (!head) {
        await lm.#loadWhole(files, tok, { onProgress, cache, contextLength, kvType, signal, workers, booted, placement });
        return lm;
      }
      await booted;
      const ask = (message) => lm.#request(message);
      // With device 'auto' or 'webgpu', worker 0 opens its WebGPU adapter
      // here: a model the GPU takes runs in that one worker.
      const inspection = await inspectHeaders(head, ask, {
        contextLength, kvType, workers: workers === 'auto' ? 0 : workers, deviceMemory: globalThis.navigator?.deviceMemory, device,
      });
      if (device === 'webgpu') checkGPUWorkers(workers, inspection);
      let n = workers;
      if (n === 'auto' && inspection.device === 'webgpu' && inspection.memory.workers === 1) {
        n = 1;
      } else if (n === 'auto') {
        const cores = globalThis.navigator?.hardwareConcurrency ?? host.hardwareConcurrency;
        n = Math.max(autoWorkers(inspection, cores, sharedMemoryAvailable()), inspection.memory.workers);
      }
      if (!inspection.memory.fits || (n > 1 && n > inspection.headCountKv)) throw modelTooLarge(inspection, n);
      if (n > 1 && n !== inspection.memory.workers) {
        const again = await inspectHeaders(head, ask, { contextLength, kvType, workers: n, deviceMemory: globalThis.navigator?.deviceMemory });
        if (!again.memory.fits) throw modelTooLarge(again, n);
      }
      lm.#startFollowers(n - 1, boot);
      const sources = await cachedSources(known, { cache, sha256, signal, onProgress });
      // The cache checked the SHA-256 of what it holds; otherwise the page
      // (bytes it holds) or the one worker reading the whole file does.
      const verify = sha256 != null && !sources.every((f) => f.blob && f.url) ? sha256.toLowerCase() : undefined;
      if (verify && n > 1 && !sources[0].bytes) {
        throw argumentError('sha256', 'is checked as the model is read, which one worker does whole: with workers > 1, load from a URL with the cache on (or from bytes)');
      }
      await lm.#assemble(sources, head, n, { onProgress, contextLength, kvType, signal, sha256: verify, placement });
      return lm;
    } catch (err) {
      lm.unload();
      throw err;
    }
  }

  /**
   * Reads a model that is not GGUF (a llama2.c checkpoint) and its
   * tokenizer whole, and loads them in this worker.
   */
  async #loadWhole(files, tok, { onProgress, cache, contextLength, kvType, signal, workers, booted, placement }) {
    if (files.length > 1) throw invalidCall('only a GGUF model comes in parts');
    if (workers !== 'auto' && workers > 1) {
      throw argumentError('workers', `must be 1 or 'auto' for a llama2.c checkpoint, which runs in one worker (a GGUF model splits), got ${workers}`);
    }
    const progress = new Progress(onProgress, tok == null ? 1 : 2);
    const [modelBytes, tokBytes] = await Promise.all([
      readSource(files[0].source, 'model', progress.part(0), { cache, signal }),
      tok == null ? null : readSource(tok, 'tokenizer', progress.part(1), { cache, signal }),
    ]);
    await booted;
    const transfer = [modelBytes, tokBytes].filter((s) => s?.owned).map((s) => s.bytes.buffer);
    this.#info = await this.#request({ type: 'load', model: modelBytes.bytes, tokenizer: tokBytes?.bytes, contextLength, kvType: kvType ?? undefined, ...placement }, transfer);
    delete this.#info.shardIndex;
    delete this.#info.shardCount;
    this.#info.workers = 1;
  }

  /**
   * Reads the model into n workers — each worker its shard, straight into
   * its memory, from sources ({url} or {blob} each: the worker reads them;
   * {bytes}: this page sends the chunks) — and loads it: the followers
   * (shards 1..n-1) follow, this worker leads. head: readHeaders'.
   */
  async #assemble(sources, head, n, { onProgress, contextLength, kvType, signal, sha256, placement }) {
    // Where the page is cross-origin isolated, the shards' messages go
    // through shared memory (the ports then set it up): a SharedArrayBuffer
    // of the group's control words (jsbridge's mailbox_js.go).
    this.#control = n > 1 && sharedMemoryAvailable() ? new SharedArrayBuffer(4 * (1 + 3 * n)) : null;
    const ports = Array.from({ length: n }, () => new Array(n).fill(null));
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        const ch = new MessageChannel();
        ports[i][j] = ch.port1;
        ports[j][i] = ch.port2;
      }
    }
    const own = (i) => ports[i].filter((p) => p !== null);
    const progress = new Progress(onProgress, n);
    const cached = sources.every((s) => s.cached);
    const workers = [
      { request: (m, transfer, onProgressMessage) => this.#request(m, transfer, undefined, undefined, this.#worker, undefined, onProgressMessage) },
      ...this.#followers,
    ];
    await Promise.all(this.#followers.map((f) => f.booted));
    const read = async (w, i) => {
      const report = progress.part(i);
      const onBytes = ({ loaded, total }) => report(loaded, total, cached);
      const shard = { prefixes: head.prefixes, sizes: head.sizes, shardIndex: i, shardCount: n, sha256: i === 0 ? sha256 : undefined };
      if (sources.every((s) => s.bytes)) {
        await feedBytes(w, shard, sources, onBytes, signal);
      } else {
        const from = ({ url, blob, handle }) => (blob ? { blob, handle } : { url });
        await w.request({ type: 'assemble', ...shard, sources: sources.map(from) }, [], onBytes);
      }
    };
    const aborted = new Promise((_, reject) => signal?.addEventListener('abort', () => reject(abortError(signal)), { once: true }));
    aborted.catch(() => {});
    await Promise.race([Promise.all(workers.map((w, i) => read(w, i))), aborted]);
    const load = (w, i) => w.request({
      type: 'load', model: 'assembled', contextLength, kvType: kvType ?? undefined, peers: n > 1 ? ports[i] : undefined,
      sharedMemory: this.#control ?? undefined, ...placement,
    }, n > 1 ? own(i) : []);
    const infos = await Promise.all(workers.map((w, i) => load(w, i)));
    this.#info = infos[0];
    delete this.#info.shardIndex;
    delete this.#info.shardCount;
    this.#info.workers = n;
    if (n > 1) this.#info.exchange = this.#control ? 'shared-memory' : 'messages';
  }

  /**
   * What the model at source is and what loading it would take, from its
   * GGUF header alone (a Range request for its first bytes, or a slice of
   * a Blob): {architecture, parameters, tensorTypes, contextLength,
   * chatTemplate, fileSize, ..., memory: {weights, kvCache, scratch, total,
   * workers, perWorker, workersNeeded, fits, limits}}. options:
   * {contextLength, kvType, workers, signal}; load's other options are
   * accepted and ignored, so one options object serves inspect and load.
   */
  static async inspect(source, options = {}) {
    try {
      if (options === null || typeof options !== 'object' || Array.isArray(options)) {
        throw argumentError('options', `must be an object, got ${describe(options)}`);
      }
      for (const k of Object.keys(options)) {
        if (!LOAD_OPTIONS.includes(k)) {
          throw invalidCall(`unknown inspect option "${k}" (known: contextLength, kvType, workers, signal, hfEndpoint, and load's others, which inspect ignores: ${LOAD_OPTIONS.join(', ')})`);
        }
      }
      const { contextLength, kvType, signal } = options;
      const workers = options.workers === 'auto' ? undefined : options.workers;
      checkKVType(kvType);
      checkDevice(options.device);
      checkSignal(signal);
      checkSendable({ contextLength }); // the Go side checks it
      if (workers != null && !(Number.isInteger(workers) && workers >= 1 && workers <= 64)) {
        throw argumentError('workers', `must be an integer in 1..64 or 'auto', got ${describe(workers)}`);
      }
      const files = checkSources((await resolveSource(source, undefined, options.hfEndpoint))[0], 'source');
      const head = await readHeaders(files, signal);
      if (!head) throw codedError('invalid_model', 'wasmlm: inspect reads GGUF files; this is not one (a llama2.c checkpoint?)');
      const worker = newWorker('wasmlm-inspect');
      const lm = new WasmLM(created, worker, 'inspect');
      try {
        const module = await compileWasm();
        await lm.#request({ type: 'boot', module, kernels: null, simdRelaxed: false, simdReason: 'inspect' });
        const inspection = await inspectHeaders(head, (m) => lm.#request(m), {
          contextLength, kvType, workers: workers ?? 0, deviceMemory: globalThis.navigator?.deviceMemory,
        });
        delete inspection.simd;
        return inspection;
      } finally {
        lm.unload();
      }
    } catch (err) {
      throw withCode(err);
    }
  }

  /** The model cache: list(), delete(url), clear() (cache.js). */
  static cache = modelCache;

  /** Deletes every cached model: WasmLM.cache.clear(). */
  static async clearCache() {
    await modelCache.clear();
  }

  /** What the model is: {format, architecture, vocabSize, contextLength, ...}. */
  get info() { return this.#info; }

  /** The model's name: the default model's, a file's, or the last part of its URL. */
  get name() { return this.#name; }

  /** Token ids of text. options: {addBos = true, special = false}. */
  tokenize(text, options) {
    return this.#call('tokenize', options === undefined ? [text] : [text, options], { text, options });
  }

  /**
   * Saves the conversation the model's session holds (its tokens, KV cache,
   * recurrent state and last logits) under name in OPFS, tied to this model
   * and KV type; resolves to {name, tokens, bytes}. See docs/sessions.md.
   */
  saveSession(name) {
    return Promise.resolve().then(() => this.#sessions.save(name));
  }

  /**
   * Restores the conversation saved under name: the next generation or chat
   * whose prompt begins with it evaluates only what follows. Resolves to
   * {name, tokens}; rejects with session_not_found, or session_mismatch for
   * a session of another model or KV type.
   */
  restoreSession(name) {
    return Promise.resolve().then(() => this.#sessions.restore(name));
  }

  /** The text of token ids. */
  detokenize(ids) {
    return this.#call('detokenize', [ids], { ids });
  }

  /** Generates a completion of prompt; resolves to {text, tokens, finishReason, usage, timings, seed, ...}. */
  generate(prompt, options) {
    const [opts, signal, onPromptProgress] = splitCallbacks(options);
    return this.#start({ type: 'generate', prompt, options: opts }, signal, undefined, onPromptProgress).result;
  }

  /**
   * Streams a completion: an async iterable of {text, token, trace?} chunks,
   * one per token as it is sampled. Its result property resolves to what
   * generate would; breaking out of the loop aborts the generation.
   */
  stream(prompt, options) {
    const [opts, signal, onPromptProgress] = splitCallbacks(options);
    return this.#iterable({ type: 'stream', prompt, options: opts }, signal, (chunk) => chunk, onPromptProgress);
  }

  /**
   * Scores documents against query with a reranker (info.reranks):
   * {object: 'list', model, results: [{index, relevance_score, document?}],
   * usage}, the most relevant first, as llama.cpp's server returns them.
   * body: {query, documents, top_n, return_documents, truncate}.
   */
  rerank(body, options) {
    return rerankDocuments(this.#api, body, options);
  }

  /**
   * Answers the page's fetches under scope ('/v1/') with the OpenAI-compatible API over this
   * model, through a Service Worker (serve.js, wasmlm.sw.js): {scope, baseURL, close(), unregister()}.
   */
  serve(options) {
    const notHere = servesNowhere(); // before asking for { serve: true }, which would not help
    if (notHere) return Promise.reject(notHere);
    try {
      checkServeOptions(options); // wrong options say so, whichever engine the model runs
    } catch (err) {
      return Promise.reject(err);
    }
    if (!this.#serves) {
      // Before any Service Worker is registered: this worker's wasmlm.wasm has no endpoint.
      return Promise.reject(codedError('serve_failed', `wasmlm: load the model with { serve: true } to serve it: lm.serve runs the OpenAI endpoint of wasmlm-serve.wasm, which a load without it does not download (this model, ${JSON.stringify(this.#name)}, runs wasmlm.wasm)`));
    }
    return serveModel(this.#api, options).catch((err) => { throw withCode(err); });
  }

  /**
   * The model's worker: {shared, loads, tabs, connections, sessions: {open,
   * allocated}, wasmMemoryBytes}. In a SharedWorker (shared: true): how many
   * times it loaded a model, the tabs (pages) and loads connected, their sessions (open, and with
   * their KV cache allocated), its WebAssembly memory; in a dedicated
   * worker shared is false, and loads, tabs and sessions count this page
   * (its one session allocated once a call has used it).
   */
  workerStats() {
    return this.#request({ type: 'stats' });
  }

  /**
   * Stops the worker(s) and frees the model; pending and later calls reject
   * with code no_model. A model loaded with shared: true stays loaded for
   * the other tabs: only this tab's session is freed.
   */
  unload() {
    this.#fail('no_model', 'wasmlm: the model was unloaded');
  }

  // --- a model split across workers ----------------------------------------

  /** Creates and boots the workers of shards 1..count (boot: the boot message). */
  #startFollowers(count, boot) {
    for (let i = 1; i <= count; i++) {
      const f = new Follower(i, (why) => this.#fail('worker_failed', `wasmlm: worker ${i} of ${count + 1} failed: ${why}; load the model again`));
      f.booted = boot.then((message) => f.request(message));
      f.booted.catch(() => {}); // awaited by #split
      this.#followers.push(f);
    }
  }

  // --- plumbing -------------------------------------------------------------

  /** Calls the Go binding's method with args (named: the same by name, for checkSendable); resolves to its value. */
  #call(method, args, named) {
    try {
      checkSendable(named);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#request({ type: 'call', method, args });
  }

  /** Runs a generation, aborting it when signal aborts; resolves to its result. */
  #run(message, signal) {
    return this.#start(message, signal).result;
  }

  /**
   * Starts a generation: {result, abort}. onChunk receives each streamed chunk.
   *
   * A signal that is already aborted travels in the request itself
   * (aborted: true), so that the worker hands Go a signal that is aborted
   * from the start and the generation ends before its first token. Posted as
   * a separate abort message, it would reach the worker only after the Go
   * side had started generating, and Go yields to the worker's event loop
   * only after a token (or a prompt block): one token, sometimes none.
   */
  #start(message, signal, onChunk, onPromptProgress) {
    try {
      if (message.type === 'generate' || message.type === 'stream') {
        checkSendable({ prompt: message.prompt, options: message.options }, ['responseFormat']);
      }
      checkSignal(signal);
      if (onPromptProgress != null && typeof onPromptProgress !== 'function') {
        throw argumentError('onPromptProgress', `must be a function, got ${describe(onPromptProgress)}`);
      }
    } catch (err) {
      return { result: Promise.reject(err), abort: () => {} };
    }
    let id = 0;
    let result = this.#request({ ...message, aborted: signal?.aborted === true, promptProgress: onPromptProgress != null }, [], onChunk, (i) => { id = i; }, this.#worker, onPromptProgress);
    if (this.#followers.length > 0) result = result.then((r) => this.#withFollowersMemory(r));
    const abort = () => this.#abort(id);
    if (signal && !signal.aborted) {
      signal.addEventListener('abort', abort, { once: true });
      const off = () => signal.removeEventListener('abort', abort);
      result.then(off, off);
    }
    return { result, abort };
  }

  /** An async iterable over a generation's chunks (mapped by map; undefined skips, an array gives several). */
  #iterable(message, signal, map, onPromptProgress) {
    const queue = [];
    let wake = null;
    let finished = false;
    let failure = null;
    const notify = () => { wake?.(); wake = null; };
    const { result, abort } = this.#start(message, signal, (c) => {
      const v = map(c);
      if (Array.isArray(v)) queue.push(...v);
      else if (v !== undefined) queue.push(v);
      notify();
    }, onPromptProgress);
    result.then(() => { finished = true; notify(); }, (e) => { finished = true; failure = e; notify(); });
    result.catch(() => {}); // a caller who only iterates gets the error from next()
    return {
      next: async () => {
        for (;;) {
          if (queue.length > 0) return { value: queue.shift(), done: false };
          if (failure) throw failure;
          if (finished) return { value: undefined, done: true };
          await new Promise((resolve) => { wake = resolve; });
        }
      },
      return: async (value) => { // break out of for await: stop generating
        if (!finished) abort();
        finished = true;
        queue.length = 0;
        return { value, done: true };
      },
      [Symbol.asyncIterator]() { return this; },
      result,
    };
  }

  /** Routes a worker's replies and failures to this model. */
  #listen(worker) {
    worker.onmessage = (e) => this.#receive(e.data);
    worker.onerror = (e) => {
      e.preventDefault(); // reported through the rejected calls instead
      this.#fail('worker_failed', `wasmlm: the worker failed: ${e.message || 'script error (is wasmlm.worker.js served?)'}`);
    };
    worker.onmessageerror = () => this.#fail('worker_failed', 'wasmlm: a message from the worker could not be read');
  }

  /** Posts a request to the worker (or to worker); resolves with its result. */
  #request(message, transfer = [], onChunk, onID, worker = this.#worker, onPromptProgress, onProgress) {
    if (this.#dead) return Promise.reject(codedError(this.#dead.code, this.#dead.message));
    const id = this.#nextID++;
    onID?.(id);
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onChunk, onPromptProgress, onProgress });
      try {
        worker.postMessage({ ...message, id }, transfer);
      } catch (err) {
        this.#pending.delete(id);
        reject(err?.name === 'DataCloneError' // a function or another uncloneable value in the arguments
          ? invalidCall(`the arguments cannot be sent to the worker: ${err.message}`, { cause: err })
          : codedError('js_exception', `wasmlm: JavaScript threw while the arguments were copied: ${describeThrown(err)}`, { cause: err }));
      }
    });
  }

  /** A generation's result plus wasmMemoryBytesPerWorker: every worker's memory, worker 0's first. */
  async #withFollowersMemory(r) {
    if (r && typeof r === 'object' && typeof r.wasmMemoryBytes === 'number') {
      const rest = await Promise.all(this.#followers.map((f) => f.request({ type: 'memory' }).catch(() => null)));
      r.wasmMemoryBytesPerWorker = [r.wasmMemoryBytes, ...rest];
    }
    return r;
  }

  #abort(id) {
    if (id && this.#pending.has(id) && !this.#dead) this.#worker.postMessage({ type: 'abort', id });
  }

  #receive(m) {
    const p = this.#pending.get(m.id);
    if (m.type === 'fatal') {
      this.#fail('worker_failed', `wasmlm: the WebAssembly runtime stopped: ${m.message}`);
      return;
    }
    if (!p) return;
    if (m.type === 'chunk') {
      p.onChunk?.(m.chunk);
      return;
    }
    if (m.type === 'progress') {
      try {
        p.onProgress?.(m.progress);
      } catch (err) {
        this.#fail('js_exception', `wasmlm: JavaScript threw in onProgress: ${describeThrown(err)}`);
      }
      return;
    }
    if (m.type === 'promptProgress') {
      try {
        p.onPromptProgress?.(m.progress);
      } catch (err) {
        globalThis.reportError?.(err); // the caller's callback threw: the generation goes on
      }
      return;
    }
    this.#pending.delete(m.id);
    if (m.error) p.reject(wasmlmError(m.error));
    else p.resolve(m.value);
    if (m.error?.code === 'device_lost') {
      // The model's weights were on that device: this model is done, and
      // the page's next loads with device 'auto' run on the CPU.
      gpuLost = `a WebGPU device was lost on this page (${m.error.message.replace(/^wasmlm: /, '')}); device: 'webgpu' tries the GPU again`;
      this.#fail('device_lost', `wasmlm: the model's GPU device was lost: load the model again (device 'auto' then runs it on the CPU)`);
    }
  }

  /**
   * Ends the worker and rejects every pending and later call with an Error
   * of code and message why. An unload (code no_model) first lets the worker
   * free its GPU buffers (GPUBuffer.destroy), for a second at most.
   */
  #fail(code, why) {
    if (this.#dead) return;
    this.#dead = { code, message: why };
    if (servable === this) servable = null;
    if (code === 'no_model' && this.#info?.device === 'webgpu') {
      const worker = this.#worker;
      const end = () => worker.terminate();
      worker.onmessage = (e) => { if (e.data?.type === 'result' && e.data.id === 0) end(); };
      setTimeout(end, 1000);
      worker.postMessage({ type: 'unload', id: 0 });
    } else {
      this.#worker.terminate();
    }
    stopShared(this.#control);
    for (const f of this.#followers) f.terminate(code, why);
    for (const p of this.#pending.values()) p.reject(codedError(code, why));
    this.#pending.clear();
  }
}

export default WasmLM;


/**
 * Whether a split model's workers can exchange through shared memory: the
 * page is cross-origin isolated (served with COOP and COEP), so it has
 * SharedArrayBuffer and workers may Atomics.wait, or the host says its
 * workers may (Node.js's worker threads).
 */
function sharedMemoryAvailable() {
  return (host.sharedMemory ?? globalThis.crossOriginIsolated === true) && typeof SharedArrayBuffer === 'function'
    && typeof Atomics?.wait === 'function';
}

/**
 * Tells every worker of a group that exchanges through control (null: none)
 * that the page gave up on it: one waiting for a message fails at once, not
 * when its worker is ended.
 */
function stopShared(control) {
  if (!control) return;
  const words = new Int32Array(control);
  Atomics.store(words, 0, 1);
  for (let i = 1; i < words.length; i++) Atomics.notify(words, i);
}

/** promise, or a rejection with abortError when signal aborts first. */
function untilAborted(promise, signal) {
  if (!signal) return promise;
  return Promise.race([promise, new Promise((_, reject) => {
    if (signal.aborted) reject(abortError(signal));
    signal.addEventListener('abort', () => reject(abortError(signal)), { once: true });
  })]);
}

/** Separates the AbortSignal (which cannot cross to the worker) from the options. */
function splitSignal(options) {
  if (options === null || typeof options !== 'object' || Array.isArray(options) || !('signal' in options)) {
    return [options, undefined];
  }
  const { signal, ...rest } = options;
  return [rest, signal ?? undefined];
}

/**
 * splitSignal, and the onPromptProgress callback apart too (it stays in the
 * page; the worker posts the progress; #start checks it): [options,
 * signal, callback].
 */
function splitCallbacks(options) {
  const [rest, signal] = splitSignal(options);
  if (rest === null || typeof rest !== 'object' || Array.isArray(rest) || !('onPromptProgress' in rest)) {
    return [rest, signal, undefined];
  }
  const { onPromptProgress, ...others } = rest;
  return [others, signal, onPromptProgress ?? undefined];
}
