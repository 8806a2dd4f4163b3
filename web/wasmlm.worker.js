// wasmlm.worker.js: the Web Worker that runs wasmlm.wasm for wasmlm.js.
//
// A module worker: its imports are static, so that a bundler (Vite, webpack)
// that follows new Worker(new URL('./wasmlm.worker.js', import.meta.url))
// bundles them, Go's wasm_exec.js included (a script that sets globalThis.Go
// when it runs, which importing it does), into one worker script.
//
// Messages from the page: {id, type, ...}
//   boot      {module, kernels, simdRelaxed, simdReason}  start the Go program (a compiled WebAssembly.Module)
//                                         with the SIMD kernels (a Module, whether it is the relaxed-SIMD
//                                         build, or null and why not)
//   load      {model, tokenizer, contextLength, peers, sharedMemory, kvType, device, cpuReason}
//             model: bytes, or 'assembled': what assemble (or prepare and fill) read;
//             device: 'auto', 'webgpu' or 'cpu' (cpuReason: why the page chose the CPU)
//   unload    {}                          free the model's GPU buffers (the page ends the worker next)
//   inspect   {prefixes, sizes, options}  what the model whose files start with prefixes is, and
//                                         what loading it takes ({more: i}: read more of file i)
//   assemble  {sources, prefixes, sizes, shardIndex, shardCount}
//             read the model (shard shardIndex of shardCount) from sources ({url} or {blob} each,
//             see reader.js), range by range, straight into the Go instance's memory; posts
//             {type: 'progress', id, progress: {loaded, total}} as bytes arrive
//   prepare   {prefixes, sizes, shardIndex, shardCount}, then fill {source, offset, chunk}:
//             the same, with the page sending the chunks (a model the page holds as bytes)
//   call      {method, args}              info, tokenize, detokenize, chatTokens, and saveState,
//                                         loadState, identity (saved sessions: sessions.js)
//   generate  {prompt, options, aborted}  stream {prompt, options, aborted}
//   chat      {request, aborted, contextShift, nKeep}  request: OpenAI's chat completion request, as JSON; contextShift, nKeep: load's defaults
//   embed     {input, options, aborted}   rerank {query, documents, options, aborted}
//   serveHTTP {request, modelName, aborted, contextShift, nKeep} an HTTP request for the OpenAI-compatible API (lm.serve); contextShift, nKeep: load's defaults
//             aborted: the page's signal was aborted before the call, so the call's
//             signal is aborted from the start (Go then generates, embeds or ranks nothing)
//   abort     {id}                        abort call id (also while it waits its turn)
// A model split across workers (the load option workers; see jsbridge's Binding):
//   shard     {index, count}              the worker holding the whole model: a GGUF file of that
//                                         shard (a transferred Uint8Array)
//   load      {..., peers}                worker i: load shard i's file; shards 1.. follow shard 0
//   memory    {}                          the Go instance's memory size, in bytes
// peers: this worker's MessagePorts to the others (null at its own index); sharedMemory: where the
// page is cross-origin isolated, the group's SharedArrayBuffer of control words (the messages then
// go through shared memory).
// In a SharedWorker (the load option shared), each tab is a client with a port
// and a session of its own, and adds claim, detach and stats (shared-worker.js);
// boot's module and kernels are then URLs, which the worker compiles.
// Replies: {type: 'chunk', id, chunk} while streaming, then {type: 'result', id, value | error}
// (error: {message, code, field?, param?}; code as wasmlm.js documents it);
// {type: 'fatal', message} when the Go program exits, or a follower stops following, and nothing
// more can run.
import './wasm_exec.js';
import { simdImports } from './simd.js';
import { openReader } from './reader.js';
import { Sha256 } from './sha256.js';
import {
  broadcast, compiled, connect, inSession, isSharedWorker, loading, sessionArgs, sharedRequest, sharedRequests,
} from './shared-worker.js';

let binding = null; // a Promise of globalThis.wasmlm, set by the Go program
let memory = null; // the Go instance's WebAssembly.Memory, for results' wasmMemoryBytes
let simdReason = ''; // why the SIMD kernels are not attached, for info's simdReason
let simdRelaxed = false; // whether the kernels are the relaxed-SIMD build, for info's simdRelaxed
let plan = null; // the model being read: the Go side's prepare result (assemble, prepare, fill)
let cpuReason = ''; // why the page ran the model on the CPU under device 'auto', for info's deviceReason
const controllers = new Map(); // call id → AbortController

