// serve.js: the page's own OpenAI endpoint, lm.serve({ scope }) (wasmlm.js).
//
// A Service Worker (wasmlm.sw.js) answers the page's fetches under scope
// ('/v1/' by default: fetch('/v1/chat/completions'), or the openai client
// with baseURL location.origin + '/v1') by handing each request to this
// module in the page that made it, which runs it in the model's worker:
// package httpapi's handler over the loaded model (jsbridge's serveHTTP),
// so validation, errors and Server-Sent Events are the HTTP API's own. The
// response comes back a flush at a time (an event per token) through a
// MessageChannel into the ReadableStream the Service Worker answers with;
// a fetch that is aborted (or whose body is cancelled) aborts its generation.
//
// Messages, Service Worker → page (navigator.serviceWorker 'message'):
//   {type: 'wasmlm-fetch', scope, request: {method, url, headers, body}} and a port;
// then page → Service Worker on that port: {type: 'accepted'} at once (or
// {type: 'unavailable'}: no model serves scope in this page), {type: 'head',
// status, headers}, {type: 'body', body} per flush, {type: 'end'} or
// {type: 'error', message, code}; Service Worker → page: {type: 'abort'}.

import { argumentError, codedError, describe, invalidCall } from './errors.js';
import { unbundledURL } from './host.js';

// The Service Worker beside this module (see the option serviceWorker).
const SW_URL = unbundledURL('./wasmlm.sw.js');

const SERVE_OPTIONS = ['scope', 'workerScope', 'serviceWorker'];
const servers = new Map(); // scope → the model's api (wasmlm.js's #api)
let listening = false;

/**
 * The error of lm.serve and WasmLM.serve outside a browser page (Node.js,
 * Deno, Bun, a worker), where no Service Worker can answer fetches, saying
 * what serves the API there instead; null in a page. They check it first, so
 * that it is the one thing they say there.
 */
export function servesNowhere() {
  if (globalThis.document) return null;
  return codedError('serve_failed', 'wasmlm: lm.serve needs a browser page: it answers the page\'s own fetches through a Service Worker, which Node.js, Deno, Bun and workers do not have. ' +
    'Here, call the model directly (lm.chat.completions.create and lm.embeddings.create take OpenAI\'s requests and give its answers), ' +
    'or serve the OpenAI HTTP API from this package: npx wasmlm serve -m model.gguf -addr 127.0.0.1:8080 (or with the Go CLI: wasmlm serve, the same flags)');
}

/**
 * Serves api (a model) at scope through the Service Worker (in a page:
 * servesNowhere is checked first); resolves to
 * {scope, baseURL, registration, close(), unregister()} once the Service
 * Worker controls the page.
 */
export async function serveModel(api, options = {}) {
  const { script, scope, workerScope } = checkServeOptions(options);
  const sw = globalThis.navigator?.serviceWorker;
  if (!sw) {
    throw codedError('serve_failed', 'wasmlm: this page cannot register a Service Worker: it needs a secure context (https, or http://localhost or 127.0.0.1) and a browser with Service Workers');
  }
  const copyHint = "copy wasmlm.sw.js (it imports nothing) into a folder of your site that holds the page, such as its root, and pass serviceWorker: '/wasmlm.sw.js'";
  if (script.origin !== location.origin) {
    throw codedError('serve_failed', `wasmlm: the Service Worker ${script.href} is not on this page's origin, and a browser registers only its own origin's (wasmlm.js from a CDN, say): ${copyHint}`);
  }
  if (!location.pathname.startsWith(workerScope)) {
    throw codedError('serve_failed', `wasmlm: the page ${location.pathname} is outside workerScope ${workerScope}: a Service Worker answers only the fetches of the pages it controls, which are under its folder (${new URL('./', script).pathname}) unless its server sends the header Service-Worker-Allowed: ${copyHint}`);
  }
  // The Service Worker answers every fetch under scope: not the page's own,
  // nor the files of wasmlm, which would then be answered by the API.
  const folder = unbundledURL('./'); // wasmlm's folder: on this origin unless it comes from a CDN
  const paths = [['this page', location.pathname], ['the Service Worker', script.pathname]];
  if (folder.origin === location.origin) paths.push(["wasmlm's files", folder.pathname]);
  for (const [what, path] of paths) {
    if (path.startsWith(scope)) {
      throw argumentError('scope', `must not hold ${what} (${path}): the Service Worker answers every fetch under ${scope} with the API; use a path of its own, such as '/v1/'`);
    }
  }
  // One Service Worker answers every page of the origin under workerScope:
  // its URL keeps the scopes it answers already (other pages', earlier
  // loads'), plus this one, so that no page's endpoint is dropped.
  const registered = await sw.getRegistration(workerScope).catch(() => undefined);
  const current = registered?.active ?? registered?.waiting ?? registered?.installing;
  const scopes = new Set([scope]);
  if (current && new URL(current.scriptURL).pathname === script.pathname) {
    for (const s of new URL(current.scriptURL).searchParams.getAll('scope')) scopes.add(s);
  }
  script.search = '';
  for (const s of [...scopes].sort()) script.searchParams.append('scope', s);
  if (!listening) {
    sw.addEventListener('message', onMessage);
    sw.startMessages();
    listening = true;
  }
  servers.set(scope, api);
  let registration;
  try {
    registration = await sw.register(script.href, { scope: workerScope });
    await controlled(sw, script.href);
  } catch (err) {
    if (servers.get(scope) === api) servers.delete(scope);
    if (err?.code === 'serve_failed') throw err;
    throw codedError('serve_failed', `wasmlm: the Service Worker ${script.pathname} could not be registered for ${workerScope}: ${err?.message ?? err} (beyond its own folder it needs the header Service-Worker-Allowed)`, { cause: err });
  }
  const close = () => { if (servers.get(scope) === api) servers.delete(scope); };
  return Object.freeze({
    scope,
    baseURL: location.origin + scope.slice(0, -1),
    registration,
    close,
    unregister: () => { close(); return registration.unregister(); },
  });
}

