// engine.js: the engine's workers for wasmlm.js — compiling a WebAssembly
// file it runs (compileURL), starting the workers that run it (from another
// origin too), and the workers of a split model's other shards (Follower).

import { host, hostFetch, unbundledURL } from './host.js';
import { codedError, describeThrown, httpError } from './errors.js';

/**
 * Fetches and compiles the WebAssembly module at url. A failed download
 * rejects with code fetch_failed, a module that does not compile with
 * worker_failed (the engine cannot start).
 */
export async function compileURL(url) {
  let res;
  try {
    res = await hostFetch(url);
  } catch (err) {
    throw codedError('fetch_failed', `wasmlm: fetching ${url} failed: ${err?.message ?? err}`, { cause: err });
  }
  if (!res.ok) throw httpError(url, res);
  try {
    if (WebAssembly.compileStreaming && (res.headers.get('content-type') || '').startsWith('application/wasm')) {
      return await WebAssembly.compileStreaming(res);
    }
    return await WebAssembly.compile(await res.arrayBuffer()); // a host that serves .wasm with another MIME type
  } catch (err) {
    throw codedError('worker_failed', `wasmlm: ${url} did not compile: ${err?.message ?? err}`, { cause: err });
  }
}

/**
 * Error with the code the Go side gave it ("invalid_argument", "no_model", ...)
 * and, for an invalid option, the option's name (field; param: OpenAI's spelling).
 */
export function wasmlmError(e) {
  const err = codedError(e.code || 'error', e.message);
  if (e.field !== undefined) Object.assign(err, { field: e.field, param: e.param });
  if (err.code === 'aborted') err.name = 'AbortError'; // an embedding or reranking its signal aborted
  return err;
}

/**
 * The worker of shard index (1..N-1) of a model split across N workers: it
 * boots, loads its shard's file, then follows worker 0 (whose generations
 * drive it through their MessageChannel). onFail(why) when it can no longer.
 */
export class Follower {
  #worker;
  #pending = new Map(); // id → {resolve, reject}
  #nextID = 1;
  #dead = null;

