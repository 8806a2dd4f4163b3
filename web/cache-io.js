// cache-io.js: what cache.js and cache-opfs.js stand on — their errors, the
// fetch they download with, and the files of the Origin Private File System:
// writing them (through cache.worker.js, or the page's writable streams),
// streaming a response into one, hashing one. An ES module.

import { abortError, codedError } from './errors.js';
import { chunks } from './reader.js';

/** The OPFS directory of the cache. */
export const CACHE_DIR = 'wasmlm-models';

const WRITE_BATCH = 1 << 20; // bytes per write to the file
const WRITES_IN_FLIGHT = 4; // writes posted to the worker and not yet done, at most
const FLUSH_EVERY = 64 << 20; // bytes between flushes to disk

// --- streaming to disk --------------------------------------------------------

/**
 * Copies body into writer (in WRITE_BATCH pieces, in buffers the writer
 * hands out and takes back), hashing with hasher, calling progress with the
 * bytes so far after each chunk; returns their number. The body is read
 * into one reused buffer where it is a byte stream (reader.js's chunks), so
 * a download of gigabytes leaves next to nothing for the garbage collector.
 * Bytes received before a failure are written, and the writer closed,
 * before it rethrows: the next call resumes after them.
 */
export async function pump(url, body, writer, hasher, signal, progress) {
  const reader = chunks(body);
  let batch = new Uint8Array(writer.buffer());
  let fill = 0;
  let received = 0;
  const flush = async () => {
    if (fill === 0) return;
    const bytes = batch.subarray(0, fill);
    fill = 0;
    await writer.write(bytes); // the writer takes the buffer…
    batch = new Uint8Array(writer.buffer()); // …and gives one back
  };
  let failure = null;
  try {
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (signal?.aborted) throw abortError(signal);
        throw codedError('fetch_failed', `wasmlm: fetching ${url} failed after ${received} bytes: ${err?.message ?? err} (the next load resumes)`, { cause: err });
      }
      if (chunk.done) break;
      const value = chunk.value;
      hasher?.update(value);
      for (let at = 0; at < value.length;) {
        const n = Math.min(value.length - at, WRITE_BATCH - fill);
        batch.set(value.subarray(at, at + n), fill);
        fill += n;
        at += n;
        if (fill === WRITE_BATCH) await flush();
      }
      received += value.length;
      progress(received);
    }
  } catch (err) {
    failure = err;
    reader.cancel().catch(() => {});
  }
  try {
    if (failure?.code !== 'storage_failed') await flush();
    await writer.close();
  } catch (err) {
    failure ??= err;
  }
  if (failure) throw failure;
  return received;
}

/** Hashes the bytes [from, to) of file into hasher, reporting phase 'verify'. */
export async function hashFile(file, from, to, hasher, signal, report) {
  const reader = file.slice(from, to).stream().getReader();
  let done = from;
  try {
    for (;;) {
      if (signal?.aborted) throw abortError(signal);
      const chunk = await reader.read();
      if (chunk.done) break;
      hasher.update(chunk.value);
      done += chunk.value.length;
      report(done, to, 'verify');
    }
  } catch (err) {
    reader.cancel().catch(() => {});
    throw err;
  }
  if (done !== to) throw new DOMException(`read ${done - from} of ${to - from} bytes`, 'NotReadableError');
}

/**
 * The file operations of one cachedModel call on the OPFS directory:
 * writeFile(name, bytes), writer(name, from) → { buffer(), write(bytes),
 * close() } (bytes after the first from are dropped; buffer() is an
 * ArrayBuffer of WRITE_BATCH bytes to fill; write takes bytes' buffer, and
 * buffer() may hand it out again once written), and close(). Through cache.worker.js when sync, else with the page's
 * writable streams (which reach the file only when closed: the writer is
 * always closed, after a failure too).
 */
export async function openFiles(sync) {
  const dir = await opfsDir(true);
  if (!sync) {
    const open = async (name, keep) => (await dir.getFileHandle(name, { create: true })).createWritable({ keepExistingData: keep });
    return {
      dir,
      async writeFile(name, bytes) {
        const w = await storageCall(name, open(name, false));
        await storageCall(name, w.write(bytes).then(() => w.close()), () => w.abort());
      },
      async writer(name, from) {
        // A writable stream reaches the file only when it is closed: a
        // download from byte 0 empties the file now, as the worker's
        // truncate does, before the new record is written. (From byte
        // from > 0, the file has that size already.)
        if (from === 0) await this.writeFile(name, new Uint8Array(0));
        const w = await storageCall(name, open(name, from > 0));
        if (from > 0) await storageCall(name, w.seek(from), () => w.abort());
        // write copies the bytes before it resolves: one buffer serves every batch.
        const buffer = new ArrayBuffer(WRITE_BATCH);
        return {
          buffer: () => buffer,
          write: (bytes) => storageCall(name, w.write(bytes)),
          close: () => storageCall(name, w.close()),
        };
      },
      close() {},
    };
  }
  const io = new WorkerIO();
  return {
    dir,
    writeFile: (name, bytes) => io.call('writeFile', { dir: CACHE_DIR, name, bytes }, [bytes.buffer]),
    async writer(name, from) {
      await io.call('open', { dir: CACHE_DIR, name, size: from });
      let at = from;
      let unflushed = 0;
      const inFlight = [];
      const spare = []; // buffers the worker has written and sent back
      const post = (op, args, transfer) => {
        const p = io.call(op, { name, ...args }, transfer);
        p.catch(() => {}); // awaited below
        inFlight.push(p);
        return p;
      };
      return {
        buffer: () => spare.pop() ?? new ArrayBuffer(WRITE_BATCH),
        async write(bytes) {
          const n = bytes.length; // 0 once the buffer is transferred
          post('write', { bytes, at }, [bytes.buffer]).then((back) => {
            if (back?.byteLength === WRITE_BATCH) spare.push(back);
          }, () => {});
          at += n;
          unflushed += n;
          if (unflushed >= FLUSH_EVERY) {
            post('flush');
            unflushed = 0;
          }
          while (inFlight.length > WRITES_IN_FLIGHT) await inFlight.shift();
        },
        async close() {
          let failure = null;
          for (const p of inFlight.splice(0)) await p.catch((err) => { failure ??= err; });
          await io.call('close', { name }).catch((err) => { failure ??= err; });
          if (failure) throw failure;
        },
      };
    },
    close() {
      io.terminate();
    },
  };
}

