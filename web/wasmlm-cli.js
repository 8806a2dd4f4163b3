#!/usr/bin/env node
// wasmlm-cli.js: the npm package's command line (package.json's bin
// "wasmlm"): `npx wasmlm serve [flags]` serves the OpenAI-compatible HTTP
// API from Node.js (≥ 20), no Go needed. It runs the serving engine,
// wasmlm-serve.wasm, with the command line as its arguments: the Go side
// parses and checks the flags with the Go CLI's code (cmd/internal/servecli:
// the same flags, usage and errors as `wasmlm serve`), loads the model and
// serves every request with the same handler (httpapi). This file is the
// Node side: a node:http server that hands each request to the engine and
// writes each part of its response as it comes (a Server-Sent Event as
// soon as it is flushed), a client that closes its connection aborting its
// request, SIGINT or SIGTERM stopping the server gracefully, and SIGHUP
// re-reading -api-key-file.

import fs from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';

const here = (name) => fileURLToPath(new URL(name, import.meta.url));

const usage = `usage: wasmlm <command> [flags]

commands:
  serve      serve the OpenAI-compatible HTTP API (as the Go CLI's wasmlm serve)

Run "wasmlm serve -h" for its flags. The npm package has serve only; the Go
CLI (go install github.com/wasmlm/wasmlm/cmd/wasmlm@latest) also has
generate, embed, rerank, tokenize, info, bench and split.
`;

const args = process.argv.slice(2);
if (args.length === 0 || ['-h', '-help', '--help', 'help'].includes(args[0])) {
  (args.length === 0 ? process.stderr : process.stdout).write(usage);
  process.exit(args.length === 0 ? 2 : 0);
}
if (args[0] !== 'serve') {
  process.stderr.write(`wasmlm: unknown command "${args[0]}"\n\n${usage}`);
  process.exit(2);
}

// What the Go side asks of Node (cmd/wasm/command_js.go).
let server = null;
let stop;
const stopped = new Promise((resolve) => { stop = resolve; });
globalThis.wasmlmNode = {
  defaultModel: here('./models/stories260K-F16.gguf'),
  defaultName: 'stories260K',
  fetchModel,
  listen,
  stopped,
  close,
  turn: () => new Promise((resolve) => setImmediate(resolve)),
};

let signals = 0;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (++signals > 1) process.exit(130); // a second signal ends the process at once
    stop();
  });
}
// SIGHUP re-reads the key file once the Go side has set hangup (before its
// start-up line); until then it is ignored rather than ending the process.
process.on('SIGHUP', () => globalThis.wasmlmNode.hangup?.());

// fetchModel reads an http(s) URL, or a Hugging Face file named
// hf:owner/repo/file.gguf[@revision] from HF_ENDPOINT (https://huggingface.co
// unset), as the package's load resolves it.
async function fetchModel(source) {
  const { checkHFEndpoint, hfURL, HF_ENDPOINT } = await import('./load.js');
  let url;
  try {
    url = hfURL(source, checkHFEndpoint(process.env.HF_ENDPOINT || HF_ENDPOINT), '-m');
  } catch (err) {
    throw err.message;
  }
  // It rejects with what serve says: the URL and why (a network error's cause,
  // such as "connect ECONNREFUSED 127.0.0.1:1", or the HTTP status).
  const failed = (why) => `fetching ${url}: ${why}`;
  let response;
  try {
    response = await fetch(url);
  } catch (err) {
    throw failed(err.cause ? (err.cause.message || err.cause.code) : err.message);
  }
  if (!response.ok) throw failed(`HTTP ${response.status} ${response.statusText}`);
  try {
    return new Uint8Array(await response.arrayBuffer());
  } catch (err) {
    throw failed(err.cause?.message ?? err.message);
  }
}

