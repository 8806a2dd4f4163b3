// shared.js: WasmLM.load's shared: true — the model's engine in a
// SharedWorker, so that every tab of the origin that loads the same model
// (the same URLs and the load options that make a loaded model differ)
// uses one loaded copy and one queue, each tab with its own session
// (shared-worker.js, the worker's side).
//
// A SharedWorker gets no event when a tab's port closes: each tab holds a
// Web Lock named for its port as long as it lives (or until lm.unload), and
// the worker asks for the same lock, which it is granted when the tab has
// gone, and then frees the tab's session.

import { host } from './host.js';
import { VERSION } from './version.js';

/** Why a model cannot be shared between tabs here, or '' when it can. files: checkSources'; tok: the checked tokenizer source, or null. */
export function sharedUnsupported(files, tok) {
  if (host.newWorker) return 'this runtime has no SharedWorker';
  if (typeof SharedWorker !== 'function') return 'this browser has no SharedWorker';
  if (!globalThis.navigator?.locks || !globalThis.crypto?.randomUUID) return 'this page has no Web Locks (navigator.locks needs a secure context)';
  const local = (url) => url.startsWith('blob:') || url.startsWith('data:');
  if (!files.every((f) => f.url && !local(f.url))) return 'the model is not at a URL that every tab can read (bytes, a Blob or a blob: URL are the tab\'s own)';
  if (tok != null && !(tok instanceof URL && !local(tok.href))) return 'the tokenizer is not at a URL that every tab can read';
  return '';
}

/**
 * The SharedWorker's name: wasmlm's version, the model's URLs and the load
 * options that make a loaded model differ. Tabs that load with the same
 * name share a worker; a tab of another version (a page upgraded while an
 * old tab keeps the old worker alive) starts its own.
 */
export function sharedName(files, tok, { contextLength, kvType, simd, serve, device, sha256 }) {
  return `wasmlm@${VERSION} ${JSON.stringify({
    model: files.map((f) => f.url), tokenizer: tok?.href ?? null, contextLength: contextLength ?? null, kvType: kvType ?? 'auto',
    simd, serve, device, sha256: sha256?.toLowerCase() ?? null,
  })}`;
}

/**
 * A Worker-like object ({postMessage, onmessage, onerror, onmessageerror,
 * terminate}) over the port of the SharedWorker named name that runs
 * wasmlm.worker.js, and lock, the name of the Web Lock this tab holds for it
 * until terminate (or until the tab closes). Rejects if the browser does
 * not start it (a wasmlm.js of another origin: a SharedWorker's script is
 * the page's origin's).
 */
export async function sharedWorker(name) {
  const lock = `wasmlm-tab-${crypto.randomUUID()}`;
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await new Promise((granted, failed) => {
    navigator.locks.request(lock, () => {
      granted();
      return held;
    }).catch(failed);
  });
  let sw;
  try {
    // The URL written out here, the form bundlers follow to a worker script.
    sw = new SharedWorker(new URL('./wasmlm.worker.js', import.meta.url), { type: 'module', name });
  } catch (err) {
    release();
    throw err;
  }
  const port = sw.port;
  const worker = {
    onmessage: null,
    onerror: null,
    onmessageerror: null,
    postMessage: (m, transfer = []) => port.postMessage(m, transfer),
    terminate() { // this tab's session is freed; the model stays for the other tabs
      port.postMessage({ type: 'detach', id: 0 });
      port.close();
      release();
    },
  };
  port.onmessage = (e) => worker.onmessage?.(e);
  port.onmessageerror = (e) => worker.onmessageerror?.(e);
  sw.onerror = (e) => worker.onerror?.(e);
  port.start();
  return { worker, lock };
}