/** Awaits p, a write to name; a failure is code storage_failed (after undo, when given). */
async function storageCall(name, p, undo) {
  try {
    return await p;
  } catch (err) {
    await undo?.().catch(() => {});
    throw storageError(name, err);
  }
}

/** cache.worker.js, called with promises. */
class WorkerIO {
  #worker = new Worker(new URL('./cache.worker.js', import.meta.url), { name: 'wasmlm-cache' });
  #pending = new Map();
  #next = 0;
  #failed = null;

  constructor() {
    this.#worker.onmessage = ({ data }) => {
      const p = this.#pending.get(data.id);
      this.#pending.delete(data.id);
      if (data.error) p?.reject(storageError(p.what, data.error));
      else p?.resolve(data.value);
    };
    this.#worker.onerror = (event) => {
      event.preventDefault?.();
      this.#fail(new Error(`cache.worker.js failed: ${event.message ?? 'it did not load'}`));
    };
  }

  call(op, args = {}, transfer = []) {
    if (this.#failed) return Promise.reject(this.#failed);
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, what: args.name ?? 'a file' });
      this.#worker.postMessage({ id, op, ...args }, transfer);
    });
  }

  terminate() {
    this.#worker.terminate();
    this.#fail(new Error('the cache worker ended'));
  }

  #fail(err) {
    this.#failed ??= storageError('the cache', err);
    for (const p of this.#pending.values()) p.reject(this.#failed);
    this.#pending.clear();
  }
}

/** Whether cache.worker.js can write with FileSystemSyncAccessHandle here. */
export async function workerCanSync() {
  if (typeof Worker !== 'function') return false;
  let io = null;
  try {
    io = new WorkerIO();
    return (await io.call('probe')) === true;
  } catch {
    return false;
  } finally {
    io?.terminate();
  }
}

// --- files --------------------------------------------------------------------

/** The cache's OPFS directory (created when create); rejects where there is no OPFS. */
export async function opfsDir(create) {
  const root = await navigator.storage.getDirectory();
  return root.getDirectoryHandle(CACHE_DIR, { create });
}

/** The File of dir/name, or null when there is no such file. */
export async function fileOf(dir, name) {
  try {
    return await (await dir.getFileHandle(name)).getFile();
  } catch (err) {
    if (err?.name === 'NotFoundError') return null;
    throw err;
  }
}

/** Removes entry key's files; whether there were any. */
export async function discard(dir, key) {
  let found = false;
  for (const name of [`${key}.bin`, `${key}.json`]) {
    try {
      await dir.removeEntry(name);
      found = true;
    } catch (err) {
      if (err?.name !== 'NotFoundError') throw storageError(name, err);
    }
  }
  return found;
}

/** The size a response says its body has (Content-Length, unless the body is encoded), or undefined. */
export function contentLength(res) {
  if (res.headers.get('content-encoding')) return undefined; // the length of the encoded bytes
  const n = Number(res.headers.get('content-length') ?? NaN);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** fetch with the cache's defaults: no HTTP cache (it would keep a second copy). */
export async function get(url, signal, headers) {
  try {
    return await fetch(url, { signal, headers, cache: 'no-store' });
  } catch (err) {
    if (signal?.aborted) throw abortError(signal);
    throw codedError('fetch_failed', `wasmlm: fetching ${url} failed: ${err?.message ?? err}`, { cause: err });
  }
}

/** Cancels res's body (unless it is being read). */
export function cancel(res) {
  res.body?.cancel().catch(() => {});
}

export function warn(message) {
  console.warn(`wasmlm: ${message}`);
}

// --- errors -------------------------------------------------------------------
// The cache's own; errors.js has the rest.

export function integrityError(url, want, got) {
  return codedError('integrity_failed', `wasmlm: ${url} has SHA-256 ${got}, not ${want}; the cached copy was deleted`, { expected: want, actual: got });
}

export function storageError(name, err) {
  return codedError('storage_failed', `wasmlm: the model cache could not write ${name}: ${err?.name ?? 'Error'}: ${err?.message ?? err}`, { cause: err });
}

export function jsException(err) {
  if (typeof err?.code === 'string') return err; // wasmlm.js's progress wrapper names it already
  let text;
  try {
    text = String(err);
  } catch {
    text = 'an exception that cannot be printed';
  }
  return codedError('js_exception', `wasmlm: JavaScript threw in onProgress: ${text}`, { cause: err });
}
