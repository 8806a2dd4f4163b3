// host.js: what wasmlm.js asks of the JavaScript runtime it runs in, where a
// browser and Node.js differ. Each hook is null in a browser (and in Deno
// and Bun, which have the browser's Worker, fetch and Blob); wasmlm.node.js,
// the package's entry for Node.js, sets them before wasmlm.js runs anything.

/** The runtime hooks; null: the browser's way. */
export const host = {
  /** (name) => a Worker-like object ({postMessage, onmessage, onerror, onmessageerror, terminate}) running wasmlm.worker.js. */
  newWorker: null,
  /** (source) => Promise of a source load can read: a file path made a file: URL. */
  resolveSource: null,
  /** (url, init) => Promise of a Response, for every fetch of a model or asset: one that can read file: URLs. */
  fetch: null,
  /** The URL of wasmlm-serve.wasm, set by serve-engine.js (the entry wasmlm/serve); null: the one beside wasmlm.js. */
  serveEngine: null,
  /** The Hugging Face endpoint hf: sources download from when the load option hfEndpoint is not given (Node.js: the HF_ENDPOINT environment variable); null: https://huggingface.co. */
  hfEndpoint: null,
  /** The number of logical processors, where navigator.hardwareConcurrency is missing. */
  hardwareConcurrency: null,
  /** true where the workers may share memory (Node.js's worker threads always may); null: where the page is cross-origin isolated. */
  sharedMemory: null,
};

/**
 * The URL of file in wasmlm's folder (its modules are all in one), written
 * so that bundlers do not follow it: not the literal new URL('./x',
 * import.meta.url), which Vite and Rollup take for an asset to copy and
 * webpack for a dependency. For what an app need not ship (the default
 * model's module, the serving engine, the Service Worker, which a bundler's
 * assets folder would not serve from anyway) and for the model's worker
 * started from another origin.
 */
export function unbundledURL(file) {
  const base = import.meta.url;
  return new URL(file, base);
}

/** fetch, or the host's where it has one (Node.js: file: URLs read from disk). */
export function hostFetch(url, init) {
  return host.fetch ? host.fetch(url, init) : fetch(url, init);
}
