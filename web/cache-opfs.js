// cache-opfs.js: the model cache's entries in the Origin Private File
// System, for cache.js: finding an entry and checking it, hashing it,
// downloading it — resumed with Range and If-Range where the server's answer
// proves it is the same file. An ES module.
//
// An entry is two files in the directory wasmlm-models: <key>.bin, the
// bytes, and <key>.json, its record {version, url, size (the server's:
// Content-Length; null when it did not say), etag, lastModified (the
// server's validators), complete, sha256 and verified {size, modified} (a
// SHA-256 the bytes were found to have, and the file's size and
// modification time then)}; key is the SHA-256 of the URL.

import { Sha256 } from './sha256.js';
import {
  cancel, contentLength, discard, fileOf, get, hashFile, integrityError, openFiles, pump, warn,
} from './cache-io.js';
import { codedError, httpError } from './errors.js';

/**
 * cachedModel in OPFS, with the entry's lock held: the entry's file when it
 * is complete (and has the SHA-256 asked for), else downloaded — resumed
 * where an interrupted download stopped when the server allows.
 */
export async function opfsModel(sync, url, key, { sha256, signal, report }) {
  const files = await openFiles(sync);
  try {
    let entry = await readEntry(files, key, url);
    if (entry?.meta.complete) {
      if (await verifyStored(files, key, entry, sha256, signal, report)) {
        report(entry.file.size, entry.file.size, 'cached');
        return { file: entry.file, handle: await files.dir.getFileHandle(`${key}.bin`), cached: true };
      }
      warn(`discarding the cached copy of ${url}: its SHA-256 is not ${sha256}`);
      await discard(files.dir, key);
      entry = null;
    }
    await download(files, url, key, entry, { sha256, signal, report });
    return { file: await fileOf(files.dir, `${key}.bin`), handle: await files.dir.getFileHandle(`${key}.bin`), cached: false };
  } finally {
    files.close();
  }
}

/**
 * The entry of url as { meta, file } (file: the File of its bytes so far),
 * or null when there is none or it was discarded: a record missing,
 * unreadable or of another URL, a file larger than the server's size or,
 * for a complete entry, of another size — or a partial download whose size
 * the server never said (it cannot be resumed).
 */
async function readEntry(files, key, url) {
  const { dir } = files;
  const file = await fileOf(dir, `${key}.bin`);
  const record = await fileOf(dir, `${key}.json`);
  if (!file && !record) return null;
  const meta = record && parseMeta(await record.text().catch(() => ''), url);
  const problem = !meta ? 'its record is missing or unreadable'
    : !file ? 'its file is missing'
    : meta.size !== null && file.size > meta.size ? `its file has ${file.size} bytes, more than the ${meta.size} the server sent`
    : meta.complete && file.size !== meta.size ? `its file has ${file.size} of its ${meta.size} bytes`
    : !meta.complete && meta.size === null ? 'the server did not say its size, so it cannot resume'
    : '';
  if (problem) {
    if (file?.size || meta?.complete) warn(`discarding the cached copy of ${url}: ${problem}`);
    await discard(dir, key);
    return null;
  }
  if (!meta.complete && file.size === meta.size) { // every byte written, the record not yet updated
    meta.complete = true;
    await files.writeFile(`${key}.json`, encodeMeta(meta));
  }
  return { meta, file };
}

/**
 * Whether a complete entry has the SHA-256 asked for (true when none is).
 * A hash verified before counts while the file's size and modification
 * time are those it had then; otherwise the file is hashed again, and a
 * match recorded.
 */
async function verifyStored(files, key, { meta, file }, sha256, signal, report) {
  if (!sha256) return true;
  const { verified } = meta;
  if (meta.sha256 && verified?.size === file.size && verified?.modified === file.lastModified) {
    return meta.sha256 === sha256;
  }
  const hasher = new Sha256();
  try {
    await hashFile(file, 0, file.size, hasher, signal, report);
  } catch (err) {
    if (signal?.aborted || typeof err?.code === 'string') throw err;
    return false; // unreadable: changed since it was listed
  }
  if (hasher.hex() !== sha256) return false;
  Object.assign(meta, { sha256, verified: { size: file.size, modified: file.lastModified } });
  await files.writeFile(`${key}.json`, encodeMeta(meta));
  return true;
}

/**
 * Downloads url into its entry: from where entry's file ends (with Range
 * and If-Range) when the server's answer proves it is the same file, else
 * from byte 0. Marks the entry complete when all the bytes are there (and
 * have sha256, when given; otherwise the entry is deleted and the call
 * rejects with integrity_failed).
 */