// simdImports of simd.js for the kernels; if they cannot be attached, stubs
// of the same shape: the Go side then runs its pure-Go kernels.
async function loadSIMD(kernels) {
  try {
    return await simdImports(kernels ?? null);
  } catch (err) {
    const fail = () => { throw new Error('wasmlm: the SIMD kernels are not available'); };
    const stubs = new Proxy({}, { get: (_, name) => (name === 'available' ? () => 0 : fail) });
    const reason = `the SIMD kernels did not load in the worker: ${err?.message ?? err}`;
    return { importObject: { wasmlm_simd: stubs }, attach: async () => false, enabled: false, reason };
  }
}

// boot starts the Go program once (startGo); if it cannot, the boot and
// every later request reject with code worker_failed.
function boot(module, kernels, pageReason) {
  binding ??= startGo(module, kernels, pageReason).catch((err) => {
    const e = new Error(`wasmlm: the engine did not start: ${err?.message ?? err}`);
    e.code = 'worker_failed';
    throw e;
  });
  return binding;
}

// startGo instantiates the Go program with the imports of the SIMD kernels
// (the kernels themselves, or stubs that make the Go side run its pure-Go
// ones) and attaches the kernels before go.run, when the Go side decides
// which kernels to use.
async function startGo(module, kernels, pageReason) {
  module = await compiled(module); // a shared worker's page sends its URL (simdImports takes the kernels' URL as it is)
  const simd = await loadSIMD(kernels);
  simdReason = simd.enabled ? '' : pageReason || simd.reason;
  const go = new Go();
  let exitCode = '?';
  go.exit = (code) => { exitCode = code; };
  // Both import objects are {module name: functions}: merged at the top level.
  const instance = await WebAssembly.instantiate(module, { ...go.importObject, ...simd.importObject });
  if (simd.enabled) {
    // Not attached, the kernels report unavailable and Go runs without them.
    await simd.attach(instance).catch((err) => { simdReason = `the SIMD kernels did not attach: ${err?.message ?? err}`; });
  }
  memory = instance.exports.mem ?? null;
  // run() returns once main blocks, having set globalThis.wasmlm; its
  // Promise settles only if the Go program exits.
  go.run(instance).then(
    () => broadcast({ type: 'fatal', message: `the Go program exited (code ${exitCode})` }),
    (err) => broadcast({ type: 'fatal', message: String(err?.message ?? err) }),
  );
  if (!self.wasmlm) throw new Error('wasmlm.wasm did not register its binding (is it the wasmlm build?)');
  return self.wasmlm;
}

// options plus the AbortSignal of this generation (options that are not an
// object go to Go as they are, which rejects them with a clear message).
// options plus, when the page asked for it (promptProgress), an
// onPromptProgress that posts each evaluated prompt block's {done, total}.
function withProgress(m, options, c) {
  if (!m.promptProgress || options == null || typeof options !== 'object' || Array.isArray(options)) return options;
  return { ...options, onPromptProgress: (progress) => c.post({ type: 'promptProgress', id: m.id, progress }) };
}

function withSignal(options, signal) {
  if (options == null) return { signal };
  if (typeof options !== 'object' || Array.isArray(options)) return options;
  return { ...options, signal };
}

// info plus, when the engine runs its pure-Go kernels (info.simd, from the
// Go side, is false), simdReason: why; and the page's deviceReason when
// the page chose the CPU (cpuReason).
function withSIMD(info) {
  if (info && typeof info === 'object' && info.simd === false) {
    info.simdReason = simdReason || 'this wasmlm.wasm was built without the SIMD kernels (-tags wasmlm_simd)';
  }
  if (info && typeof info === 'object') info.simdRelaxed = info.simd === true && simdRelaxed;
  if (info && typeof info === 'object' && info.device === 'cpu' && cpuReason) info.deviceReason = cpuReason;
  return info;
}

