// cache.js: the model cache of wasmlm.js — models downloaded once into the
// browser's persistent storage, resumed when a download is interrupted, and
// never handed out incomplete. An ES module; cache-opfs.js, cache-io.js,
// cache.worker.js, sha256.js and errors.js come with it.
//
// Where: the Origin Private File System (OPFS), directory wasmlm-models,
// one entry per URL: <key>.bin (the bytes) and <key>.json (the record
// {url, size, etag, lastModified, complete, sha256, verified}), key the
// SHA-256 of the URL. Bytes are written as they arrive, through
// cache.worker.js's FileSystemSyncAccessHandle (in place, so a tab closed
// mid-download keeps them), or the page's FileSystemWritableFileStream
// where workers have no such handle. Without OPFS, Cache Storage
// (wasmlm-models-v1, the cache wasmlm.js used before): whole responses, not
// resumable. Without either (a non-secure context), nothing: cachedModel
// returns null and the caller fetches.
//
// Invariants: an entry is complete only when its file holds as many bytes
// as the server said (and their SHA-256 is the one asked for, when one is);
// a file whose size or record disagrees is discarded, never read as a
// model; one call at a time works on an entry — in the page (a queue per
// entry) and across tabs (the Web Locks API). Nothing holds a whole file in
// memory: bytes go to disk in 1 MiB pieces and are hashed as they pass.

import { Sha256 } from './sha256.js';
import { opfsModel, parseMeta } from './cache-opfs.js';
import {
  CACHE_DIR, cancel, contentLength, discard, fileOf, get, hashFile, integrityError, jsException, opfsDir,
  storageError, warn, workerCanSync,
} from './cache-io.js';
import { abortError, argumentError, codedError, httpError } from './errors.js';
import { splitURLs } from './reader.js';

export { CACHE_DIR };

/** The Cache Storage cache of the fallback (and of wasmlm.js before OPFS). */
export const CACHE_NAME = 'wasmlm-models-v1';

const LOCK_PREFIX = 'wasmlm-models '; // + entry key: the Web Lock of an entry
const SHA_HEADER = 'x-wasmlm-sha256'; // on a Cache Storage entry: the SHA-256 it was verified against
const STORED_HEADER = 'x-wasmlm-stored'; // on a Cache Storage entry: when it was stored
const ENTRY_FILE = /^([0-9a-f]{64})\.(bin|json)$/;

/**
 * Ensures url is wholly in the cache and returns its bytes: { file: Blob,
 * handle, cached } (handle: the OPFS FileSystemFileHandle of file, which a
 * worker can read with a FileSystemSyncAccessHandle, undefined in Cache
 * Storage; cached: nothing had to be downloaded), or null when this page
 * has no persistent storage (or url is not http(s)): then fetch it.
 * options: sha256 (64 hex digits: the bytes must have this SHA-256),
 * signal (an AbortSignal), onProgress(loaded, total, phase) — phase
 * 'download' as bytes arrive (loaded counts those already on disk from an
 * interrupted download; total is undefined when the server does not say),
 * 'verify' while stored bytes are hashed, 'cached' once for a cache hit.
 * Rejects with code fetch_failed (the network, an HTTP error status: what
 * was downloaded stays for the next call to resume), aborted,
 * integrity_failed (the SHA-256 differs after a whole download: the entry
 * is deleted), storage_failed (the browser would not write: quota),
 * js_exception (onProgress threw), invalid_argument.
 */
export async function cachedModel(url, options = {}) {
  const { href, sha256, signal, onProgress } = checkArguments(url, options);
  if (signal?.aborted) throw abortError(signal);
  const kind = await storage();
  if (!kind || !/^https?:$/.test(new URL(href).protocol)) return null;
  const key = entryKey(href);
  const watching = watch(key, onProgress);
  try {
    return await exclusive(key, signal, () => {
      watching.stop(); // this call's turn: it reports its own progress now
      if (watching.error) throw jsException(watching.error);
      const report = reporter(key, onProgress);
      const args = { sha256, signal, report };
      return kind.opfs ? opfsModel(kind.sync, href, key, args) : cacheStorageModel(href, args);
    });
  } catch (err) {
    if (err?.code === 'storage_failed') { // named after a file of the cache: name the URL
      const cause = err.cause ?? err;
      throw codedError('storage_failed', `wasmlm: the model cache could not store ${href}: ${cause?.name}: ${cause?.message}`, { cause });
    }
    if (typeof err?.code === 'string') throw err;
    if (signal?.aborted) throw abortError(signal);
    throw codedError('storage_failed', `wasmlm: the model cache failed on ${href}: ${err?.name}: ${err?.message ?? err}`, { cause: err });
  } finally {
    watching.stop();
  }
}

/** cache.delete of one URL's entry. */
async function deleteEntry(href) {
  const key = entryKey(href);
  return exclusive(key, undefined, async () => {
    const dir = await opfsDir(false).catch(() => null);
    const inOPFS = dir ? await discard(dir, key) : false;
    const store = await cacheStore();
    const inCache = store ? await store.delete(href) : false;
    return inOPFS || inCache;
  });
}

