// wasmlm.js: run a language model in a Web Worker, from any static host.
//
//   import { WasmLM } from './wasmlm.js';
//   const lm = await WasmLM.load();                      // the default model beside this file
//   for await (const chunk of lm.stream('Once upon a time')) out.textContent += chunk.text;
//
// The model runs in a dedicated worker (wasmlm.worker.js, which runs
// wasmlm.wasm through Go's wasm_exec.js), so the page's main thread never
// blocks. The engine's matrix products run on SIMD128 kernels
// (wasmlm-simd.wasm, attached by simd.js) where the browser has SIMD, on
// pure Go otherwise. No SharedArrayBuffer and no special headers are needed.
// Types: wasmlm.d.ts. Option names and defaults: see there and the README.

import { simdSupported } from './simd.js';

const here = import.meta.url;
const WORKER_URL = new URL('./wasmlm.worker.js', here).href;
const WASM_URL = new URL('./wasmlm.wasm', here).href;
const SIMD_URL = new URL('./wasmlm-simd.wasm', here).href;

/** The default model, shipped beside this module: stories260K (MIT), a GGUF file that carries its vocabulary. */
export const DEFAULT_MODEL = Object.freeze({
  name: 'stories260K',
  model: new URL('./models/stories260K-F16.gguf', here).href,
});

/** The Cache Storage cache that keeps downloaded models. */
export const CACHE_NAME = 'wasmlm-models-v1';

const LOAD_OPTIONS = ['onProgress', 'tokenizer', 'cache', 'contextLength', 'signal', 'name', 'simd'];
const FINISH_TO_OPENAI = { stop: 'stop', length: 'length', context: 'length', abort: 'abort' };
const OPENAI_PARAMS = {
  max_tokens: 'maxTokens', max_completion_tokens: 'maxTokens', temperature: 'temperature',
  top_p: 'topP', top_k: 'topK', min_p: 'minP', repeat_penalty: 'repeatPenalty',
  presence_penalty: 'presencePenalty', frequency_penalty: 'frequencyPenalty', seed: 'seed', stop: 'stop',
};
const created = Symbol('WasmLM constructor');

// The compiled wasmlm.wasm and SIMD kernels, shared by every model of the
// page: each model has its own worker, and a WebAssembly.Module can be
// posted to a worker, so only the first load pays for compiling.
let compiled = null;
let compiledKernels = null;

/** Fetches and compiles the WebAssembly module at url. */
async function compileURL(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`wasmlm: fetching ${url} failed: HTTP ${res.status} ${res.statusText}`.trim());
  if (WebAssembly.compileStreaming && (res.headers.get('content-type') || '').startsWith('application/wasm')) {
    return WebAssembly.compileStreaming(res);
  }
  return WebAssembly.compile(await res.arrayBuffer()); // a host that serves .wasm with another MIME type
}

function compileWasm() {
  compiled ??= compileURL(WASM_URL);
  compiled.catch(() => { compiled = null; }); // a failed compile is tried again by the next load
  return compiled;
}

/**
 * The SIMD kernels: {module} or, where they cannot run, {module: null,
 * reason}. Never rejects: without the kernels the engine runs its pure-Go
 * ones, so a missing or broken wasmlm-simd.wasm only costs speed.
 */
function compileKernels() {
  if (!simdSupported()) return Promise.resolve({ module: null, reason: 'this browser has no WebAssembly SIMD128' });
  compiledKernels ??= compileURL(SIMD_URL).then(
    (module) => ({ module }),
    (err) => {
      compiledKernels = null; // tried again by the next load
      return { module: null, reason: `the SIMD kernels did not load: ${err?.message ?? err}` };
    },
  );
  return compiledKernels;
}

/** Error with the code the Go side gave it ("invalid_argument", "no_model", ...). */
function wasmlmError(e) {
  const err = new Error(e.message);
  err.code = e.code ?? 'error';
  return err;
}

/** A language model running in its own Web Worker. Create one with WasmLM.load(). */
export class WasmLM {
  #worker;
  #pending = new Map(); // id → {resolve, reject, onChunk}
  #nextID = 1;
  #dead = null; // why the worker can no longer be used, once it cannot
  #info = null;
  #name;

