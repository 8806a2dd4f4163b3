// The runner's Web Worker: runs the GOOS=js GOARCH=wasm test binary with
// Go's wasm_exec.js, its arguments, environment and working directory from
// /config. Its output goes to the runner as it is written (a synchronous
// request per write keeps the order and lands every byte before the exit
// code), it reads files of the module read-only through the runner (/fs/),
// and its exit code, or why it could not run, ends the run. With config.simd
// it gets web/simd.js's kernel imports too.
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

// The file system Go's syscall package calls (Node's callback API), over
// wasm_exec.js's, whose other calls fail with ENOSYS: stdout and stderr go
// to the runner, files are read (never written) through it.
let cwd = '/';
globalThis.process.cwd = () => cwd;
const fs = globalThis.fs;
const S_IFDIR = 0o040000, S_IFREG = 0o100000;
fs.constants = { O_WRONLY: 1, O_RDWR: 2, O_CREAT: 64, O_EXCL: 128, O_TRUNC: 512, O_APPEND: 1024, O_DIRECTORY: 65536 };
const writeFlags = fs.constants.O_WRONLY | fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_APPEND;

function fsError(code) {
  const err = new Error(code);
  err.code = code;
  return err;
}

// get asks the runner for /fs/what of path (made absolute against the
// working directory): a Response-like {status, body}; an error status's
// body is the errno code.
function get(what, path, type) {
  const abs = path.startsWith('/') ? path : `${cwd}/${path}`;
  const xhr = new XMLHttpRequest();
  xhr.open('GET', `/fs/${what}?path=${encodeURIComponent(abs)}`, false);
  if (type) xhr.responseType = type;
  xhr.send();
  if (xhr.status !== 200) {
    const body = type === 'arraybuffer' ? new TextDecoder().decode(xhr.response) : xhr.responseText;
    const code = body.trim();
    throw fsError(['ENOENT', 'EACCES', 'EINVAL'].includes(code) ? code : 'EIO'); // codes Go's syscall knows

  }
  return xhr.response;
}

function statOf(path) {
  const s = JSON.parse(get('stat', path));
  return {
    dev: 0, ino: 0, mode: (s.dir ? S_IFDIR : S_IFREG) | s.perm, nlink: 1, uid: 0, gid: 0, rdev: 0,
    size: s.size, blksize: 4096, blocks: Math.ceil(s.size / 512),
    atimeMs: s.mtimeMs, mtimeMs: s.mtimeMs, ctimeMs: s.mtimeMs,
    isDirectory() { return s.dir; },
  };
}

const files = new Map(); // fd → {path, stat, data (read on first use), pos}
let nextFD = 100;

function call(callback, f) {
  let result;
  try {
    result = f();
  } catch (err) {
    callback(err.code ? err : fsError('EIO'));
    return;
  }
  callback(null, result);
}

fs.writeSync = (fd, buf) => {
  if (fd !== 1 && fd !== 2) throw fsError('EBADF');
  post(`/out?fd=${fd}`, buf.slice());
  return buf.length;
};
fs.write = (fd, buf, offset, length, position, callback) =>
  call(callback, () => fs.writeSync(fd, buf.subarray(offset, offset + length)));
fs.open = (path, flags, mode, callback) => call(callback, () => {
  if (flags & writeFlags) throw fsError('EROFS');
  const stat = statOf(path);
  if ((flags & fs.constants.O_DIRECTORY) && !stat.isDirectory()) throw fsError('ENOTDIR');
  const fd = nextFD++;
  files.set(fd, { path, stat, data: null, pos: 0 });
  return fd;
});
fs.close = (fd, callback) => call(callback, () => {
  if (!files.delete(fd)) throw fsError('EBADF');
});
fs.stat = (path, callback) => call(callback, () => statOf(path));
fs.lstat = fs.stat;
fs.fstat = (fd, callback) => call(callback, () => {
  const f = files.get(fd);
  if (!f) throw fsError('EBADF');
  return f.stat;
});
fs.readdir = (path, callback) => call(callback, () => JSON.parse(get('dir', path)));
fs.read = (fd, buffer, offset, length, position, callback) => call(callback, () => {
  const f = files.get(fd);
  if (!f) throw fsError('EBADF');
  if (f.stat.isDirectory()) throw fsError('EISDIR');
  if (!f.data) f.data = new Uint8Array(get('file', f.path, 'arraybuffer'));
  const at = position === null || position === undefined ? f.pos : position;
  const chunk = f.data.subarray(at, at + length);
  buffer.set(chunk, offset);
  if (position === null || position === undefined) f.pos += chunk.length;
  return chunk.length;
});

(async () => {
  const config = await (await fetch('/config')).json();
  cwd = config.cwd;
  const go = new Go();
  go.argv = config.argv;
  go.env = config.env;
  go.exit = (code) => post(`/exit?code=${code}`, '');
  let instance, simd;
  try {
    let importObject = go.importObject;
    if (config.simd) { // the SIMD kernels' imports, as a page gets them
      const { simdImports } = await import('/simd.js');
      const off = config.simd === 'off';
      simd = await simdImports(off ? null : fetch('/kernels.wasm'), {
        enabled: !off,
        relaxed: config.simd === 'relaxed' ? fetch('/kernels-relaxed.wasm') : null,
      });
      if (!off && !simd.enabled) throw new Error(`the SIMD kernels are unavailable: ${simd.reason}`);
      if (config.simd === 'relaxed' && !simd.relaxed) throw new Error('the relaxed SIMD kernels are unavailable (this Chromium has no relaxed SIMD)');
      importObject = { ...importObject, ...simd.importObject };
    }
    ({ instance } = await WebAssembly.instantiateStreaming(fetch('/test.wasm'), importObject));
    if (simd) await simd.attach(instance);
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
