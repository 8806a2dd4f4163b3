// wasmlm.sw.js: the Service Worker of lm.serve({ scope }) (serve.js).
//
// It answers the fetches of the pages it controls whose URL is under a
// scope (its script URL's ?scope= parameters, '/v1/' by default: every
// scope a page of the origin served, since they share this one Service
// Worker; the longest that holds the URL), on this origin, by
// handing each to the page that made it — which runs it with the model in
// its worker (package httpapi's handler) — and streaming back what that
// page sends, a flush (a Server-Sent Event) at a time. A page that does not
// serve the scope passes it on to the other windows of the origin; when
// none serves, the answer is 503 with an OpenAI error object. Every other
// fetch goes to the network as if there were no Service Worker.
'use strict';

const SCOPES = new URL(self.location.href).searchParams.getAll('scope').filter((s) => s.startsWith('/') && s.endsWith('/'));
if (SCOPES.length === 0) SCOPES.push('/v1/');
SCOPES.sort((a, b) => b.length - a.length); // the longest first: the one that holds a URL most closely
// How long a page has to say it received a request (it does so at once,
// before the request waits for the model) before the next page is asked.
const ACK_MS = 3000;
const NULL_BODY = [101, 204, 205, 304];

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));

self.addEventListener('fetch', (event) => {
  const url = new URL(event.request.url);
  const scope = SCOPES.find((s) => url.pathname.startsWith(s));
  if (url.origin !== self.location.origin || !scope) return;
  event.respondWith(answer(event, url, scope));
});

async function answer(event, url, scope) {
  const req = event.request;
  const request = {
    method: req.method,
    // The API's own path: scope stands for /v1/.
    url: `/v1/${url.pathname.slice(scope.length)}${url.search}`,
    headers: [...req.headers],
  };
  if (req.method !== 'GET' && req.method !== 'HEAD') request.body = new Uint8Array(await req.arrayBuffer());
  const windows = await self.clients.matchAll({ type: 'window' });
  const ordered = [...windows.filter((c) => c.id === event.clientId), ...windows.filter((c) => c.id !== event.clientId)];
  for (const client of ordered) {
    const res = await ask(client, scope, request, req.signal);
    if (res) return res;
  }
  return errorResponse(503, `No page of this site serves a model at ${scope}: load one and call lm.serve({ scope: '${scope}' }) in a page this Service Worker controls, and keep it open.`, 'model_not_served');
}

/** Asks client to serve request: resolves to a Response, or null when it does not serve the scope. */
function ask(client, scope, request, signal) {
  return new Promise((resolve) => {
    const { port1, port2 } = new MessageChannel();
    let accepted = false;
    let stream = null; // the response body's controller, once the head came
    const done = () => { port1.onmessage = null; port1.close(); };
    const timer = setTimeout(() => { if (!accepted) { done(); resolve(null); } }, ACK_MS);
    signal?.addEventListener('abort', () => port1.postMessage({ type: 'abort' }), { once: true });
    port1.onmessage = (e) => {
      const m = e.data;
      switch (m.type) {
        case 'unavailable':
          clearTimeout(timer);
          done();
          resolve(null);
          break;
        case 'accepted':
          clearTimeout(timer);
          accepted = true;
          break;
        case 'head': {
          if (NULL_BODY.includes(m.status)) {
            resolve(new Response(null, { status: m.status, headers: m.headers }));
            break;
          }
          const body = new ReadableStream({
            start(c) { stream = c; },
            cancel() { port1.postMessage({ type: 'abort' }); done(); }, // the client stopped reading
          });
          resolve(new Response(body, { status: m.status, headers: m.headers }));
          break;
        }
        case 'body':
          stream?.enqueue(m.body);
          break;
        case 'end':
          stream?.close();
          done();
          break;
        case 'error':
          if (stream) stream.error(new Error(m.message));
          else resolve(errorResponse(503, `The page's model could not answer: ${m.message}`, m.code));
          done();
          break;
      }
    };
    client.postMessage({ type: 'wasmlm-fetch', scope, request }, [port2]);
  });
}

/** An OpenAI error object. */
function errorResponse(status, message, code) {
  const error = { message, type: 'server_error', param: null, code };
  return new Response(JSON.stringify({ error }), { status, headers: { 'Content-Type': 'application/json' } });
}