  constructor(token, worker, name) {
    if (token !== created) throw new TypeError('wasmlm: use WasmLM.load() to create a model');
    this.#worker = worker;
    this.#name = name;
    worker.onmessage = (e) => this.#receive(e.data);
    worker.onerror = (e) => {
      e.preventDefault(); // reported through the rejected calls instead
      this.#fail(`wasmlm: the worker failed: ${e.message || 'script error (is wasmlm.worker.js served?)'}`);
    };
    worker.onmessageerror = () => this.#fail('wasmlm: a message from the worker could not be read');
    /** OpenAI-shaped chat completions: lm.chat.completions.create({messages, stream}). */
    this.chat = Object.freeze({ completions: Object.freeze({ create: (body, opts) => this.#chatCreate(body, opts) }) });
  }

  /**
   * Loads a model into a new worker. source: a URL (string or URL), an
   * ArrayBuffer, a typed array or a Blob/File; nothing for the default
   * model. options: {tokenizer, onProgress, cache = true, contextLength,
   * signal, name, simd = true}; simd: false runs the pure-Go kernels even
   * where the SIMD128 ones could run.
   */
  static async load(source, options = {}) {
    if (options === null || typeof options !== 'object') throw new TypeError('wasmlm: load options must be an object');
    for (const k of Object.keys(options)) {
      if (!LOAD_OPTIONS.includes(k)) throw new TypeError(`wasmlm: unknown load option "${k}" (known: ${LOAD_OPTIONS.join(', ')})`);
    }
    const { onProgress, cache = true, contextLength, signal, simd = true } = options;
    if (onProgress != null && typeof onProgress !== 'function') throw new TypeError('wasmlm: onProgress must be a function');
    if (typeof simd !== 'boolean') throw new TypeError(`wasmlm: simd must be a boolean, got ${describe(simd)}`);
    const tokenizer = options.tokenizer;
    let name = options.name;
    if (source == null) {
      source = DEFAULT_MODEL.model;
      name ??= DEFAULT_MODEL.name;
    }
    name ??= sourceName(source);
    signal?.throwIfAborted();

    const worker = new Worker(WORKER_URL, { name: 'wasmlm' });
    const lm = new WasmLM(created, worker, name);
    try {
      // The worker starts the Go program while the model downloads.
      const kernels = simd ? compileKernels() : Promise.resolve({ module: null, reason: 'disabled by the simd: false load option' });
      const booted = Promise.all([compileWasm(), kernels]).then(([module, k]) =>
        lm.#request({ type: 'boot', module, kernels: k.module, simdReason: k.reason }));
      booted.catch(() => {}); // awaited below; a download failure must not leave it unhandled
      const progress = new Progress(onProgress, tokenizer == null ? 1 : 2);
      const [model, tok] = await Promise.all([
        readSource(source, 'model', progress.part(0), { cache, signal }),
        tokenizer == null ? null : readSource(tokenizer, 'tokenizer', progress.part(1), { cache, signal }),
      ]);
      await booted;
      const transfer = [model, tok].filter((s) => s?.owned).map((s) => s.bytes.buffer);
      lm.#info = await lm.#request({ type: 'load', model: model.bytes, tokenizer: tok?.bytes, contextLength }, transfer);
      return lm;
    } catch (err) {
      lm.unload();
      throw err;
    }
  }

  /** Deletes the cached model downloads (Cache Storage). */
  static async clearCache() {
    if (globalThis.caches) await caches.delete(CACHE_NAME);
  }

  /** What the model is: {format, architecture, vocabSize, contextLength, ...}. */
  get info() { return this.#info; }

  /** The model's name: the default model's, a file's, or the last part of its URL. */
  get name() { return this.#name; }

  /** Token ids of text. options: {addBos = true, special = false}. */
  tokenize(text, options) {
    return this.#request({ type: 'call', method: 'tokenize', args: options === undefined ? [text] : [text, options] });
  }

  /** The text of token ids. */
  detokenize(ids) {
    return this.#request({ type: 'call', method: 'detokenize', args: [ids] });
  }

  /** Generates a completion of prompt; resolves to {text, tokens, finishReason, usage, timings, seed, ...}. */
  generate(prompt, options) {
    const [opts, signal] = splitSignal(options);
    return this.#run({ type: 'generate', prompt, options: opts }, signal);
  }

  /**
   * Streams a completion: an async iterable of {text, token, trace?} chunks,
   * one per token as it is sampled. Its result property resolves to what
   * generate would; breaking out of the loop aborts the generation.
   */
  stream(prompt, options) {
    const [opts, signal] = splitSignal(options);
    return this.#iterable({ type: 'stream', prompt, options: opts }, signal, (chunk) => chunk);
  }

  /** Stops the worker and frees the model; later calls reject. */
  unload() {
    this.#fail('wasmlm: the model was unloaded');
  }

  // --- OpenAI-shaped chat ---------------------------------------------------

  async #chatCreate(body, requestOptions = {}) {
    if (body === null || typeof body !== 'object') throw new TypeError('wasmlm: create() takes a request object {messages, ...}');
    const { messages, stream = false, stream_options: streamOptions, n, signal: bodySignal } = body;
    if (n != null && n !== 1) throw new Error('wasmlm: only n = 1 is supported');
    const options = {};
    for (const [key, name] of Object.entries(OPENAI_PARAMS)) {
      if (body[key] != null) options[name] = body[key];
    }
    const signal = requestOptions?.signal ?? bodySignal;
    const base = {
      id: `chatcmpl-${randomID()}`,
      created: Math.floor(Date.now() / 1000),
      model: this.#name,
    };
    const usage = (r) => ({
      prompt_tokens: r.usage.promptTokens, completion_tokens: r.usage.completionTokens, total_tokens: r.usage.totalTokens,
    });
    const request = { type: 'chat', messages, options, openai: true };
    if (!stream) {
      const r = await this.#run(request, signal);
      return {
        ...base, object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: r.text }, logprobs: null, finish_reason: FINISH_TO_OPENAI[r.finishReason] }],
        usage: usage(r), seed: r.seed,
      };
    }
    const controller = new AbortController();
    signal?.addEventListener('abort', () => controller.abort(), { once: true });
    if (signal?.aborted) controller.abort();
    const chunk = (delta, finish) => ({
      ...base, object: 'chat.completion.chunk',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
    const tokens = this.#iterable(request, controller.signal, (c) => (c.text === '' ? undefined : chunk({ content: c.text }, null)));
    const result = tokens.result;
    async function* chunks() {
      yield chunk({ role: 'assistant', content: '' }, null);
      yield* tokens;
      const r = await result;
      yield chunk({}, FINISH_TO_OPENAI[r.finishReason]);
      if (streamOptions?.include_usage) yield { ...base, object: 'chat.completion.chunk', choices: [], usage: usage(r) };
    }
    const it = chunks();
    return { [Symbol.asyncIterator]: () => it, next: () => it.next(), return: (v) => it.return(v), controller, result };
  }

  // --- plumbing -------------------------------------------------------------

  /** Runs a generation, aborting it when signal aborts; resolves to its result. */
  #run(message, signal) {
    return this.#start(message, signal).result;
  }

  /** Starts a generation: {result, abort}. onChunk receives each streamed chunk. */
  #start(message, signal, onChunk) {
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      const result = Promise.reject(new TypeError('wasmlm: signal must be an AbortSignal'));
      return { result, abort: () => {} };
    }
    let id = 0;
    const result = this.#request(message, [], onChunk, (i) => { id = i; });
    const abort = () => this.#abort(id);
    if (signal) {
      if (signal.aborted) abort(); // the worker sees the request, then the abort
      else signal.addEventListener('abort', abort, { once: true });
      const off = () => signal.removeEventListener('abort', abort);
      result.then(off, off);
    }
    return { result, abort };
  }

  /** An async iterable over a generation's chunks (mapped by map; undefined skips). */
  #iterable(message, signal, map) {
    const queue = [];
    let wake = null;
    let finished = false;
    let failure = null;
    const notify = () => { wake?.(); wake = null; };
    const { result, abort } = this.#start(message, signal, (c) => {
      const v = map(c);
      if (v !== undefined) queue.push(v);
      notify();
    });
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

