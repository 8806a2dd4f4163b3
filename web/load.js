// load.js: what wasmlm.js reads a model with — checking sources, reading
// GGUF headers, and the whole-file read of a model that is not GGUF (a
// llama2.c checkpoint and its tokenizer). An ES module.

import {
  abortError, argumentError, codedError, describe, describeThrown, httpError,
} from './errors.js';
import { CACHE_NAME, cache as modelCache, cachedModel } from './cache.js';
import { host, hostFetch, unbundledURL } from './host.js';
import { Sha256 } from './sha256.js';
import { openReader, splitURLs } from './reader.js';


/** A model name from its source (checked): the file's name, or the URL's last part. */
export function sourceName(source) {
  if (typeof Blob !== 'undefined' && source instanceof Blob) return source.name || 'model';
  if (source instanceof URL) {
    const path = source.pathname;
    try {
      return decodeURIComponent(path.slice(path.lastIndexOf('/') + 1)) || 'model';
    } catch {
      return 'model'; // a malformed %-escape
    }
  }
  return 'model';
}

/** Combines the progress of the files a load reads into one {loaded, total, cached}. */
export class Progress {
  constructor(onProgress, parts) {
    this.onProgress = onProgress;
    this.parts = Array.from({ length: parts }, () => ({ loaded: 0, total: undefined, cached: false }));
  }

  part(i) {
    return (loaded, total, cached) => {
      Object.assign(this.parts[i], { loaded, total, cached });
      if (!this.onProgress) return;
      const known = this.parts.every((p) => p.total !== undefined);
      const progress = {
        loaded: this.parts.reduce((s, p) => s + p.loaded, 0),
        total: known ? this.parts.reduce((s, p) => s + p.total, 0) : undefined,
        cached: this.parts.every((p) => p.cached),
      };
      try {
        this.onProgress(progress);
      } catch (err) { // as the Go side reports a callback that threw
        throw codedError('js_exception', `wasmlm: JavaScript threw in onProgress: ${describeThrown(err)}`, { cause: err });
      }
    };
  }
}

/**
 * Checks a model or tokenizer source (the argument or option field): a URL
 * (a string is resolved against the page, and returned as a URL), an
 * ArrayBuffer, a typed array or a Blob.
 */
export function checkSource(source, field) {
  if (typeof source === 'string' || source instanceof URL) {
    try {
      return new URL(source, globalThis.location?.href);
    } catch {
      throw argumentError(field, `is not a valid URL: ${describe(String(source))}`);
    }
  }
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source) || (typeof Blob !== 'undefined' && source instanceof Blob)) {
    return source;
  }
  throw argumentError(field, `must be a URL, an ArrayBuffer, a typed array or a Blob, got ${describe(source)}`);
}

/**
 * Reads a checked model source into bytes. owned is true when the bytes are
 * ours (downloaded, read from a Blob, or copied from a view) and can be
 * transferred to the worker without a copy; an ArrayBuffer the caller owns
 * is copied instead, so the caller's buffer is never detached. It rejects
 * with code aborted when signal aborts, fetch_failed when the bytes cannot
 * be had (an HTTP error status, the network, an unreadable file), and
 * js_exception when onProgress throws.
 */
