// worker.mjs: wasmlm's entry module for the edge worker. `make worker` puts it
// in place of the entry module syumai/workers' workers-assets-gen writes,
// beside that tool's runtime.mjs (which imports app.wasm) and wasm_exec.js
// (Go's, where go.run's second argument becomes the global "context" the
// Go side reads its env from), which it uses.
//
// One Go instance per isolate: the first request starts it (compiles
// app.wasm, instantiates it, attaches the SIMD kernels, runs Go's main,
// which reads the env once and loads the model), requests that arrive
// meanwhile wait for it, and every request is then handed to the same
// instance through the entry point it registers (binding.serve: see
// cmd/worker/instance.go), which queues them onto its one session. The
// response comes back a part at a time (package jsbridge/jshttp, the same
// transport as the page's serveHTTP) into the ReadableStream the Response
// carries; a client that leaves cancels the stream, which aborts its
// request. A client that leaves before the response began (its request
// still queued) is told by request.signal (compatibility flag
// enable_request_signal, set in wrangler.toml), which aborts it too: else
// workerd cancels the request's context, and the request would take the
// slot in its turn and wait for good for a context that is gone.
//
// If the Go program exits (a panic), the instance is dropped first, so
// that two never hold a model at once; the requests it had in flight are
// answered 500 (code worker_restarted: a streamed response that had
// started is cut instead), and the next request starts a fresh one.
//
// app.wasm is built with -tags wasmlm_simd: it imports wasmlm's SIMD128
// kernels (module `wasmlm_simd`), which must be in the import object, and
// the kernels must be attached to the Go instance's memory before go.run
// (web/simd.js explains the sequence; stubs stand in where SIMD is
// missing). The kernels come in as a wasm module import, a compiled
// WebAssembly.Module, because workerd, like Cloudflare, compiles no
// WebAssembly from bytes at run time. This worker only answers HTTP, so it
// exports only fetch.
import "./wasm_exec.js";
import { createRuntimeContext, loadModule } from "./runtime.mjs";
import { simdImports } from "./simd.js";
import simdKernels from "./simd.wasm";
import simdRelaxedKernels from "./simd-relaxed.wasm";

let compiled; // app.wasm, compiled once per isolate
let current = null; // the isolate's instance: {ready, inflight, exited}
let started = 0; // the instances this isolate started
let live = 0; // the instances started whose program has not exited

// start starts a Go instance; its ready resolves to the binding holding
// its entry point once main registered it.
function start(env, ctx) {
  const inst = { inflight: new Set(), exited: false };
  const ordinal = ++started;
  inst.ready = (async () => {
    compiled ??= await loadModule();
    const go = new Go();
    // The relaxed-SIMD build of the kernels where the runtime has relaxed SIMD
    // (Cloudflare's and workerd's V8 do), the SIMD128 one otherwise.
    const simd = await simdImports(simdKernels, { relaxed: simdRelaxedKernels });
    const instance = new WebAssembly.Instance(compiled, { ...go.importObject, ...simd.importObject });
    // On failure the Go side finds the kernels unavailable and uses pure Go.
    await simd.attach(instance).catch((err) => console.warn(`wasmlm: pure-Go kernels: ${err}`));
    let ready, failed;
    const registered = new Promise((resolve, reject) => { ready = resolve; failed = reject; });
    // live counts this instance too: a test build's /health reports it,
    // which proves an instance is dropped before the next starts.
    // memory() is what GET /health reports of the isolate's memory: the
    // instance's WebAssembly memory (which never shrinks: its peak) and the
    // JavaScript heap where the runtime says (workerd: not at all, null).
    const memory = () => ({
      wasm_bytes: instance.exports.mem.buffer.byteLength,
      js_heap_bytes: globalThis.performance?.memory?.usedJSHeapSize ?? null,
    });
    const binding = { ordinal, live: ++live, ready: () => ready(), memory };
    inst.started = true;
    inst.fail = failed;
    go.exit = (code) => ended(inst, `exit code ${code}`);
    go.run(instance, createRuntimeContext({ env, ctx, binding })).then(
      () => ended(inst, 'the program ended'),
      (err) => ended(inst, err),
    );
    await registered;
    return binding;
  })();
  inst.ready.catch(() => {}); // a failed start is reported to the requests waiting for it
  return inst;
}