async function download(files, url, key, entry, { sha256, signal, report }) {
  let meta = entry?.meta;
  let from = entry?.file.size ?? 0;
  let hasher = sha256 && new Sha256();
  let res = null;
  if (from > 0) {
    if (hasher) { // the bytes already there, before the server is asked for the rest
      try {
        await hashFile(entry.file, 0, from, hasher, signal, report);
      } catch (err) {
        if (signal?.aborted || typeof err?.code === 'string') throw err;
        from = 0;
        hasher = new Sha256();
      }
    }
    if (from > 0) {
      res = await get(url, signal, resumeHeaders(url, meta, from));
      if (!resumes(res, meta, from)) {
        if (res.status !== 200) cancel(res);
        if (!res.ok && res.status !== 416) throw httpError(url, res); // the partial download stays
        if (res.status !== 200) res = null; // a 206 of other bytes, a 416: from the start
        from = 0; // and a 200 is the whole file
        hasher = sha256 && new Sha256();
      }
    }
  }
  if (from === 0) {
    res ??= await get(url, signal);
    if (!res.ok) {
      cancel(res);
      throw httpError(url, res);
    }
    meta = newMeta(url, res);
  }
  const total = meta.size ?? undefined;
  let writer = null;
  try {
    report(from, total, 'download');
    // The file is cut to from before the record is written, so that a record
    // never describes the bytes of another version of the file.
    writer = await files.writer(`${key}.bin`, from);
    if (from === 0) await files.writeFile(`${key}.json`, encodeMeta(meta));
  } catch (err) {
    cancel(res);
    await writer?.close().catch(() => {});
    throw err;
  }
  const received = await pump(url, res.body, writer, hasher, signal, (n) => report(from + n, total, 'download'));
  const size = from + received;
  if (meta.size !== null && size < meta.size) {
    throw codedError('fetch_failed', `wasmlm: fetching ${url}: the connection ended after ${size} of ${meta.size} bytes (the next load resumes)`);
  }
  if (meta.size !== null && size > meta.size) {
    await discard(files.dir, key);
    throw codedError('fetch_failed', `wasmlm: fetching ${url}: the server sent ${size} bytes, not the ${meta.size} it announced`);
  }
  meta.size = size;
  meta.complete = true;
  if (hasher) {
    const got = hasher.hex();
    if (got !== sha256) {
      await discard(files.dir, key);
      throw integrityError(url, sha256, got);
    }
    const file = await fileOf(files.dir, `${key}.bin`);
    Object.assign(meta, { sha256, verified: { size: file.size, modified: file.lastModified } });
  }
  await files.writeFile(`${key}.json`, encodeMeta(meta));
}

/** The request headers of a resumed download: Range, and If-Range with the stored validator (same origin only). */
function resumeHeaders(url, meta, from) {
  const headers = { Range: `bytes=${from}-` };
  // If-Range is not a CORS-safelisted header: on another origin it would cost a
  // preflight the server may refuse; there resumes() compares the validators.
  if (new URL(url).origin === globalThis.location?.origin) {
    const strong = meta.etag && !meta.etag.startsWith('W/') ? meta.etag : null; // If-Range compares strongly
    const validator = strong ?? meta.lastModified;
    if (validator) headers['If-Range'] = validator;
  }
  return headers;
}

/**
 * Whether res continues the entry from byte from: a 206 whose Content-Range
 * starts there and ends at the size stored, whose ETag and Last-Modified (if
 * the server shows them) are those stored.
 */
function resumes(res, meta, from) {
  if (res.status !== 206) return false;
  const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(res.headers.get('content-range') ?? '');
  if (!m || Number(m[1]) !== from || Number(m[2]) !== meta.size - 1 || Number(m[3]) !== meta.size) return false;
  const etag = res.headers.get('etag');
  const modified = res.headers.get('last-modified');
  return !(etag && meta.etag && etag !== meta.etag) && !(modified && meta.lastModified && modified !== meta.lastModified);
}

/** The record of a download starting with res (a 200). */
function newMeta(url, res) {
  return {
    version: 1, url, size: contentLength(res) ?? null, etag: res.headers.get('etag'),
    lastModified: res.headers.get('last-modified'), complete: false, sha256: null, verified: null,
  };
}

/** The record in text, checked (and of url, when given), or null. */
export function parseMeta(text, url) {
  let m;
  try {
    m = JSON.parse(text);
  } catch {
    return null;
  }
  const count = (n) => Number.isSafeInteger(n) && n >= 0;
  const text_ = (s) => s === null || typeof s === 'string';
  const ok = m !== null && typeof m === 'object' && m.version === 1 && typeof m.url === 'string' &&
    (url === undefined || m.url === url) && (m.size === null || count(m.size)) && typeof m.complete === 'boolean' &&
    text_(m.etag) && text_(m.lastModified) && (m.sha256 === null || /^[0-9a-f]{64}$/.test(m.sha256)) &&
    (m.verified === null || (typeof m.verified === 'object' && count(m.verified.size) && Number.isFinite(m.verified.modified)));
  return ok ? m : null;
}

function encodeMeta(meta) {
  return new TextEncoder().encode(JSON.stringify(meta));
}