  /** Posts a request to the worker; resolves with its result. */
  #request(message, transfer = [], onChunk, onID) {
    if (this.#dead) return Promise.reject(new Error(this.#dead));
    const id = this.#nextID++;
    onID?.(id);
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onChunk });
      try {
        this.#worker.postMessage({ ...message, id }, transfer);
      } catch (err) { // a function or other uncloneable value in the arguments
        this.#pending.delete(id);
        reject(new TypeError(`wasmlm: the arguments cannot be sent to the worker: ${err.message}`));
      }
    });
  }

  #abort(id) {
    if (id && this.#pending.has(id) && !this.#dead) this.#worker.postMessage({ type: 'abort', id });
  }

  #receive(m) {
    const p = this.#pending.get(m.id);
    if (m.type === 'fatal') {
      this.#fail(`wasmlm: the WebAssembly runtime stopped: ${m.message}`);
      return;
    }
    if (!p) return;
    if (m.type === 'chunk') {
      p.onChunk?.(m.chunk);
      return;
    }
    this.#pending.delete(m.id);
    if (m.error) p.reject(wasmlmError(m.error));
    else p.resolve(m.value);
  }

  /** Ends the worker and rejects every pending call with why. */
  #fail(why) {
    if (this.#dead) return;
    this.#dead = why;
    this.#worker.terminate();
    for (const p of this.#pending.values()) p.reject(new Error(why));
    this.#pending.clear();
  }
}

export default WasmLM;

/** Separates the AbortSignal (which cannot cross to the worker) from the options. */
function splitSignal(options) {
  if (options === null || typeof options !== 'object' || Array.isArray(options) || !('signal' in options)) {
    return [options, undefined];
  }
  const { signal, ...rest } = options;
  return [rest, signal ?? undefined];
}

