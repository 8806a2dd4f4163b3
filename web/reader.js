// reader.js: read byte ranges of a model file — a URL (HTTP Range requests)
// or a Blob (slices) — a chunk at a time, for wasmlm.js (the headers it
// inspects) and wasmlm.worker.js (the ranges a worker's model or shard
// needs, which go straight into the Go instance's memory). An ES module
// that imports errors.js.
//
//   const r = openReader({ url } | { blob });
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
function chunks(stream) {
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

/** A reader of source: {url} (a string) or {blob}. */
export function openReader(source) {
  if (source.blob) return blobReader(source.blob);
  if (typeof source.url === 'string') return urlReader(source.url);
  throw codedError('invalid_argument', 'wasmlm: a model source is {url} or {blob}');
}

function blobReader(blob) {
  return {
    async prefix(n) {
      const bytes = new Uint8Array(await blob.slice(0, Math.min(n, blob.size)).arrayBuffer());
      return { bytes, size: blob.size };
    },
    // A Blob is read a slice at a time with arrayBuffer(): streams of
    // slices of one Blob read by two workers at once were seen to stall in
    // Chromium (TestBrowserShardsReadOnlyTheirRanges, one run in two).
    async *range(start, end, signal) {
      for (let at = start; at < end; at += BLOB_SLICE) {
        if (signal?.aborted) throw abortError(signal);
        yield new Uint8Array(await blob.slice(at, Math.min(at + BLOB_SLICE, end)).arrayBuffer());
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
      res = await fetch(url, { headers: { Range: `bytes=${start}-${end - 1}` }, signal, cache: 'no-store' });
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
    const res = await fetch(url, { method: 'HEAD', cache: 'no-store' }).catch(() => null);
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
