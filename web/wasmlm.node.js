// wasmlm.node.js: the package's entry for Node.js (20 and later): the same
// API as wasmlm.js, with the model in a worker_threads Worker instead of a
// Web Worker, the engine's files read from disk, and file paths as sources.
//
//   import { WasmLM } from 'wasmlm';
//   const lm = await WasmLM.load('./models/my-model.gguf');
//   for await (const chunk of lm.stream('Once upon a time')) process.stdout.write(chunk.text);
//   // no unload needed: the process exits once no call is pending
//
// Node.js has no Cache Storage or OPFS: models are not cached (load reads a
// file in place; a URL is downloaded on each load).

import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { host } from './host.js';
import { nodeFetch } from './wasmlm.node-fetch.js';

/**
 * How long a Deno process stays after a worker thread's terminate()
 * resolves, for the thread's V8 to finish (its background compilation of
 * the engine's WebAssembly included): without it 1 in 10–20 runs of a
 * generation crashed at exit (segmentation fault, heap corruption); with
 * it, none in 200 (2.9.6, 2 cores).
 */
const DENO_THREAD_GRACE_MS = 100;

/**
 * A worker_threads Worker running wasmlm.worker.js, with a Web Worker's
 * interface as wasmlm.js uses it. The thread keeps the process alive only
 * while a request posted to it ({id, ...}) awaits its {type: 'result', id}
 * (and while it starts, until its first requests are answered): a program
 * with a model loaded exits once nothing is pending, as it would with no
 * model, and a pending generation holds it open. When the process is about
 * to exit (beforeExit), the workers still running are terminated, and the
 * process waits for their threads to end: Deno (2.9) may crash when it exits
 * with a thread running WebAssembly, or within milliseconds of terminating
 * one (its terminate() resolves before the thread's V8 is done).
 */
class NodeWorker {
  static #running = new Set();
  #worker;
  #terminated = false;
  #inFlight = new Set(); // the ids of the requests posted and not yet answered

  constructor(name) {
    this.onmessage = null;
    this.onerror = null;
    this.onmessageerror = null;
    this.#worker = new Worker(new URL('./wasmlm.node-worker.js', import.meta.url), { name });
    NodeWorker.#running.add(this);
    this.#worker.on('message', (data) => {
      if (data?.type === 'result' && this.#inFlight.delete(data.id) && this.#inFlight.size === 0) this.#worker.unref();
      this.onmessage?.({ data });
    });
    this.#worker.on('messageerror', () => this.onmessageerror?.({}));
    this.#worker.on('error', (err) => this.onerror?.({ message: String(err?.message ?? err), error: err, preventDefault() {} }));
    this.#worker.on('exit', (code) => {
      if (!this.#terminated) this.onmessage?.({ data: { type: 'fatal', message: `the worker thread exited (code ${code})` } });
    });
  }

  postMessage(message, transfer = []) {
    this.#worker.postMessage(message, transfer);
    // An abort names the request it ends, whose result is still to come.
    if (typeof message?.id === 'number' && message.type !== 'abort' && !this.#inFlight.has(message.id)) {
      this.#inFlight.add(message.id);
      this.#worker.ref();
    }
  }

  terminate() {
    if (this.#terminated) return;
    this.#terminated = true;
    NodeWorker.#running.delete(this);
    this.#worker.ref(); // the process waits for the thread to end
    const ended = this.#worker.terminate();
    if (globalThis.Deno) ended.then(() => setTimeout(() => {}, DENO_THREAD_GRACE_MS));
  }

  /** Terminates every worker not yet terminated. */
  static terminateAll() {
    for (const worker of NodeWorker.#running) worker.terminate();
  }
}

/**
 * A source with every file path in it made a file: URL (absolute, from the
 * working directory), which nodeFetch reads as a server would read the file:
 * range by range, never whole unless the model is (a llama2.c checkpoint).
 * URLs with a scheme (http:, https:, file:, data:, blob:) stay as they are.
 */
function pathsToURLs(source) {
  if (Array.isArray(source)) return source.map(pathsToURLs);
  if (typeof source !== 'string' || /^[a-zA-Z][a-zA-Z0-9+.-]+:/.test(source)) return source;
  return pathToFileURL(resolve(source)).href;
}

host.newWorker = (name) => new NodeWorker(name);
process.on('beforeExit', () => NodeWorker.terminateAll());
host.resolveSource = async (source) => pathsToURLs(source);
host.fetch = nodeFetch;
host.hardwareConcurrency = availableParallelism();
host.sharedMemory = process.env.WASMLM_SHARED_MEMORY !== '0'; // worker threads share memory; 0: exchange by messages
host.hfEndpoint = process.env.HF_ENDPOINT || null; // as huggingface_hub reads it

export * from './wasmlm.js';
export { default } from './wasmlm.js';
