// reader.js: read byte ranges of a model file — a URL (HTTP Range requests)
// or a Blob (slices) — a chunk at a time, for wasmlm.js (the headers it
// inspects) and wasmlm.worker.js (the ranges a worker's model or shard
// needs, which go straight into the Go instance's memory). An ES module
// that imports errors.js.
//
//   const r = openReader({ url } | { blob, handle }, { stream });
//   const { bytes, size } = await r.prefix(1 << 20);   // the first bytes, and the file's size
//   for await (const chunk of r.range(start, end, signal)) ...   // a view, valid until the next
//
// A server that ignores Range (answers 200) still works: the body is read
// from the start and the bytes before the range are skipped. A connection
// that drops in the middle of a range is retried from where it stopped
// (RETRIES times). Errors have a code (errors.js): fetch_failed (the
// network, an HTTP error status, a server whose file changed size) and
// aborted.

import { abortError, codedError, httpError } from './errors.js';
import { hostFetch } from './host.js';

/** How many times a range whose connection dropped is asked for again. */
export const RETRIES = 3;

/** How much of a Blob is read at once. */
const BLOB_SLICE = 4 << 20;

/** The size of the buffer a byte stream is read into (see chunks). */
const BUFFER = 1 << 20;

/**
 * A reader of stream's chunks: into one reused buffer where the stream is a
 * byte stream (read() then yields views of it, valid until the next read:
 * copy what you keep), so reading gigabytes allocates nothing for the
 * garbage collector to catch up with; chunk by chunk otherwise.
 */
export function chunks(stream) {
  let byob = null;
  try {
    byob = stream.getReader({ mode: 'byob' });
  } catch {
    const reader = stream.getReader();
    return { read: () => reader.read(), cancel: (why) => reader.cancel(why) };
  }
  let buf = new ArrayBuffer(BUFFER);
  return {
    async read() {
      const r = await byob.read(new Uint8Array(buf, 0, buf.byteLength));
      if (r.value) buf = r.value.buffer; // the same memory, handed back
      return r;
    },
    cancel: (why) => byob.cancel(why),
  };
}

/**
 * A reader of source: {url} (a string) or {blob} — with handle, the OPFS
 * FileSystemFileHandle the Blob is a File of (the model cache's), read in a
 * worker through a read-only FileSystemSyncAccessHandle. stream: a Blob's
 * ranges are read as streams (else a slice at a time; see blobReader).
 */
export function openReader(source, { stream = false } = {}) {
  if (source.blob && source.handle && syncReads()) return handleReader(source.handle, source.blob, stream);
  if (source.blob) return blobReader(source.blob, stream);
  if (typeof source.url === 'string') return urlReader(source.url);
  throw codedError('invalid_argument', 'wasmlm: a model source is {url} or {blob}');
}

/**
 * A Blob's reader. With stream, a range is one stream of the Blob's slice,
 * read into one reused buffer (chunks): nothing left for the garbage
 * collector. Otherwise a slice at a time with arrayBuffer(), each slice
 * garbage once placed — a few hundred megabytes of a 620 MB model that the
 * collector had not yet freed at the worker's peak, measured in Chromium —
 * because streams of slices of one Blob read by two workers at once stall
 * in Chromium (TestBrowserShardsReadOnlyTheirRanges, one run in two).
 */
function blobReader(blob, stream) {
  return {
    async prefix(n) {
      const bytes = new Uint8Array(await blob.slice(0, Math.min(n, blob.size)).arrayBuffer());
      return { bytes, size: blob.size };
    },
    async *range(start, end, signal) {
      if (stream) {
        const reader = chunks(blob.slice(start, end).stream());
        try {
          for (;;) {
            if (signal?.aborted) throw abortError(signal);
            const r = await reader.read();
            if (r.done) return;
            yield r.value;
          }
        } finally {
          reader.cancel().catch(() => {});
        }
      }
      for (let at = start; at < end; at += BLOB_SLICE) {
        if (signal?.aborted) throw abortError(signal);
        yield new Uint8Array(await blob.slice(at, Math.min(at + BLOB_SLICE, end)).arrayBuffer());
      }
    },
  };
}

/** Whether this is a worker with FileSystemSyncAccessHandle (OPFS reads in place). */
function syncReads() {
  return typeof globalThis.WorkerGlobalScope === 'function' &&
    typeof globalThis.FileSystemFileHandle?.prototype.createSyncAccessHandle === 'function';
}

/**
 * The reader of an OPFS file (handle) whose File is blob: a range is read
 * with a read-only FileSystemSyncAccessHandle into one reused buffer, so
 * the bytes pass from the disk to their place with no garbage and no
 * stream. Read-only handles of one file can be open in several workers at
 * once; where one cannot be opened (a browser without the read-only mode,
 * the file being written), or the file is no longer blob's size, the range
 * is read from blob instead.
 */
function handleReader(handle, blob, stream) {
  const fallback = blobReader(blob, stream);
  return {
    prefix: (n) => fallback.prefix(n),
    async *range(start, end, signal) {
      let sync = null;
      try {
        sync = await handle.createSyncAccessHandle({ mode: 'read-only' });
        if (sync.getSize() !== blob.size) throw new DOMException('the file changed', 'InvalidStateError');
      } catch {
        sync?.close();
        yield* fallback.range(start, end, signal);
        return;
      }
      try {
        const buf = new Uint8Array(BUFFER * 4);
        for (let at = start; at < end;) {
          if (signal?.aborted) throw abortError(signal);
          const n = sync.read(buf.subarray(0, Math.min(buf.length, end - at)), { at });
          if (!(n > 0)) throw codedError('fetch_failed', `wasmlm: the cached model ended at byte ${at}, before ${end}`);
          at += n;
          yield buf.subarray(0, n);
        }
      } finally {
        sync.close();
      }
    },
  };
}

