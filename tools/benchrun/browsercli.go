//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/chromedp/chromedp"
)

// A GOOS=js program in Chromium: the grammar benchmark runs `wasmlm bench`
// and the engine's mask benchmark (a test binary) in a Web Worker of a tab,
// on the page's SIMD kernels, because the page's JS API has no option for
// a response format yet. The worker gives the program what Node gives it
// under go_js_wasm_exec: a read-only file system over files fetched from
// the site (cliFS), a working directory, argv and env; it collects what
// the program writes to stdout and stderr, and its exit code.

// cliWorkerURL serves cliWorker; cliFilesURL serves the repository and the
// run's builds (a test server on 127.0.0.1, for the tab alone).
const (
	cliWorkerURL = "/__bench__/cli-worker.js"
	cliRootURL   = "/__bench__/root/"
	cliBuildURL  = "/__bench__/build/"
)

// cliWorker is the worker's script. Messages: {binary, argv, env, cwd,
// files: {path: url}, simd}; reply {code, stdout, stderr, simdRelaxed,
// error}.
const cliWorker = `'use strict';
const chunks = {};
const files = new Map(); // absolute path -> Uint8Array
const fds = new Map();
let nextFd = 3, cwd = '/';
function fsError(code) { const e = new Error(code); e.code = code; return e; }
function resolvePath(p) {
	const parts = [];
	for (const s of (p.startsWith('/') ? p : cwd + '/' + p).split('/')) {
		if (s === '' || s === '.') continue;
		if (s === '..') parts.pop(); else parts.push(s);
	}
	return '/' + parts.join('/');
}
function statOf(size) {
	return { dev: 0, ino: 0, mode: 0o100444, nlink: 1, uid: 0, gid: 0, rdev: 0, size, blksize: 4096,
		blocks: Math.ceil(size / 512), atimeMs: 0, mtimeMs: 0, ctimeMs: 0, isDirectory: () => false };
}
const enosys = (...args) => args[args.length - 1](fsError('ENOSYS'));
globalThis.fs = {
	constants: { O_WRONLY: -1, O_RDWR: -1, O_CREAT: -1, O_TRUNC: -1, O_APPEND: -1, O_EXCL: -1, O_DIRECTORY: -1 },
	writeSync(fd, buf) { (chunks[fd] ??= []).push(buf.slice()); return buf.length; },
	write(fd, buf, offset, length, position, cb) {
		if (offset !== 0 || length !== buf.length || position !== null) return enosys(cb);
		cb(null, this.writeSync(fd, buf));
	},
	open(p, flags, mode, cb) {
		const data = files.get(resolvePath(p));
		if (!data) return cb(fsError('ENOENT'));
		if (flags !== 0) return cb(fsError('EROFS'));
		const fd = nextFd++;
		fds.set(fd, { data, pos: 0 });
		cb(null, fd);
	},
	fstat(fd, cb) { const f = fds.get(fd); f ? cb(null, statOf(f.data.length)) : cb(fsError('EBADF')); },
	stat(p, cb) { const d = files.get(resolvePath(p)); d ? cb(null, statOf(d.length)) : cb(fsError('ENOENT')); },
	lstat(p, cb) { this.stat(p, cb); },
	read(fd, buffer, offset, length, position, cb) {
		const f = fds.get(fd);
		if (!f) return cb(fsError('EBADF'));
		const at = position ?? f.pos;
		const n = Math.max(0, Math.min(length, f.data.length - at));
		buffer.set(f.data.subarray(at, at + n), offset);
		if (position == null) f.pos += n;
		cb(null, n);
	},
	close(fd, cb) { fds.delete(fd); cb(null); },
	fsync(fd, cb) { cb(null); },
	chmod: enosys, chown: enosys, fchmod: enosys, fchown: enosys, ftruncate: enosys, lchown: enosys, link: enosys,
	mkdir: enosys, readdir: enosys, readlink: enosys, rename: enosys, rmdir: enosys, symlink: enosys, truncate: enosys,
	unlink: enosys, utimes: enosys,
};
globalThis.process = {
	getuid: () => -1, getgid: () => -1, geteuid: () => -1, getegid: () => -1,
	getgroups() { throw fsError('ENOSYS'); }, umask() { throw fsError('ENOSYS'); },
	pid: -1, ppid: -1, cwd: () => cwd, chdir(p) { cwd = resolvePath(p); },
};
importScripts('/wasm_exec.js');

function text(fd) {
	const parts = chunks[fd] ?? [];
	const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
	let at = 0;
	for (const p of parts) { all.set(p, at); at += p.length; }
	return new TextDecoder().decode(all);
}

onmessage = async (e) => {
	const m = e.data;
	let simdRelaxed = false;
	try {
		cwd = m.cwd;
		for (const [p, url] of Object.entries(m.files)) {
			const r = await fetch(url);
			if (!r.ok) throw new Error(url + ': ' + r.status);
			files.set(resolvePath(p), new Uint8Array(await r.arrayBuffer()));
		}
		const { simdImports } = await import('/simd.js');
		const simd = await simdImports(m.simd ? fetch('/wasmlm-simd.wasm') : null,
			{ enabled: m.simd, relaxed: m.simd ? fetch('/wasmlm-simd-relaxed.wasm') : null });
		if (m.simd && !simd.enabled) throw new Error('the SIMD kernels are unavailable: ' + simd.reason);
		simdRelaxed = simd.relaxed;
		const go = new Go();
		go.argv = m.argv;
		go.env = m.env;
		let code = null;
		go.exit = (c) => { code = c; };
		const { instance } = await WebAssembly.instantiateStreaming(fetch(m.binary), { ...go.importObject, ...simd.importObject });
		if (m.simd && !(await simd.attach(instance))) throw new Error('the SIMD kernels did not attach');
		await go.run(instance);
		postMessage({ code, stdout: text(1), stderr: text(2), simdRelaxed });
	} catch (err) {
		postMessage({ code: null, stdout: text(1), stderr: text(2), simdRelaxed, error: String(err?.stack ?? err) });
	}
};
`

