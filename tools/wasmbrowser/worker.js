// The runner's Web Worker: runs the GOOS=js GOARCH=wasm test binary with
// Go's wasm_exec.js, its arguments and environment from /config. Its
// output goes to the runner as it is written (a synchronous request per
// write keeps the order and lands every byte before the exit code), and
// its exit code, or why it could not run, ends the run.
'use strict';
importScripts('/wasm_exec.js');

function post(path, body) {
  const xhr = new XMLHttpRequest();
  xhr.open('POST', path, false); // synchronous: allowed in workers
  xhr.send(body);
}

function fail(message) {
  try {
    post('/fail', String(message));
  } catch (e) {
    // the runner is gone: nothing to tell
  }
}

self.onerror = (message, source, line) => fail(`uncaught in the worker: ${message} (${source}:${line})`);
self.onunhandledrejection = (e) => fail(`unhandled rejection in the worker: ${e.reason && e.reason.stack || e.reason}`);

// wasm_exec.js writes stdout and stderr through fs.writeSync (and fs.write,
// which calls it).
globalThis.fs.writeSync = (fd, buf) => {
  post(`/out?fd=${fd}`, buf.slice());
  return buf.length;
};

(async () => {
  const config = await (await fetch('/config')).json();
  const go = new Go();
  go.argv = config.argv;
  go.env = config.env;
  go.exit = (code) => post(`/exit?code=${code}`, '');
  let instance;
  try {
    ({ instance } = await WebAssembly.instantiateStreaming(fetch('/test.wasm'), go.importObject));
  } catch (e) {
    fail(`instantiating the test binary: ${e.stack || e}`);
    return;
  }
  post('/started', '');
  try {
    await go.run(instance);
  } catch (e) {
    fail(`the test binary stopped: ${e.stack || e}`);
  }
})();