// listen starts the node:http server; it resolves to the address it
// listens on ("host:port", an IPv6 host in brackets).
function listen(config, serve) {
  const { addr, readTimeout, idleTimeout, maxConns, maxHeaderBytes, maxBodyBytes } = config;
  const colon = addr.lastIndexOf(':');
  const host = addr.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  const port = Number(addr.slice(colon + 1));
  server = http.createServer({ maxHeaderSize: maxHeaderBytes, requestTimeout: readTimeout, headersTimeout: readTimeout, keepAliveTimeout: idleTimeout },
    (req, res) => handle(req, res, serve, maxBodyBytes));
  if (maxConns > 0) server.maxConnections = maxConns;
  return new Promise((resolve, reject) => {
    // Go's words for the common errors (the Go side says "listen tcp ADDR: " first).
    const bindErrors = { EADDRINUSE: 'address already in use', EACCES: 'permission denied', EADDRNOTAVAIL: 'cannot assign requested address' };
    server.once('error', (err) => reject(bindErrors[err.code] ? `bind: ${bindErrors[err.code]}` : err.message));
    server.listen({ host: host || undefined, port }, () => {
      const a = server.address();
      resolve(a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`);
    });
  });
}

// handle reads a request's body (up to one byte beyond the handler's
// limit, which then answers 413) and hands the request to the engine,
// writing each part of the response as it comes.
function handle(req, res, serve, maxBodyBytes) {
  const controller = new AbortController();
  res.on('close', () => { if (!res.writableFinished) controller.abort(); });
  const chunks = [];
  let kept = 0;
  req.on('data', (chunk) => {
    if (kept > maxBodyBytes) return;
    chunks.push(chunk);
    kept += chunk.length;
  });
  req.on('end', () => {
    const headers = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.push([req.rawHeaders[i], req.rawHeaders[i + 1]]);
    const body = chunks.length ? new Uint8Array(Buffer.concat(chunks)) : undefined;
    const remote = req.socket.remoteFamily === 'IPv6' ? `[${req.socket.remoteAddress}]:${req.socket.remotePort}` : `${req.socket.remoteAddress}:${req.socket.remotePort}`;
    const send = (part) => {
      if (res.destroyed) return false;
      if (part.status !== undefined) res.writeHead(part.status, part.headers.flat());
      if (part.body.length) res.write(part.body);
      return !res.destroyed;
    };
    const done = (error) => {
      if (error !== undefined && !res.headersSent) {
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: { message: error, type: 'server_error', param: null, code: 'internal_error' } }));
        return;
      }
      res.end();
    };
    serve({ method: req.method, url: req.url, headers, body, remote }, send, done, controller.signal);
  });
}

// close stops accepting connections, closes the idle ones, and closes
// those still open after ms; it resolves once the server is closed.
function close(ms) {
  return new Promise((resolve) => {
    if (!server) { resolve(); return; }
    const timer = setTimeout(() => server.closeAllConnections(), ms);
    server.close(() => { clearTimeout(timer); resolve(); });
    server.closeIdleConnections();
  });
}

// Go's wasm_exec.js reaches the file system through globalThis.fs: Node's,
// so the engine reads the model, key files, and writes its output itself.
globalThis.fs ??= fs;
await import('./wasm_exec.js');
const { simdImports } = await import('./simd.js');

const go = new globalThis.Go();
go.argv = ['wasmlm', ...args];
go.env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('WASMLM_')));
go.exit = (code) => process.exit(code);
const simd = await simdImports(fs.readFileSync(here('./wasmlm-simd.wasm')), { relaxed: fs.readFileSync(here('./wasmlm-simd-relaxed.wasm')) })
  .catch(() => simdImports(null));
const { instance } = await WebAssembly.instantiate(fs.readFileSync(here('./wasmlm-serve.wasm')), { ...go.importObject, ...simd.importObject });
await simd.attach(instance).catch((err) => process.stderr.write(`wasmlm: pure-Go kernels: ${err?.message ?? err}\n`));
await go.run(instance);