/**
 * Checks lm.serve's options (undefined: none): {script, scope,
 * workerScope}, the Service Worker's URL and the two paths, defaults
 * filled in.
 */
export function checkServeOptions(options = {}) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw argumentError('options', `must be an object, got ${describe(options)}`);
  }
  for (const k of Object.keys(options)) {
    if (!SERVE_OPTIONS.includes(k)) throw invalidCall(`unknown serve option "${k}" (known: ${SERVE_OPTIONS.join(', ')})`);
  }
  const { serviceWorker = SW_URL } = options;
  if (typeof serviceWorker !== 'string' && !(serviceWorker instanceof URL)) {
    throw argumentError('serviceWorker', `must be the URL of wasmlm.sw.js, got ${describe(serviceWorker)}`);
  }
  let script;
  try {
    script = new URL(serviceWorker, globalThis.location?.href);
  } catch {
    throw argumentError('serviceWorker', `must be the URL of wasmlm.sw.js, got ${describe(serviceWorker)}`);
  }
  const { scope = '/v1/', workerScope = new URL('./', script).pathname } = options;
  for (const [name, v] of [['scope', scope], ['workerScope', workerScope]]) {
    if (typeof v !== 'string' || !v.startsWith('/') || !v.endsWith('/')) {
      throw argumentError(name, `must be a path that starts and ends with '/', got ${describe(v)}`);
    }
  }
  return { script, scope, workerScope };
}

/** Resolves once the Service Worker at script controls the page (its first load: clients.claim()). */
function controlled(sw, script) {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (sw.controller?.scriptURL !== script) return false;
      sw.removeEventListener('controllerchange', check);
      clearTimeout(timer);
      resolve();
      return true;
    };
    const timer = setTimeout(() => {
      sw.removeEventListener('controllerchange', check);
      reject(codedError('serve_failed', 'wasmlm: the Service Worker did not take control of the page within 10 s'));
    }, 10_000);
    if (!check()) sw.addEventListener('controllerchange', check);
  });
}

/** A request from the Service Worker: run it in the model's worker and stream the response back. */
async function onMessage(e) {
  const m = e.data;
  if (m?.type !== 'wasmlm-fetch' || !e.ports[0]) return;
  const port = e.ports[0];
  const api = servers.get(m.scope);
  if (!api) {
    port.postMessage({ type: 'unavailable' });
    port.close();
    return;
  }
  port.postMessage({ type: 'accepted' });
  const aborter = new AbortController();
  port.onmessage = (ev) => { if (ev.data?.type === 'abort') aborter.abort(); };
  try {
    // load's contextShift: the default of a request without context_shift, n_keep, as chat's.
    const { contextShift, nKeep } = api.shift ?? {};
    const parts = api.iterable({ type: 'serveHTTP', request: m.request, modelName: api.name, contextShift, nKeep }, aborter.signal, (part) => part);
    for await (const part of parts) {
      if (part.status !== undefined) port.postMessage({ type: 'head', status: part.status, headers: part.headers });
      if (part.body?.byteLength > 0) port.postMessage({ type: 'body', body: part.body }, [part.body.buffer]);
    }
    await parts.result;
    port.postMessage({ type: 'end' });
  } catch (err) {
    port.postMessage({ type: 'error', message: String(err?.message ?? err), code: err?.code ?? 'error' });
  } finally {
    port.onmessage = null;
    port.close();
  }
}