// cliScript starts cliWorker in the tab with a message and returns its reply.
const cliScript = `(async () => {
	const w = new Worker(%q);
	try {
		return await new Promise((resolve, reject) => {
			w.onmessage = (e) => resolve(e.data);
			w.onerror = (e) => reject(new Error('the worker failed: ' + e.message));
			w.postMessage(%s);
		});
	} finally {
		w.terminate();
	}
})()`

// cliRun is one program's run in the worker.
type cliRun struct {
	// Binary is the program's URL on the site; Argv its arguments, the
	// program's name first; Env its environment; Cwd its working directory
	// in the worker's file system; Files the files there, by path, with
	// their URLs.
	Binary string            `json:"binary"`
	Argv   []string          `json:"argv"`
	Env    map[string]string `json:"env"`
	Cwd    string            `json:"cwd"`
	Files  map[string]string `json:"files"`
	// SIMD runs the program with the page's SIMD128 kernels (relaxed where
	// Chromium has relaxed SIMD, as the page does).
	SIMD bool `json:"simd"`
}

// cliResult is the worker's reply.
type cliResult struct {
	Code        *int   `json:"code"`
	Stdout      string `json:"stdout"`
	Stderr      string `json:"stderr"`
	SIMDRelaxed bool   `json:"simdRelaxed"`
	Error       string `json:"error"`
}

// mountCLI serves the worker's script, the repository (root) and the run's
// builds (dir) on b's site.
func (b *browser) mountCLI(root, dir string) {
	b.mux.HandleFunc(cliWorkerURL, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		fmt.Fprint(w, cliWorker)
	})
	b.mux.Handle(cliRootURL, http.StripPrefix(cliRootURL, http.FileServer(http.Dir(root))))
	b.mux.Handle(cliBuildURL, http.StripPrefix(cliBuildURL, http.FileServer(http.Dir(dir))))
	b.cliMounted = true
}

// runCLI runs a GOOS=js program in a worker of a tab of its own, which
// closes when ctx ends.
func (b *browser) runCLI(ctx context.Context, run cliRun) (cliResult, error) {
	tab, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	tab, cancelTimeout := context.WithTimeout(tab, browserTimeout)
	defer cancelTimeout()
	if err := chromedp.Do(tab, chromedp.Navigate(b.site+blankPage)); err != nil {
		return cliResult{}, err
	}
	msg, err := json.Marshal(run)
	if err != nil {
		return cliResult{}, err
	}
	raw, err := chromedp.Run(tab, chromedp.Evaluate[json.RawMessage](fmt.Sprintf(cliScript, cliWorkerURL, msg), chromedp.EvalAwaitPromise))
	if err != nil {
		return cliResult{}, err
	}
	var res cliResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return res, fmt.Errorf("unexpected result (%v): %.200s", err, raw)
	}
	if res.Error != "" {
		return res, fmt.Errorf("%s (stderr: %s)", res.Error, strings.TrimSpace(res.Stderr))
	}
	if res.Code == nil || *res.Code != 0 {
		code := "none"
		if res.Code != nil {
			code = fmt.Sprint(*res.Code)
		}
		return res, fmt.Errorf("exit code %s: %s", code, strings.TrimSpace(res.Stderr+"\n"+res.Stdout))
	}
	return res, nil
}

// repoFile is a file of the repository as the worker's file system holds
// it: under /repo, fetched from cliRootURL.
func repoFile(rel string) (string, string) {
	return path.Join("/repo", rel), cliRootURL + rel
}