  constructor(index, onFail) {
    this.index = index;
    this.#worker = newWorker(`wasmlm-${index}`);
    const fail = (why) => {
      if (this.#dead) return;
      this.terminate('worker_failed', why);
      onFail(why);
    };
    this.#worker.onmessage = (e) => {
      const m = e.data;
      if (m.type === 'fatal') {
        fail(m.message);
        return;
      }
      const p = this.#pending.get(m.id);
      if (m.type === 'progress' && p) {
        try {
          p.onProgress?.(m.progress);
        } catch (err) {
          fail(`onProgress threw: ${describeThrown(err)}`);
        }
        return;
      }
      if (m.type !== 'result' || !p) return;
      this.#pending.delete(m.id);
      if (m.error) p.reject(wasmlmError(m.error));
      else p.resolve(m.value);
    };
    this.#worker.onerror = (e) => {
      e.preventDefault();
      fail(e.message || 'script error');
    };
    this.#worker.onmessageerror = () => fail('a message from the worker could not be read');
  }

  request(message, transfer = [], onProgress) {
    if (this.#dead) return Promise.reject(codedError(this.#dead.code, this.#dead.message));
    const id = this.#nextID++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress });
      this.#worker.postMessage({ ...message, id }, transfer);
    });
  }

  terminate(code, why) {
    if (this.#dead) return;
    this.#dead = { code, message: why };
    this.#worker.terminate();
    for (const p of this.#pending.values()) p.reject(codedError(code, why));
    this.#pending.clear();
  }
}

let trampoline = null; // the blob: URL of a module that imports wasmlm.worker.js (crossOriginWorker)

/** A new worker running wasmlm.worker.js; code worker_failed when the browser refuses (a Content-Security-Policy, say). */
export function newWorker(name) {
  try {
    if (host.newWorker) return host.newWorker(name);
    try {
      // The URL written out here, the form bundlers follow to a worker script.
      return new Worker(new URL('./wasmlm.worker.js', import.meta.url), { type: 'module', name });
    } catch (err) {
      return crossOriginWorker(name, err);
    }
  } catch (err) {
    throw codedError('worker_failed', `wasmlm: the worker could not start: ${err?.message ?? err}`, { cause: err });
  }
}

/**
 * A page may not start a worker from a script of another origin, as
 * wasmlm.js is when a page imports it from a CDN: the worker then runs a
 * module of the page's own origin (a blob: URL) that imports
 * wasmlm.worker.js, which the CDN's CORS headers allow. Any other failure
 * (err) is thrown as it is.
 */
function crossOriginWorker(name, err) {
  const url = unbundledURL('./wasmlm.worker.js');
  if (!globalThis.location || url.origin === location.origin || url.protocol === 'blob:') throw err;
  trampoline ??= URL.createObjectURL(new Blob([`import ${JSON.stringify(url.href)};\n`], { type: 'text/javascript' }));
  return new Worker(trampoline, { type: 'module', name });
}

/** The most workers the load option workers: 'auto' (the default) uses. */
export const MAX_AUTO_WORKERS = 4;

/**
 * The weight bytes of one layer each worker must keep for workers: 'auto' to
 * split a model further, with the SIMD kernels and with pure Go. A token
 * needs three exchanges between workers per layer (≈ 0.2 ms each in headless
 * Chromium on a 2-core machine), so a worker must take over enough of each
 * layer's compute to pay for them. Measured there in three runs (web/README.md,
 * "Several workers"): two workers with SIMD won on the 110M shape in F32
 * (28 MB of weights a layer) and Q8_0 (7.5 MB) in two runs (1.25–1.54×) and
 * lost in one (0.90×); in Q4_0 and Q4_K (4 MB) 0.64–1.17×; on every smaller
 * model they lost. With pure Go they won from 0.56 MB a layer (15M Q4_0,
 * 1.16–1.50×) and lost at 0.09 MB (stories260K).
 */
const AUTO_LAYER_BYTES_PER_WORKER = { simd: 3 << 20, pureGo: 256 << 10 };

/**
 * How many workers workers: 'auto' splits a model across: as many as keep
 * AUTO_LAYER_BYTES_PER_WORKER of each layer's weights, at most one fewer than
 * hardwareConcurrency (the page and the browser need a core too: on 2 cores,
 * two workers in lockstep swung from 0.9× to 1.5× between runs), at most
 * MAX_AUTO_WORKERS and the model's key/value heads, and at least one. A
 * llama2.c checkpoint runs in one worker, and so does a model whose family
 * cannot be split (info.splitError says why).
 * info: a ModelInfo (format, fileSize, parameters, blockCount, embeddingLength,
 * feedForwardLength, headCount, headCountKv, simd; keyLength, the head width, when
 * it is not embeddingLength / headCount, as Qwen3's).
 */
export function autoWorkers(info, hardwareConcurrency) {
  const { format, fileSize, parameters, blockCount: layers, embeddingLength: dim, feedForwardLength: hidden } = info;
  if (format !== 'gguf' || info.splitError || !(layers > 0 && parameters > 0 && info.headCount > 0)) return 1;
  const headDim = info.keyLength > 0 ? info.keyLength : dim / info.headCount;
  const qDim = headDim * info.headCount;
  const kvDim = headDim * info.headCountKv;
  const layerParams = 2 * dim * qDim + 2 * dim * kvDim + 3 * dim * hidden; // Wq, Wo, Wk, Wv, gate, up, down
  const layerBytes = (fileSize * layerParams) / parameters;
  const perWorker = info.simd ? AUTO_LAYER_BYTES_PER_WORKER.simd : AUTO_LAYER_BYTES_PER_WORKER.pureGo;
  const wanted = Math.floor(layerBytes / perWorker);
  const cores = (hardwareConcurrency || 1) - 1;
  return Math.max(1, Math.min(wanted, cores, MAX_AUTO_WORKERS, info.headCountKv || 1));
}