// A generation's result plus wasmMemoryBytes: the size of the Go instance's
// memory, which never shrinks, so it is the worker's peak (the model, its KV
// cache and the Go heap) — what the benchmark reports for the browser.
function withMemory(result) {
  if (result && typeof result === 'object' && memory) result.wasmMemoryBytes = memory.buffer.byteLength;
  return result;
}

async function handle(m, signal, c) {
  if (m.type === 'boot') {
    simdRelaxed = m.simdRelaxed === true;
    await boot(m.module, m.kernels, m.simdReason);
    return null;
  }
  if (!binding) throw internalError('wasmlm: the worker was not booted');
  const b = await binding;
  const onToken = (chunk) => c.post({ type: 'chunk', id: m.id, chunk });
  const own = (options) => inSession(options, c); // the client's session, in a shared worker
  if (sharedRequests.has(m.type)) return sharedRequest(b, m, c, memory);
  switch (m.type) {
    case 'load': {
      const options = {
        tokenizer: m.tokenizer ?? undefined, contextLength: m.contextLength ?? undefined, peers: m.peers ?? undefined, sharedMemory: m.sharedMemory ?? undefined,
      };
      if (m.kvType != null) options.kvType = m.kvType;
      if (m.device != null) options.device = m.device;
      cpuReason = m.cpuReason ?? '';
      const info = await loading(c, async () => withSIMD(await b.load(m.model, options)));
      if (m.peers && info.shardIndex > 0) {
        // Serve worker 0 from now on. follow() settles only when the
        // shards can no longer work together: this worker is then useless.
        b.follow().then(
          () => c.post({ type: 'fatal', message: `shard ${info.shardIndex} was told to stop following` }),
          (err) => c.post({ type: 'fatal', message: `shard ${info.shardIndex} stopped following: ${err?.message ?? err}` }),
        );
      }
      return info;
    }
    case 'shard':
      return b.shard(m.index, m.count);
    case 'inspect':
      return b.inspect(m.prefixes, m.sizes, m.options);
    case 'prepare': {
      plan = await b.prepare(m.prefixes, m.sizes, { shardIndex: m.shardIndex, shardCount: m.shardCount });
      const { segments, address, ...rest } = plan;
      return rest;
    }
    case 'fill': {
      if (!plan) throw internalError('wasmlm: fill before prepare');
      const placed = place(plan, m.source, m.offset, m.chunk);
      await b.filled(placed);
      return placed;
    }
    case 'assemble':
      return assemble(b, m, signal, c);
    case 'memory':
      return memory ? memory.buffer.byteLength : null;
    case 'call': {
      if (!['info', 'tokenize', 'detokenize', 'chatTokens', 'saveState', 'loadState', 'identity'].includes(m.method)) throw internalError(`wasmlm: unknown method ${m.method}`);
      const value = await b[m.method](...sessionArgs(m.method, m.args, c));
      return m.method === 'info' ? withSIMD(value) : value;
    }
    case 'unload': { // the page ends this worker next: free the GPU's buffers now (a shared worker's model stays)
      if (!c.session) await b.unload();
      return null;
    }
    case 'generate':
      return withMemory(await b.generate(m.prompt, withProgress(m, own(withSignal(m.options, signal)), c)));
    case 'stream':
      return withMemory(await b.stream(m.prompt, withProgress(m, own(withSignal(m.options, signal)), c), onToken));
    case 'chat':
      return withMemory(await b.chat(m.request, own({ signal, contextShift: m.contextShift, nKeep: m.nKeep }), onToken));
    case 'embed':
      return b.embed(m.input, own(withSignal(m.options, signal)));
    case 'rerank':
      return b.rerank(m.query, m.documents, own(withSignal(m.options, signal)));
    case 'serveHTTP': // lm.serve's requests (serve.js): chunks are {status?, headers?, body}
      return b.serveHTTP(m.request, { modelName: m.modelName, signal, contextShift: m.contextShift, nKeep: m.nKeep }, onToken);
  }
  throw internalError(`wasmlm: unknown request ${m.type}`);
}