/** A model name from its source: the file's name, or the URL's last part. */
function sourceName(source) {
  if (typeof Blob !== 'undefined' && source instanceof Blob) return source.name || 'model';
  if (typeof source === 'string' || source instanceof URL) {
    const path = new URL(source, globalThis.location?.href).pathname;
    return decodeURIComponent(path.slice(path.lastIndexOf('/') + 1)) || 'model';
  }
  return 'model';
}

function randomID() {
  const b = crypto.getRandomValues(new Uint8Array(12));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

/** Combines the progress of the files a load reads into one {loaded, total, cached}. */
class Progress {
  constructor(onProgress, parts) {
    this.onProgress = onProgress;
    this.parts = Array.from({ length: parts }, () => ({ loaded: 0, total: undefined, cached: false }));
  }

  part(i) {
    return (loaded, total, cached) => {
      Object.assign(this.parts[i], { loaded, total, cached });
      if (!this.onProgress) return;
      const known = this.parts.every((p) => p.total !== undefined);
      this.onProgress({
        loaded: this.parts.reduce((s, p) => s + p.loaded, 0),
        total: known ? this.parts.reduce((s, p) => s + p.total, 0) : undefined,
        cached: this.parts.every((p) => p.cached),
      });
    };
  }
}

/**
 * Reads a model source into bytes. owned is true when the bytes are ours
 * (downloaded, read from a Blob, or copied from a view) and can be
 * transferred to the worker without a copy; an ArrayBuffer the caller owns
 * is copied instead, so the caller's buffer is never detached.
 */
async function readSource(source, what, report, { cache, signal }) {
  if (typeof source === 'string' || source instanceof URL) {
    const bytes = await download(new URL(source, globalThis.location?.href).href, report, { cache, signal });
    return { bytes, owned: true };
  }
  if (source instanceof ArrayBuffer) {
    report(source.byteLength, source.byteLength, false);
    return { bytes: new Uint8Array(source), owned: false };
  }
  if (ArrayBuffer.isView(source)) {
    const copy = new Uint8Array(source.buffer, source.byteOffset, source.byteLength).slice();
    report(copy.length, copy.length, false);
    return { bytes: copy, owned: true };
  }
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    const bytes = await readStream(source.stream(), source.size, report, false, signal);
    return { bytes, owned: true };
  }
  throw new TypeError(`wasmlm: the ${what} must be a URL, an ArrayBuffer, a typed array or a Blob, got ${describe(source)}`);
}

function describe(v) {
  if (v === null) return 'null';
  if (typeof v === 'object') return v.constructor?.name ?? 'an object';
  return typeof v;
}

/**
 * Fetches url with streamed progress, answering from Cache Storage when it
 * holds the URL and keeping a fresh download there. Without Cache Storage
 * (non-secure contexts, some private modes) it just fetches.
 */
async function download(url, report, { cache, signal }) {
  let store = null;
  if (cache && globalThis.caches) {
    store = await caches.open(CACHE_NAME).catch(() => null);
  }
  let res = store ? await store.match(url).catch(() => undefined) : undefined;
  const cached = !!res;
  if (!res) {
    res = await fetch(url, { signal });
    if (!res.ok) throw new Error(`wasmlm: fetching ${url} failed: HTTP ${res.status} ${res.statusText}`.trim());
    if (store) {
      store.put(url, res.clone()).catch((err) => console.warn(`wasmlm: could not cache ${url}: ${err.message}`));
    }
  }
  // A compressed response's Content-Length counts compressed bytes.
  const length = res.headers.get('content-encoding') ? NaN : Number(res.headers.get('content-length'));
  return readStream(res.body, Number.isFinite(length) && length > 0 ? length : undefined, report, cached, signal);
}

/** Reads a byte stream into one Uint8Array, reporting progress per chunk. */
async function readStream(stream, total, report, cached, signal) {
  const reader = stream.getReader();
  const onAbort = () => reader.cancel(signal.reason).catch(() => {});
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    let buf = new Uint8Array(total ?? 1 << 20);
    let loaded = 0;
    report(0, total, cached);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (loaded + value.length > buf.length) { // unknown or wrong length: grow
        const bigger = new Uint8Array(Math.max(buf.length * 2, loaded + value.length));
        bigger.set(buf.subarray(0, loaded));
        buf = bigger;
      }
      buf.set(value, loaded);
      loaded += value.length;
      report(loaded, total, cached);
    }
    signal?.throwIfAborted();
    report(loaded, loaded, cached);
    return loaded === buf.length ? buf : buf.slice(0, loaded);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