export async function readSource(source, what, report, { cache, signal }) {
  try {
    if (source instanceof URL) {
      const bytes = await download(source.href, report, { cache, signal });
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
    const bytes = await readStream(source.stream(), source.size, report, false, signal);
    return { bytes, owned: true };
  } catch (err) {
    if (signal?.aborted) throw abortError(signal);
    if (typeof err?.code === 'string') throw err; // ours: an HTTP error status, onProgress that threw
    throw codedError('fetch_failed', `wasmlm: reading the ${what} failed: ${err?.message ?? err}`, { cause: err });
  }
}

/**
 * Fetches url with streamed progress, answering from Cache Storage when it
 * holds the URL and keeping a fresh download there. Without Cache Storage
 * (non-secure contexts, some private modes) it just fetches.
 */
export async function download(url, report, { cache, signal }) {
  let store = null;
  if (cache && globalThis.caches) {
    store = await caches.open(CACHE_NAME).catch(() => null);
  }
  let res = store ? await store.match(url).catch(() => undefined) : undefined;
  const cached = !!res;
  if (!res) {
    res = await hostFetch(url, { signal });
    if (!res.ok) throw httpError(url, res);
    if (store) {
      store.put(url, res.clone()).catch((err) => console.warn(`wasmlm: could not cache ${url}: ${err.message}`));
    }
  }
  // A compressed response's Content-Length counts compressed bytes.
  const length = res.headers.get('content-encoding') ? NaN : Number(res.headers.get('content-length'));
  return readStream(res.body, Number.isFinite(length) && length > 0 ? length : undefined, report, cached, signal);
}

/** Reads a byte stream into one Uint8Array, reporting progress per chunk. */
export async function readStream(stream, total, report, cached, signal) {
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

// --- GGUF models, read range by range ---------------------------------------

/** How much of a file is read first for its header; it doubles while the Go side asks for more. */
const FIRST_PREFIX = 1 << 20;

/** The most of a file read as its header (the Go side refuses longer headers). */
const MAX_PREFIX = 64 << 20;

/** How much of a model held as bytes the page sends a worker at once. */
const FEED_CHUNK = 8 << 20;

/** Checks the kvType option: undefined, 'auto', 'f16' or 'f32'. */
export function checkKVType(kvType) {
  if (kvType != null && !['auto', 'f16', 'f32'].includes(kvType)) {
    throw argumentError('kvType', `must be 'auto', 'f16' or 'f32', got ${describe(kvType)}`);
  }
}

/**
 * Checks the contextShift option — undefined, a boolean, or {nKeep} (an
 * integer >= -1, 0 when omitted) — and returns what the page's chat
 * completions send with each request as its default: {contextShift, nKeep}.
 */
export function checkContextShift(v) {
  if (v == null || typeof v === 'boolean') return { contextShift: v === true, nKeep: 0 };
  if (typeof v !== 'object' || Array.isArray(v)) {
    throw argumentError('contextShift', `must be a boolean or {nKeep}, got ${describe(v)}`);
  }
  for (const k of Object.keys(v)) {
    if (k !== 'nKeep') throw argumentError(`contextShift.${k}`, 'is not an option (known: nKeep)');
  }
  const nKeep = v.nKeep ?? 0;
  if (!Number.isInteger(nKeep) || nKeep < -1 || nKeep > 0x7fffffff) {
    throw argumentError('contextShift.nKeep', `must be an integer >= -1 (-1: the whole prompt), got ${describe(v.nKeep)}`);
  }
  return { contextShift: true, nKeep };
}

/** Checks the device option: undefined, 'auto', 'webgpu' or 'cpu'. */
export function checkDevice(device) {
  if (device != null && !['auto', 'webgpu', 'cpu'].includes(device)) {
    throw argumentError('device', `must be 'auto', 'webgpu' or 'cpu', got ${describe(device)}`);
  }
}

/**
 * The workers a load with device 'webgpu' runs in: one, the GPU's. It
 * rejects workers > 1 (code invalid_argument, field workers) and a model
 * that needs more than one worker's memory (device_unsupported).
 */
export function checkGPUWorkers(workers, inspection) {
  if (workers !== 'auto' && workers > 1) {
    throw argumentError('workers', `must be 1 or 'auto' with device: 'webgpu' (one GPU serves one worker), got ${workers}`);
  }
  if (inspection && inspection.memory.workers > 1) {
    throw codedError('device_unsupported', `wasmlm: device 'webgpu' cannot be used: the model needs ${inspection.memory.workers} workers' memory (${MiB(inspection.memory.total)}), and the GPU serves one worker`, { memory: inspection.memory });
  }
}

/**
 * The files of a model source (checked as checkSource does): one URL — the
 * first part of a split GGUF (name-00001-of-00003.gguf) stands for all its
 * parts — a Blob, bytes, or an array of URLs or Blobs (a split GGUF's parts,
 * in order). Each is {source, url} | {source, blob} | {source, bytes}.
 */
export function checkSources(source, field) {
  const list = Array.isArray(source) ? source : [source];
  if (list.length === 0 || list.length > 9999) {
    throw argumentError(field, `must be a URL, an ArrayBuffer, a typed array, a Blob or an array of a split model's parts, got ${list.length === 0 ? 'an empty array' : 'too many parts'}`);
  }
  const files = list.map((s, i) => {
    const checked = checkSource(s, Array.isArray(source) ? `${field}[${i}]` : field);
    if (checked instanceof URL) return { source: checked, url: checked.href };
    if (typeof Blob !== 'undefined' && checked instanceof Blob) return { source: checked, blob: checked };
    if (Array.isArray(source)) throw argumentError(`${field}[${i}]`, 'must be a URL or a Blob: the parts of a split model are files');
    const bytes = checked instanceof ArrayBuffer ? new Uint8Array(checked) : new Uint8Array(checked.buffer, checked.byteOffset, checked.byteLength);
    return { source: checked, bytes };
  });
  if (files.length === 1 && files[0].url) {
    const urls = splitURLs(files[0].url);
    if (urls.length > 1) return urls.map((url) => ({ source: new URL(url), url }));
  }
  return files;
}

/**
 * The first bytes of every file of a GGUF model and the files' sizes:
 * {prefixes, sizes, grow(i)}; grow reads twice as much of file i. null when
 * the model is not GGUF (or a server does not say how large it is): it is
 * then read whole.
 */
export async function readHeaders(files, signal) {
  const readers = files.map((f) => (f.bytes ? null : openReader(f.blob ? { blob: f.blob } : { url: f.url })));
  const read = async (i, n) => {
    if (files[i].bytes) {
      const b = files[i].bytes;
      return { bytes: b.slice(0, Math.min(n, b.length)), size: b.length };
    }
    try {
      return await readers[i].prefix(n);
    } catch (err) {
      if (signal?.aborted) throw abortError(signal);
      if (err?.sizeUnknown) return null;
      throw err;
    }
  };
  const heads = [];
  for (let i = 0; i < files.length; i++) {
    signal?.throwIfAborted();
    const h = await read(i, FIRST_PREFIX);
    if (!h) return null;
    if (i === 0 && !(h.bytes.length >= 4 && String.fromCharCode(...h.bytes.subarray(0, 4)) === 'GGUF')) return null;
    heads.push(h);
  }
  const head = {
    prefixes: heads.map((h) => h.bytes),
    sizes: heads.map((h) => h.size),
    async grow(i) {
      const n = Math.min(head.prefixes[i].length * 2, MAX_PREFIX, head.sizes[i]);
      if (n <= head.prefixes[i].length) {
        throw codedError('invalid_model', `wasmlm: the header of file ${i + 1} is longer than ${MAX_PREFIX >> 20} MiB or than the file`);
      }
      const h = await read(i, n);
      head.prefixes[i] = h.bytes;
    },
  };
  return head;
}

/**
 * Asks a booted worker (ask posts a request) what the model whose headers
 * head holds is, growing the prefixes while the Go side needs more.
 */
export async function inspectHeaders(head, ask, options) {
  for (;;) {
    const r = await ask({ type: 'inspect', prefixes: head.prefixes, sizes: head.sizes, options: withoutUndefined(options) });
    if (!(r.more >= 0)) return r;
    await head.grow(r.more);
  }
}

function withoutUndefined(o) {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));
}