// assemble prepares the model (or shard) in the Go instance and reads every
// range it needs from m.sources, a chunk at a time, into it, reporting the
// bytes placed. Resolves to {bytes}.
async function assemble(b, m, signal, c) {
  plan = await b.prepare(m.prefixes, m.sizes, { shardIndex: m.shardIndex, shardCount: m.shardCount });
  if (plan.more >= 0) throw internalError(`wasmlm: the header of file ${plan.more} needs more than the page read`);
  // One worker reads a Blob as a stream; several, a slice at a time (see reader.js).
  const readers = m.sources.map((s) => openReader(s, { stream: m.shardCount === 1 }));
  // With sha256 (one worker, reading the whole file in order), the bytes are hashed as they pass.
  const hasher = m.sha256 ? new Sha256() : null;
  let loaded = 0;
  let reported = 0;
  const report = () => {
    c.post({ type: 'progress', id: m.id, progress: { loaded, total: plan.bytes } });
    reported = loaded;
  };
  report();
  for (const [source, start, end] of plan.reads) {
    let at = start;
    for await (const chunk of readers[source].range(start, end, signal)) {
      loaded += place(plan, source, at, chunk);
      hasher?.update(chunk);
      at += chunk.length;
      if (loaded - reported >= 4 << 20) report();
    }
    if (at !== end) throw codedError('fetch_failed', `wasmlm: file ${source + 1} ended at byte ${at}, before ${end}`);
  }
  if (hasher) {
    const got = hasher.hex();
    if (got !== m.sha256) throw codedError('integrity_failed', `wasmlm: the model's SHA-256 is ${got}, not the ${m.sha256} asked for`);
  }
  await b.filled(loaded);
  report();
  return { bytes: loaded };
}

// place copies chunk, the bytes of file source from at, where the plan's
// segments put them in the Go instance's memory (Go's memory does not move,
// and Go does not run while this does), and returns how many it placed.
// The chunk never reaches Go, so it is garbage as soon as it is placed: a
// value handed to Go would live until Go's garbage collector ran.
function place(p, source, at, chunk) {
  const mem = new Uint8Array(memory.buffer); // anew: the buffer changes when the memory grows
  const end = at + chunk.length;
  let placed = 0;
  for (const [src, offset, dst, len] of p.segments) {
    if (src !== source) continue;
    const lo = Math.max(at, offset);
    const hi = Math.min(end, offset + len);
    if (lo >= hi) continue;
    mem.set(chunk.subarray(lo - at, hi - at), p.address + dst + (lo - offset));
    placed += hi - lo;
  }
  return placed;
}

function codedError(code, message) {
  const e = new Error(message);
  e.code = code;
  return e;
}

// The error of a request wasmlm.js never makes: a bug (code internal).
function internalError(message) {
  const e = new Error(message);
  e.code = 'internal';
  return e;
}

// receive handles message m from client c (the page, or a tab's port).
async function receive(c, m) {
  if (m.type === 'abort') {
    c.controllers.get(m.id)?.abort();
    return;
  }
  // Registered before any await, so an abort that follows at once finds it.
  // A signal the page saw aborted before the call is aborted here before Go
  // sees it: an abort message would arrive only after Go's first token.
  const controller = new AbortController();
  if (m.aborted) controller.abort();
  c.controllers.set(m.id, controller);
  try {
    const value = await handle(m, controller.signal, c);
    // A shard's bytes, and embeddings, move to the page without a copy.
    const bytes = value instanceof Uint8Array ? value : value?.vectors;
    c.post({ type: 'result', id: m.id, value }, bytes instanceof Uint8Array ? [bytes.buffer] : []);
  } catch (err) {
    const message = String(err?.message ?? err);
    const error = { message, code: typeof err?.code === 'string' && err.code !== '' ? err.code : 'error' };
    if (typeof err?.field === 'string') Object.assign(error, { field: err.field, param: err.param });
    c.post({ type: 'result', id: m.id, error });
  } finally {
    c.controllers.delete(m.id);
  }
}

// A dedicated worker has one client, its page; a SharedWorker a client per
// connected tab (shared-worker.js).
if (isSharedWorker()) {
  self.onconnect = (e) => {
    const c = connect(e.ports[0]);
    e.ports[0].onmessage = (ev) => receive(c, ev.data);
  };
} else {
  const page = connect(self);
  self.onmessage = (e) => receive(page, e.data);
}