// ended drops an instance whose Go program exited, first, then answers the
// requests it had in flight.
function ended(inst, why) {
  if (inst.exited) return;
  inst.exited = true;
  if (inst.started) live--;
  if (current === inst) current = null;
  console.error(`wasmlm: the Go instance exited (${why?.message ?? why}); the next request starts a fresh one`);
  inst.fail?.(new Error(`the Go instance exited (${why?.message ?? why})`));
  for (const request of inst.inflight) request.fail();
  inst.inflight.clear();
}

// errorResponse is an OpenAI error object.
function errorResponse(status, message, code) {
  const error = { message, type: 'server_error', param: null, code };
  return new Response(JSON.stringify({ error }), { status, headers: { 'Content-Type': 'application/json', 'Access-Control-Allow-Origin': '*' } });
}

const restarted = () => errorResponse(500, 'The worker\'s Go instance stopped while serving this request; the next request is served by a fresh one.', 'worker_restarted');

// keepAliveMs is how often a request wakes in its own context while it
// waits (for the instance to start, or in its queue): workerd cancels a
// request as hung when nothing of its own is pending, and what it waits for
// comes from the context of another request. Each wake (beat.tick) also
// handles the request's events and resumes the instance if its wake-up was
// lost (see serve). pollMs is the wake's period instead once a wake-up was
// seen to run in a foreign context (foreignSeen): a request then learns of
// its events within pollMs rather than keepAliveMs.
const keepAliveMs = 1000;
const pollMs = 20;

// foreignSeen is set once a request's wake-up ran in another request's
// context. A local workerd under load was seen to do it: a promise created
// in one request and resolved from another (the Go instance runs in
// whichever request's context called it) continued in the resolver's
// context, even though workerd's handle_cross_request_promise_resolution
// should run it in its own; once it starts, it goes on for the isolate's
// life. There the request's stream cannot be written (workerd throws: I/O
// objects belong to their request), and a timer set there dies with the
// other request, so the events wait for the request's own wake.
let foreignSeen = false;