const MiB = (n) => `${Math.round(n / (1 << 20))} MiB`;

/**
 * The error of a model that does not fit n workers (code model_too_large,
 * with memory: the inspection's memory, and workersNeeded), naming the
 * numbers and the workers count that would fit.
 */
export function modelTooLarge(inspection, n) {
  const m = inspection.memory;
  const p = m.perWorker;
  const limits = [`a worker holds at most ${MiB(m.limits.worker)}`];
  if (m.limits.device != null) limits.push(`this device reports ${MiB(m.limits.device)} of memory`);
  const fix = m.workersNeeded != null
    ? `it fits with workers: ${m.workersNeeded}`
    : `no split fits (at most ${inspection.headCountKv} workers, one per key/value head)`;
  return codedError('model_too_large',
    `wasmlm: the model needs ${MiB(p.total)} per worker across ${n} worker${n > 1 ? 's' : ''} ` +
    `(weights ${MiB(p.weights)}, KV cache ${MiB(p.kvCache)} for ${inspection.sessionContextLength} positions in ${inspection.kvType}, scratch ${MiB(p.scratch)}); ` +
    `${limits.join(' and ')}: ${fix}`,
    { memory: m, workersNeeded: m.workersNeeded });
}

/**
 * files, with the ones the cache (cache.js) holds whole as Blobs ({url,
 * blob, cached: true}), so that reading their headers and bytes needs no
 * network. Nothing is downloaded here.
 */