/**
 * The cache's entries, both kinds: list() → [{ url, size (bytes stored),
 * total (the server's size, when known), complete, sha256 (when verified),
 * storage: 'opfs' | 'cache-storage', modified (ms since 1970) }];
 * delete(url) → whether there was an entry (for the first part of a split
 * model, name-00001-of-0000N.gguf, every part's); clear() → entries removed.
 * delete and clear wait for a download of the entry (in any tab) to end.
 */
export const cache = {
  async list() {
    const out = [];
    const dir = await opfsDir(false).catch(() => null);
    if (dir) {
      for await (const [name, handle] of dir.entries()) {
        const m = ENTRY_FILE.exec(name);
        if (!m || m[2] !== 'json') continue;
        const meta = parseMeta(await (await handle.getFile()).text().catch(() => ''));
        if (!meta) continue;
        const file = await fileOf(dir, `${m[1]}.bin`).catch(() => null); // null too while another tab writes it
        out.push({
          url: meta.url, size: file?.size ?? null, total: meta.size ?? undefined,
          complete: meta.complete && file?.size === meta.size, sha256: meta.sha256 ?? undefined,
          storage: 'opfs', modified: file?.lastModified,
        });
      }
    }
    const store = await cacheStore();
    for (const request of store ? await store.keys() : []) {
      const res = await store.match(request);
      if (!res) continue;
      const size = contentLength(res) ?? (await res.blob()).size;
      out.push({
        url: request.url, size, total: size, complete: true, sha256: res.headers.get(SHA_HEADER) ?? undefined,
        storage: 'cache-storage', modified: Date.parse(res.headers.get(STORED_HEADER) ?? res.headers.get('date') ?? '') || undefined,
      });
    }
    return out;
  },

  async delete(url) {
    const first = checkURL(url, 'url');
    let found = false;
    for (const part of splitURLs(first)) found = (await deleteEntry(part)) || found;
    return found;
  },

  async clear() {
    let removed = 0;
    const dir = await opfsDir(false).catch(() => null);
    if (dir) {
      const keys = new Set();
      for await (const name of dir.keys()) {
        const m = ENTRY_FILE.exec(name);
        if (m) keys.add(m[1]);
      }
      for (const key of keys) {
        if (await exclusive(key, undefined, () => discard(dir, key))) removed++;
      }
    }
    const store = await cacheStore();
    for (const request of store ? await store.keys() : []) {
      const key = entryKey(request.url);
      if (await exclusive(key, undefined, () => store.delete(request))) removed++;
    }
    return removed;
  },
};

// --- storage ------------------------------------------------------------------

let probed = null;

/**
 * What this page stores models in, found once: { opfs: true, sync } (sync:
 * through the worker), { opfs: false } for Cache Storage, or null.
 */
function storage() {
  probed ??= (async () => {
    try {
      await opfsDir(true);
      if (await workerCanSync()) return { opfs: true, sync: true };
      if (typeof globalThis.FileSystemFileHandle?.prototype.createWritable === 'function') return { opfs: true, sync: false };
    } catch {
      // no OPFS: a non-secure context, or a private window of some browsers
    }
    try {
      if (globalThis.caches) {
        await caches.open(CACHE_NAME);
        return { opfs: false };
      }
    } catch {
      // Cache Storage refused too
    }
    return null;
  })();
  return probed;
}

/** The Cache Storage cache, or null when there is none (it is not created). */
async function cacheStore() {
  try {
    return globalThis.caches && (await caches.has(CACHE_NAME)) ? await caches.open(CACHE_NAME) : null;
  } catch {
    return null;
  }
}

/** An entry's key: the SHA-256 of its URL, in hex. */
function entryKey(href) {
  return new Sha256().update(new TextEncoder().encode(href)).hex();
}

// --- the Cache Storage fallback ---------------------------------------------------

/**
 * cachedModel in Cache Storage, with the entry's lock held: a stored
 * response whose body has its Content-Length (and the SHA-256 asked for),
 * else a download streamed into cache.put — whole or not at all (put stores
 * nothing when the body fails), so an interrupted download starts again.
 */
