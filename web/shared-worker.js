// shared-worker.js: wasmlm.worker.js's clients — its page, in a dedicated
// worker; in a SharedWorker (WasmLM.load's shared: true, shared.js), every
// tab of the origin that loads the same model: one model in memory, one
// queue, each tab with its own session (jsbridge's openSession).
//
// Messages a shared worker's tab adds (besides wasmlm.worker.js's):
//   claim  {lock}  after boot: the tab's session opens, and the worker waits
//                  for the lock named lock, which the tab holds as long as it
//                  lives (a SharedWorker learns of no closed port: the lock's
//                  grant says the tab is gone); resolves to {info} once the
//                  model is loaded, or {load: true}: this tab loads it (one
//                  tab at a time; if its load fails or it leaves, the next)
//   detach {}      the tab unloads: its session is freed now
//   stats  {}      {shared, loads, tabs, connections, sessions: {open,
//                  allocated}, wasmMemoryBytes} (a dedicated worker answers
//                  too): tabs counts the pages (each one's Web Locks client
//                  id), connections their loads (a page may load twice);
//                  sessions, in a SharedWorker the tabs' (openSession's),
//                  in a dedicated worker the page's own (session 0) too

/** Whether this script runs in a SharedWorker. */
export function isSharedWorker() {
  return typeof SharedWorkerGlobalScope === 'function' && self instanceof SharedWorkerGlobalScope;
}

const clients = new Set();
const model = {
  info: null, // the loaded model's info, once loaded
  loads: 0, // how many times a model was loaded in this worker
  loader: null, // the client loading it
  waiting: [], // [{c, resolve}]: clients whose claim waits for the load
};

/** A client over port (a MessagePort, or a dedicated worker's global scope). */
export function connect(port) {
  const c = {
    post: (m, transfer = []) => port.postMessage(m, transfer),
    controllers: new Map(), // call id → AbortController
    session: 0, // its session (openSession's id); 0: the binding's own, a dedicated worker's page
    binding: null,
    port,
    tab: null, // the page's Web Locks client id, once it claimed (a shared worker)
  };
  clients.add(c);
  return c;
}

/** Posts m to every client (the Go program stopped: nothing more can run). */
export function broadcast(m) {
  for (const c of clients) c.post(m);
}

/** module, compiled if it is a URL (a WebAssembly.Module cannot be posted to a SharedWorker). */
export async function compiled(module) {
  if (typeof module !== 'string') return module;
  const res = await fetch(module);
  if (!res.ok) throw new Error(`fetching ${module} failed: HTTP ${res.status}`);
  return WebAssembly.compileStreaming ? WebAssembly.compileStreaming(res) : WebAssembly.compile(await res.arrayBuffer());
}

/** options with the client's session, when it has one of its own. */
export function inSession(options, c) {
  if (!c.session || options == null || typeof options !== 'object' || Array.isArray(options)) return options;
  return { ...options, session: c.session };
}

/** The arguments of call's method, with the client's session for those that run in one. */
export function sessionArgs(method, args, c) {
  if (!c.session) return args;
  if (method === 'saveState') return [{ session: c.session }];
  if (method === 'loadState') return [args[0], { session: c.session }];
  return args;
}

/**
 * Runs load, the model's load by client c: in a shared worker only the
 * client its claim chose loads, and its info is every later claim's.
 */
export async function loading(c, load) {
  if (!c.session) return load();
  if (model.loader !== c) throw codedError('internal', 'wasmlm: a tab that did not claim the load loads the model');
  try {
    const info = await load();
    model.info = info;
    model.loads++;
    model.loader = null;
    for (const w of model.waiting.splice(0)) w.resolve({ info });
    return info;
  } catch (err) {
    passLoad();
    throw err;
  }
}

/** The messages of this module's own: claim, detach, stats. */
export const sharedRequests = new Set(['claim', 'detach', 'stats']);

/** Answers a shared request m of client c; b: the Go binding, memory: its WebAssembly.Memory. */
export async function sharedRequest(b, m, c, memory) {
  switch (m.type) {
    case 'claim': {
      if (!isSharedWorker()) throw codedError('internal', 'wasmlm: claim is for a shared worker');
      if (c.session) throw codedError('internal', 'wasmlm: this tab claimed already');
      c.binding = b;
      c.session = await b.openSession();
      // The page's Web Locks client id, which every load of one page shares:
      // the tabs are counted by it. The tab holds its lock already.
      const { held = [] } = await navigator.locks.query();
      c.tab = held.find((l) => l.name === m.lock)?.clientId ?? m.lock;
      // Granted when the tab has gone (or unloaded): its session goes too.
      navigator.locks.request(m.lock, () => detach(c)).catch(() => detach(c));
      if (model.info) return { info: model.info };
      if (!model.loader) {
        model.loader = c;
        return { load: true };
      }
      return new Promise((resolve) => model.waiting.push({ c, resolve }));
    }
    case 'detach':
      await detach(c);
      return null;
    case 'stats': {
      // A dedicated worker's page runs in the binding's own session 0,
      // which openSession's count leaves out.
      const { open, allocated, own } = await b.sessions();
      const sessions = isSharedWorker() ? { open, allocated } : { open: open + 1, allocated: allocated + (own ? 1 : 0) };
      return {
        shared: isSharedWorker(),
        loads: isSharedWorker() ? model.loads : 1,
        tabs: new Set([...clients].map((x) => x.tab ?? x)).size,
        connections: clients.size,
        sessions,
        wasmMemoryBytes: memory ? memory.buffer.byteLength : null,
      };
    }
  }
  throw codedError('internal', `wasmlm: unknown request ${m.type}`);
}

/** The next waiting client loads the model: the one loading it failed or left. */
function passLoad() {
  model.loader = null;
  const next = model.waiting.shift();
  if (next) {
    model.loader = next.c;
    next.resolve({ load: true });
  }
}

/**
 * Client c has gone (its lock was granted) or unloads: its calls abort, its
 * session is freed once they are done, and its claim passes on.
 */
async function detach(c) {
  if (!clients.delete(c)) return;
  for (const controller of c.controllers.values()) controller.abort();
  model.waiting = model.waiting.filter((w) => w.c !== c);
  if (model.loader === c) passLoad();
  c.port.onmessage = null;
  c.port.close?.();
  if (c.session && c.binding) await c.binding.closeSession(c.session).catch(() => {});
}

function codedError(code, message) {
  const e = new Error(message);
  e.code = code;
  return e;
}