export async function fromCache(files, { cache, sha256, signal }) {
  if (!cache || !files.every((f) => f.url)) return files;
  const entries = await modelCache.list().catch(() => []);
  return Promise.all(files.map(async (f) => {
    if (!entries.some((e) => e.url === f.url && e.complete)) return f;
    const r = await cachedModel(f.url, { sha256, signal }).catch(() => null); // a damaged entry: downloaded later
    return r ? { ...f, blob: r.file, cached: r.cached } : f;
  }));
}

/**
 * The sources the workers read: files, with the URLs downloaded into the
 * cache (cache.js) where cache is on and the browser can keep them, as
 * Blobs (cached: whether they were there already). A download reports
 * progress with phase 'download' (and 'verify' while a stored file is
 * hashed). Where the browser will not store a model (quota), it is read
 * from the network instead.
 */
export async function cachedSources(files, { cache, sha256, signal, onProgress }) {
  if (sha256 != null && files.length > 1) {
    throw argumentError('sha256', 'is the digest of one file; a split model comes in parts');
  }
  if (!cache) return files.map((f) => ({ cached: false, ...f }));
  const out = [];
  for (const f of files) {
    if (!f.url || f.blob) {
      out.push({ cached: false, ...f });
      continue;
    }
    const report = (loaded, total, phase) => {
      if (phase !== 'cached') onProgress?.({ loaded, total, cached: false, phase });
    };
    let r;
    try {
      r = await cachedModel(f.url, { sha256, signal, onProgress: report });
    } catch (err) {
      if (err?.code !== 'storage_failed') throw err;
      console.warn(`wasmlm: ${err.message}; reading the model from the network instead`);
      r = null;
    }
    out.push(r ? { ...f, blob: r.file, handle: r.handle, cached: r.cached } : { cached: false, ...f });
  }
  return out;
}

/**
 * Sends a worker (w.request) the bytes its model or shard needs from
 * sources held as bytes by this page: prepare, then a fill per chunk (a
 * copy of FEED_CHUNK bytes at most, transferred), reporting {loaded, total}.
 */
export async function feedBytes(w, shard, sources, onBytes, signal) {
  const { sha256, ...prepare } = shard;
  const plan = await w.request({ type: 'prepare', ...prepare });
  if (plan.more >= 0) throw codedError('internal', `wasmlm: the header of file ${plan.more + 1} needs more than the page read`);
  if (sha256) checkDigest(sources[0].bytes, sha256, 'the model');
  let loaded = 0;
  onBytes({ loaded, total: plan.bytes });
  for (const [source, start, end] of plan.reads) {
    for (let at = start; at < end; at += FEED_CHUNK) {
      if (signal?.aborted) throw abortError(signal);
      const chunk = sources[source].bytes.slice(at, Math.min(at + FEED_CHUNK, end));
      loaded += await w.request({ type: 'fill', source, offset: at, chunk }, [chunk.buffer]);
      onBytes({ loaded, total: plan.bytes });
    }
  }
}

/**
 * Checks that bytes have the SHA-256 want (hex): code integrity_failed
 * otherwise.
 */
export function checkDigest(bytes, want, what) {
  const got = new Sha256().update(bytes).hex();
  if (got !== want.toLowerCase()) {
    throw codedError('integrity_failed', `wasmlm: ${what}'s SHA-256 is ${got}, not the ${want} asked for`);
  }
}

/**
 * The default model ({name, model}) of default-model.js, imported from
 * beside this module when a load names no model. Not a literal import, which
 * a bundler would follow and so copy the model into every app: a bundled app
 * that wants it imports wasmlm/default-model itself, and is told so here.
 */