/** The total size in a Content-Range header ("bytes 0-99/1234"), or NaN. */
function contentRangeTotal(res) {
  const m = /^bytes\s+(\d+)-(\d+)\/(\d+)$/.exec(res.headers.get('content-range') || '');
  return m ? { start: Number(m[1]), total: Number(m[3]) } : null;
}

function urlReader(url) {
  let size; // known after the first request
  const request = async (start, end, signal) => {
    let res;
    try {
      res = await hostFetch(url, { headers: { Range: `bytes=${start}-${end - 1}` }, signal, cache: 'no-store' });
    } catch (err) {
      if (signal?.aborted) throw abortError(signal);
      throw codedError('fetch_failed', `wasmlm: fetching ${url} failed: ${err?.message ?? err}`, { cause: err });
    }
    if (res.status === 206) {
      // A server on another origin may not expose Content-Range
      // (Access-Control-Expose-Headers): a 206 is then taken to start where asked.
      const cr = contentRangeTotal(res);
      if (!cr && !res.headers.has('content-range')) return { res, skip: 0, total: undefined };
      if (!cr || cr.start !== start) {
        res.body?.cancel().catch(() => {});
        throw codedError('fetch_failed', `wasmlm: fetching ${url}: the server answered bytes=${start}- with Content-Range ${res.headers.get('content-range')}`);
      }
      return { res, skip: 0, total: cr.total };
    }
    if (res.ok) { // Range ignored: the whole file, from byte 0
      const length = res.headers.get('content-encoding') ? NaN : Number(res.headers.get('content-length') ?? NaN);
      return { res, skip: start, total: Number.isFinite(length) ? length : undefined };
    }
    if (res.status === 416 && start === 0) return { res: null, skip: 0, total: 0 }; // an empty file
    res.body?.cancel().catch(() => {});
    throw httpError(url, res);
  };
  // The size from a HEAD request's Content-Length (which CORS always exposes).
  const headSize = async () => {
    const res = await hostFetch(url, { method: 'HEAD', cache: 'no-store' }).catch(() => null);
    const n = res?.ok && !res.headers.get('content-encoding') ? Number(res.headers.get('content-length') ?? NaN) : NaN;
    return Number.isFinite(n) ? n : undefined;
  };
  const checkSize = (total) => {
    if (total === undefined) return;
    if (size !== undefined && total !== size) {
      throw codedError('fetch_failed', `wasmlm: ${url} changed while it was read (${size} bytes, now ${total})`);
    }
    size = total;
  };
  return {
    async prefix(n) {
      const out = [];
      let got = 0;
      for await (const chunk of this.range(0, n, undefined, true)) {
        out.push(chunk.slice()); // range's chunks are views of a reused buffer
        got += chunk.length;
      }
      const bytes = new Uint8Array(got);
      let at = 0;
      for (const c of out) { bytes.set(c, at); at += c.length; }
      if (size === undefined) size = await headSize();
      if (size === undefined) {
        throw codedError('fetch_failed', `wasmlm: ${url}: the server says neither Content-Range nor Content-Length, so the model's size is unknown`, { sizeUnknown: true, bytes });
      }
      return { bytes, size };
    },
    // range yields the bytes [start, end) (fewer when the file is shorter,
    // which only prefix allows: short).
    async *range(start, end, signal, short = false) {
      let at = start;
      let tries = 0;
      while (at < end) {
        const { res, skip, total } = await request(at, end, signal);
        checkSize(total);
        if (!res) break;
        const reader = chunks(res.body);
        let pos = at - skip; // the file offset of the next byte the body gives
        try {
          for (;;) {
            let r;
            try {
              r = await reader.read();
            } catch (err) {
              if (signal?.aborted) throw abortError(signal);
              if (++tries > RETRIES) {
                throw codedError('fetch_failed', `wasmlm: reading ${url} failed at byte ${at} after ${RETRIES} retries: ${err?.message ?? err}`, { cause: err });
              }
              break; // ask again from at
            }
            if (r.done) {
              if (at < end && !(short || (size !== undefined && at >= size))) {
                if (++tries > RETRIES) throw codedError('fetch_failed', `wasmlm: ${url} ended at byte ${at}, before ${end}`);
                break;
              }
              return;
            }
            let chunk = r.value;
            const lo = Math.max(0, at - pos);
            const hi = Math.min(chunk.length, end - pos);
            pos += chunk.length;
            if (lo >= hi) {
              if (pos >= end) return;
              continue;
            }
            chunk = lo === 0 && hi === chunk.length ? chunk : chunk.subarray(lo, hi);
            at += chunk.length;
            tries = 0;
            yield chunk;
            if (at >= end) return;
          }
        } finally {
          reader.cancel().catch(() => {});
        }
        if (size !== undefined && at >= size) return;
      }
    },
  };
}

/**
 * The URLs of every part of a split GGUF whose first part is url
 * (name-00001-of-00003.gguf, as llama-gguf-split names them), or [url].
 */
export function splitURLs(url) {
  const u = new URL(url);
  const m = /^(.*)-00001-of-(\d{5})\.gguf$/.exec(u.pathname);
  if (!m) return [u.href];
  const count = Number(m[2]);
  return Array.from({ length: count }, (_, i) => {
    const part = new URL(u.href);
    part.pathname = `${m[1]}-${String(i + 1).padStart(5, '0')}-of-${m[2]}.gguf`;
    return part.href;
  });
}
