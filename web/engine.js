// engine.js: the engine's workers for wasmlm.js — compiling a WebAssembly
// file it runs (compileURL), starting the workers that run it (from another
// origin too), and the workers of a split model's other shards (Follower).

import { host, hostFetch, unbundledURL } from './host.js';
import { argumentError, codedError, describe, describeThrown, httpError } from './errors.js';

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
 * split a model further: with the SIMD kernels when the workers exchange by
 * messages and through shared memory, and with pure Go. A token needs three
 * exchanges between workers per layer, and a prompt block three per layer
 * per block: 0.10–0.16 ms each by messages, 0.056–0.064 ms through shared
 * memory, in headless Chromium on a quiet 2-core machine. Measured there
 * (docs/kernels.md, the quiet-machine table of "Prompts are evaluated as
 * matrices"), two workers against one on the 110M
 * shape: Q4_0 (3.9 MiB a layer) 1.41× for prompts and 0.94× for decoding by
 * messages, 1.31× and 1.21× through shared memory; Q8_0 (7.5 MiB) 1.43× and
 * 1.15× by messages, 1.59× and 1.55× through shared memory. On 15M Q8_0
 * (0.5 MiB a layer) two workers lost prompts by messages (0.78×) and decoding
 * either way. With pure Go they won from 0.56 MB a layer (15M Q4_0,
 * 1.16–1.50×) and lost at 0.09 MB (stories260K). A layer's bytes count at
 * most 17/16 a weight (Q8_0's): wider weights stream faster a byte (one
 * Chromium worker read F32 at 14–15 GB/s, Q8_0 at 4.4–6.9 and Q4 at 4.5–5.3),
 * so an F32 layer takes about as long as the same layer in Q8_0.
 */
const AUTO_LAYER_BYTES_PER_WORKER = { messages: 1.5 * (1 << 20), sharedMemory: 1.25 * (1 << 20), pureGo: 256 << 10 };

/**
 * How many workers workers: 'auto' splits a model across: as many as keep
 * AUTO_LAYER_BYTES_PER_WORKER of each layer's weights, at most
 * hardwareConcurrency − 1 but at least 2 of them (on 2 cores both workers
 * compute while the page idles: on a quiet machine two workers won, above),
 * at most MAX_AUTO_WORKERS and the model's key/value heads, and at least one.
 * A llama2.c checkpoint runs in one worker, and so does a model whose family
 * cannot be split (info.splitError says why).
 * info: a ModelInfo or WasmLM.inspect's result (format, fileSize, parameters,
 * blockCount, embeddingLength, feedForwardLength, headCount, headCountKv;
 * keyLength, the head width, when it is not embeddingLength / headCount, as
 * Qwen3's; simd: false for the pure-Go kernels, the SIMD ones otherwise, as
 * load's default).
 * sharedMemory: whether the workers would exchange through shared memory (a
 * cross-origin isolated page).
 * An info that is not an object throws an invalid_argument TypeError.
 */
export function autoWorkers(info, hardwareConcurrency, sharedMemory = false) {
  if (info === null || typeof info !== 'object') {
    throw argumentError('info', `must be lm.info or WasmLM.inspect's result, got ${describe(info)}`);
  }
  const { format, fileSize, parameters, blockCount: layers, embeddingLength: dim, feedForwardLength: hidden } = info;
  if (format !== 'gguf' || info.splitError || !(layers > 0 && parameters > 0 && info.headCount > 0)) return 1;
  const headDim = info.keyLength > 0 ? info.keyLength : dim / info.headCount;
  const qDim = headDim * info.headCount;
  const kvDim = headDim * info.headCountKv;
  const layerParams = 2 * dim * qDim + 2 * dim * kvDim + 3 * dim * hidden; // Wq, Wo, Wk, Wv, gate, up, down
  const layerBytes = layerParams * Math.min(fileSize / parameters, 17 / 16);
  const per = AUTO_LAYER_BYTES_PER_WORKER;
  const perWorker = info.simd === false ? per.pureGo : sharedMemory ? per.sharedMemory : per.messages;
  const wanted = Math.floor(layerBytes / perWorker);
  const total = hardwareConcurrency || 1;
  const cores = total >= 2 ? Math.max(2, total - 1) : 1;
  return Math.max(1, Math.min(wanted, cores, MAX_AUTO_WORKERS, info.headCountKv || 1));
}