async function defaultModel() {
  try {
    return (await import(/* webpackIgnore: true */ /* @vite-ignore */ unbundledURL('./default-model.js').href)).DEFAULT_MODEL;
  } catch (err) {
    throw argumentError('source', `is needed: the default model is not beside wasmlm.js (${err?.message ?? err}); a bundled app imports it — import { DEFAULT_MODEL } from 'wasmlm/default-model'; WasmLM.load(DEFAULT_MODEL)`);
  }
}

/**
 * [source, name] for a load or inspect: the default model's when source is
 * null, a model description's ({model, name}, as DEFAULT_MODEL) parts, and
 * what the host makes of it (Node.js: a file path becomes a File).
 */
export async function resolveSource(source, name, hfEndpoint) {
  if (source == null) source = await defaultModel();
  if (source !== null && typeof source === 'object' && Object.getPrototypeOf(source) === Object.prototype && 'model' in source) {
    if (source.name != null && typeof source.name !== 'string') {
      throw argumentError('source.name', `must be a string, got ${describe(source.name)}`);
    }
    name ??= source.name ?? undefined;
    source = source.model;
  }
  const endpoint = checkHFEndpoint(hfEndpoint ?? host.hfEndpoint ?? HF_ENDPOINT);
  source = Array.isArray(source)
    ? source.map((s, i) => hfURL(s, endpoint, `source[${i}]`))
    : hfURL(source, endpoint, 'source');
  if (host.resolveSource) source = await host.resolveSource(source);
  return [source, name];
}

/** Where hf: sources download from unless the load option hfEndpoint (or, in Node.js, HF_ENDPOINT) says otherwise. */
export const HF_ENDPOINT = 'https://huggingface.co';

/** Checks a Hugging Face endpoint (the load option hfEndpoint): an http(s) URL, returned without its trailing slashes. */
export function checkHFEndpoint(endpoint) {
  let url = null;
  try {
    url = typeof endpoint === 'string' ? new URL(endpoint) : null;
  } catch { /* said below */ }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
    throw argumentError('hfEndpoint', `must be an http: or https: URL without a query, such as ${HF_ENDPOINT}, got ${describe(endpoint)}`);
  }
  return url.href.replace(/\/+$/, '');
}

const HF_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const HF_REVISION = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;

/**
 * The download URL of a file on Hugging Face named by the shorthand
 * hf:owner/repo/path/in/repo.gguf, or hf:owner/repo/file.gguf@revision (a
 * branch, tag or commit; main when none): endpoint/owner/repo/resolve/
 * revision/path/in/repo.gguf, as a string. Any other source (or a URL object
 * that is not hf:) is returned as it is. A malformed hf: source is an
 * invalid_argument error of field that says what is wrong.
 */
export function hfURL(source, endpoint, field) {
  const s = source instanceof URL ? source.href : source;
  if (typeof s !== 'string' || !/^hf:/i.test(s)) return source;
  const bad = (why) => argumentError(field, `${why}: a Hugging Face file is hf:owner/repo/file.gguf, or hf:owner/repo/file.gguf@revision; got ${describe(s)}`);
  let rest = s.slice(3);
  if (rest.startsWith('/')) throw bad('has a slash after hf: (hf:owner/…, not hf://owner/…)');
  let revision = 'main';
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    revision = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!HF_REVISION.test(revision) || revision.split('/').some((p) => p === '' || p === '.' || p === '..')) {
      throw bad(`has a malformed revision ${describe(revision)}`);
    }
  }
  const [owner, repo, ...path] = rest.split('/');
  if (!HF_NAME.test(owner ?? '') || !HF_NAME.test(repo ?? '')) throw bad('does not start with an owner and a repository (letters, digits, . _ -)');
  if (path.length === 0) throw bad('names no file in the repository');
  if (path.some((p) => p === '' || p === '.' || p === '..' || /[\s?#\\%]/.test(p))) throw bad('has an empty or malformed path in the repository');
  const encoded = [owner, repo, 'resolve', encodeURIComponent(revision), ...path.map(encodeURIComponent)].join('/');
  return `${endpoint}/${encoded}`;
}