// serve hands request to the instance and resolves to its Response; it
// calls stop when the response is complete. The instance posts the
// response's parts (and its turns: part null) from whichever request's
// context runs it; they are handled only in this request's own context
// (beat.own): by the continuation of a promise the post resolves, when it
// runs there, and otherwise by the request's next wake. The instance is
// resumed in a task of its own (a timer set in this request's context),
// after the chunk is on its way, and only once the response's stream wants
// more (its desiredSize, or its pull): a client that reads slowly holds the
// instance back rather than letting the response pile up in memory.
async function serve(inst, binding, request, beat, stop) {
  const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : new Uint8Array(await request.arrayBuffer());
  if (inst.exited) {
    stop();
    return restarted();
  }
  const events = []; // posted by the instance, from any context
  let wake = null; // resolves the promise armed in this request's context
  const post = (ev) => {
    events.push(ev);
    const w = wake;
    wake = null;
    w?.();
  };
  const entry = { fail: () => post({ type: 'fail' }) };
  const aborter = new AbortController();
  // A client that leaves before the response's head (its request still
  // queued, or cancelled by workerd) has no stream to cancel: the
  // request's own signal (compatibility flag enable_request_signal) says it
  // left, so that its request leaves the queue, or the slot, rather than
  // waiting for good on a context that is gone.
  const left = () => aborter.abort();
  request.signal?.addEventListener('abort', left);
  if (request.signal?.aborted) aborter.abort();
  inst.inflight.add(entry);
  try {
    binding.serve({ method: request.method, url: request.url, headers: [...request.headers], body },
      (part, resume) => post({ type: 'part', part, resume }),
      (message) => post({ type: 'done', message }),
      aborter.signal);
  } catch (err) {
    ended(inst, err); // a call into a program that exited throws; ended posts fail
  }
  let resolve;
  const response = new Promise((r) => { resolve = r; });
  // The instance waits for one resume at a time: pending holds it until
  // its timer, or failing that the request's next wake, calls it; held
  // holds it until the stream wants more.
  let pending = [];
  let held = null;
  const resume = () => {
    const due = pending;
    pending = [];
    for (const r of due) r();
  };
  const later = (r) => {
    pending.push(r);
    setTimeout(resume, 0);
  };
  let controller = null; // the response body's, once the head came
  let head = false;
  let gone = false;
  let finished = false;
  const wantsMore = () => gone || !controller || controller.desiredSize > 0;
  const release = () => {
    if (held && wantsMore()) {
      const r = held;
      held = null;
      later(r);
    }
  };
  let armed = false;
  // pump handles the events posted so far; it runs in this request's
  // context only, and arms the promise the next post resolves.
  const pump = () => {
    while (!finished && events.length > 0) {
      const ev = events.shift();
      if (ev.type === 'part' && ev.part === null) {
        // A turn: the request's work goes on in a task of this context's.
        later(() => ev.resume());
        continue;
      }
      if (ev.type === 'part') {
        const { part } = ev;
        if (!head) {
          head = true;
          const empty = request.method === 'HEAD' || [204, 205, 304].includes(part.status);
          const stream = empty ? null : new ReadableStream({
            start(c) { controller = c; },
            pull() { release(); },
            cancel() { gone = true; aborter.abort(); release(); },
          }, new ByteLengthQueuingStrategy({ highWaterMark: streamHighWater }));
          resolve(new Response(stream, { status: part.status, headers: part.headers }));
        }
        try {
          if (controller && !gone && part.body.byteLength > 0) controller.enqueue(part.body);
        } catch {
          gone = true;
        }
        held = () => ev.resume(!gone);
        release();
        continue;
      }
      finished = true;
      inst.inflight.delete(entry);
      request.signal?.removeEventListener('abort', left);
      stop();
      if (ev.type === 'done' && ev.message === undefined) {
        try { controller?.close(); } catch { /* cancelled */ }
      } else if (!head) {
        resolve(ev.type === 'fail' ? restarted() : errorResponse(500, `The worker could not serve the request: ${ev.message}`, 'internal_error'));
      } else if (!gone) {
        controller?.error(new Error(ev.type === 'fail' ? 'wasmlm: the worker\'s Go instance stopped mid-response' : ev.message));
      }
    }
    if (!finished && !armed) {
      armed = true;
      new Promise((r) => { wake = r; }).then(() => {
        armed = false;
        if (beat.own()) pump();
        else foreignSeen = true; // the next wake, in this context, pumps and arms again
      });
    }
  };
  beat.tick = () => {
    pump();
    resume();
    release();
  };
  pump();
  return response;
}

// streamHighWater is how many bytes of a response may wait in its stream
// for the client before the instance is held back.
const streamHighWater = 64 * 1024;

export default {
  async fetch(request, env, ctx) {
    // own is an I/O object of this request: reading its signal throws
    // anywhere but in this request's own context.
    const own = new AbortController();
    const beat = {
      tick() {},
      own() {
        try {
          void own.signal.aborted;
          return true;
        } catch {
          return false;
        }
      },
    };
    let timer;
    let stopped = false;
    const wakeUp = () => {
      beat.tick();
      if (!stopped) timer = setTimeout(wakeUp, foreignSeen ? pollMs : keepAliveMs);
    };
    timer = setTimeout(wakeUp, foreignSeen ? pollMs : keepAliveMs);
    const stop = () => {
      stopped = true;
      clearTimeout(timer);
    };
    try {
      return await handle(request, env, ctx, beat, stop);
    } catch (err) {
      stop();
      throw err;
    }
  },
};

// handle answers a request with the isolate's instance, starting it first
// if there is none; beat.tick is called as the request wakes (serve sets
// it), and stop once the request needs no more waking.
async function handle(request, env, ctx, beat, stop) {
  current ??= start(env, ctx);
  const inst = current;
  let binding;
  try {
    binding = await inst.ready;
  } catch {
    if (current === inst) current = null; // the next request starts afresh
    stop();
    return restarted();
  }
  return serve(inst, binding, request, beat, stop);
}
