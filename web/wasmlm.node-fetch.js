// wasmlm.node-fetch.js: fetch for wasmlm.node.js and its worker threads,
// which also reads file: URLs (Node.js's fetch does not): the engine's
// files beside the package, and models given as file paths. A file answers
// as an HTTP server would: HEAD with its length, a Range request with 206
// and Content-Range, a read past its end with 416. Other URLs go to fetch.

import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

const TYPES = { '.wasm': 'application/wasm', '.js': 'text/javascript' };

/** fetch(url, init), reading file: URLs from disk. */
export async function nodeFetch(url, init = {}) {
  const u = new URL(String(url));
  if (u.protocol !== 'file:') return fetch(url, init);
  init.signal?.throwIfAborted();
  const path = fileURLToPath(u);
  const info = await stat(path); // a missing file rejects, as a network error does
  if (info.isDirectory()) throw new TypeError(`${path} is a directory, not a model file`);
  const { size } = info;
  const dot = path.lastIndexOf('.');
  const headers = { 'content-type': TYPES[path.slice(dot)] ?? 'application/octet-stream', 'accept-ranges': 'bytes' };
  if ((init.method ?? 'GET').toUpperCase() === 'HEAD') {
    return new Response(null, { status: 200, headers: { ...headers, 'content-length': String(size) } });
  }
  const range = /^bytes=(\d+)-(\d*)$/.exec(new Headers(init.headers).get('range') ?? '');
  let start = 0;
  let end = size - 1;
  let status = 200;
  if (range) {
    start = Number(range[1]);
    if (range[2] !== '') end = Math.min(end, Number(range[2]));
    if (start >= size) {
      return new Response(null, { status: 416, headers: { 'content-range': `bytes */${size}` } });
    }
    status = 206;
    headers['content-range'] = `bytes ${start}-${end}/${size}`;
  }
  headers['content-length'] = String(end - start + 1);
  const body = size === 0 ? null : Readable.toWeb(createReadStream(path, { start, end, signal: init.signal }));
  return new Response(body, { status, headers });
}