async function cacheStorageModel(url, { sha256, signal, report }) {
  const store = await caches.open(CACHE_NAME);
  const hit = await store.match(url);
  if (hit) {
    const file = await hit.blob();
    let ok = (contentLength(hit) ?? file.size) === file.size;
    if (ok && sha256 && hit.headers.get(SHA_HEADER) !== sha256) {
      const hasher = new Sha256();
      ok = await hashFile(file, 0, file.size, hasher, signal, report).then(() => hasher.hex() === sha256, (err) => {
        if (signal?.aborted || typeof err?.code === 'string') throw err;
        return false;
      });
    }
    if (ok) {
      report(file.size, file.size, 'cached');
      return { file, cached: true };
    }
    warn(`discarding the cached copy of ${url}: its size or SHA-256 is wrong`);
    await store.delete(url);
  }
  const res = await get(url, signal);
  if (!res.ok) {
    cancel(res);
    throw httpError(url, res);
  }
  const total = contentLength(res);
  const hasher = sha256 && new Sha256();
  let received = 0;
  let failure = null;
  const fail = (err) => { failure ??= err; throw err; };
  const body = res.body.pipeThrough(new TransformStream({
    transform(chunk, out) {
      hasher?.update(chunk);
      received += chunk.length;
      try {
        report(received, total, 'download');
      } catch (err) {
        fail(err);
      }
      out.enqueue(chunk);
    },
    flush() {
      if (total !== undefined && received !== total) {
        fail(codedError('fetch_failed', `wasmlm: fetching ${url}: the connection ended after ${received} of ${total} bytes`));
      }
      if (hasher) {
        const got = hasher.hex();
        if (got !== sha256) fail(integrityError(url, sha256, got));
      }
    },
  }));
  const headers = { 'content-type': res.headers.get('content-type') ?? 'application/octet-stream', [STORED_HEADER]: new Date().toUTCString() };
  if (total !== undefined) headers['content-length'] = String(total);
  if (sha256) headers[SHA_HEADER] = sha256; // put stores nothing unless flush found this hash
  report(0, total, 'download');
  try {
    await store.put(url, new Response(body, { headers }));
  } catch (err) {
    if (failure) throw failure;
    if (signal?.aborted) throw abortError(signal);
    if (err?.name === 'QuotaExceededError') throw storageError(url, err);
    throw codedError('fetch_failed', `wasmlm: fetching ${url} failed after ${received} bytes: ${err?.message ?? err}`, { cause: err });
  }
  const stored = await store.match(url);
  if (!stored) throw storageError(url, new Error('the stored response is gone'));
  return { file: await stored.blob(), cached: false };
}

// --- calls, locks, progress -----------------------------------------------------

const queues = new Map(); // entry key → the promise the last call on it in this page settles
const watchers = new Map(); // entry key → the onProgress of calls waiting for their turn

/**
 * Runs fn when no other call holds entry key: in this page (a queue) and
 * in every tab of the origin (a Web Lock, where the browser has them).
 * signal aborts the wait.
 */
async function exclusive(key, signal, fn) {
  const before = queues.get(key) ?? Promise.resolve();
  let release;
  const mine = new Promise((resolve) => { release = resolve; });
  const tail = before.then(() => mine);
  queues.set(key, tail);
  try {
    await abortable(before, signal);
    if (!globalThis.navigator?.locks) return await fn();
    return await navigator.locks.request(LOCK_PREFIX + key, signal ? { signal } : {}, fn);
  } finally {
    release();
    if (queues.get(key) === tail) queues.delete(key);
  }
}

/** p, or a rejection with abortError when signal aborts first. */
function abortable(p, signal) {
  if (!signal) return p;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * While a call waits for its turn, it sees the progress of the call ahead
 * of it on the same URL in this page. stop() ends that; error is what its
 * onProgress threw meanwhile.
 */
function watch(key, onProgress) {
  const state = { error: undefined, stop() {} };
  if (!onProgress) return state;
  const listener = (...args) => {
    try {
      onProgress(...args);
    } catch (err) {
      state.error ??= err;
      state.stop();
    }
  };
  if (!watchers.has(key)) watchers.set(key, new Set());
  watchers.get(key).add(listener);
  state.stop = () => {
    watchers.get(key)?.delete(listener);
    if (watchers.get(key)?.size === 0) watchers.delete(key);
  };
  return state;
}

/** The progress function of the call that holds entry key: its onProgress, then the watchers'. */
function reporter(key, onProgress) {
  return (loaded, total, phase) => {
    try {
      onProgress?.(loaded, total, phase);
    } catch (err) {
      throw jsException(err);
    }
    for (const listener of watchers.get(key) ?? []) listener(loaded, total, phase);
  };
}

// --- arguments ----------------------------------------------------------------

function checkArguments(url, options) {
  const href = checkURL(url, 'url');
  if (options === null || typeof options !== 'object') throw argumentError('options', `must be an object, got ${typeof options}`);
  const { sha256, signal, onProgress } = options;
  if (sha256 != null && (typeof sha256 !== 'string' || !/^[0-9a-fA-F]{64}$/.test(sha256))) {
    throw argumentError('sha256', 'must be 64 hexadecimal digits');
  }
  if (signal != null && !(signal instanceof AbortSignal)) throw argumentError('signal', 'must be an AbortSignal');
  if (onProgress != null && typeof onProgress !== 'function') throw argumentError('onProgress', 'must be a function');
  return { href, sha256: sha256?.toLowerCase(), signal: signal ?? undefined, onProgress: onProgress ?? undefined };
}

function checkURL(url, field) {
  if (typeof url === 'string' || url instanceof URL) {
    try {
      return new URL(url, globalThis.location?.href).href;
    } catch {
      // below
    }
  }
  throw argumentError(field, 'must be a URL');
}

