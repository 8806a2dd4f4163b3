// worker-run.mjs: serves the edge worker's build (make worker's
// build/worker/) in miniflare, Cloudflare's local simulator, which runs
// the worker in its own workerd with a local R2 bucket bound as
// MODEL_BUCKET (bare workerd has no R2 backend). `make worker-run` and the
// Go tests in tests/e2e start it; it listens on 127.0.0.1 only.
//
//   node tools/worker-run.mjs --build build/worker [--port 8787] [--r2 DIR]
//       [--model FILE] [--put KEY=FILE]... [--var NAME=VALUE]...
//       [--assets DIR] [--stdin]
//
//   --build DIR     the worker build to serve (required)
//   --port N        the port (default 8787; 0 picks a free one)
//   --r2 DIR        where the bucket's objects are kept (default: a
//                   temporary directory, removed at exit)
//   --model FILE    puts FILE in the bucket under its base name and sets
//                   WASMLM_MODEL to that key (unless --var sets it); the
//                   first part of a split set puts every part
//   --put KEY=FILE  puts FILE in the bucket as KEY, first
//   --var NAME=VAL  a variable of the worker's env; the WASMLM_* variables
//                   of this process's environment are passed too (--var wins)
//   --assets DIR    serves DIR's files as the worker's static assets, bound
//                   as ASSETS (a split model's parts: WASMLM_MODEL_URL=/path)
//   --stdin         stops when standard input ends, and takes a command per
//                   line meanwhile: "put KEY=FILE" puts FILE in the bucket
//                   as KEY (the isolate keeps running), answered on standard
//                   output by "worker-run: put KEY" or "worker-run: error: WHY"
//
// The --model and --put files are in the bucket before the worker listens:
// a first miniflare, which serves nothing, on a port of its own, puts them
// into the bucket's directory and stops (a quarter of a second), and only
// then does the worker's miniflare take the port, so no request ever finds
// the bucket without them. A file the bucket already holds (the same size
// and MD5, which R2 keeps as the ETag) is not put again: a second run with
// the same --r2 and a 100 MB model is up in 2–3 s, not 16–23 s. Once the
// worker answers it prints one line, "wasmlm edge worker: URL", and serves
// until SIGINT or SIGTERM (or its stdin closing, with --stdin), when it
// stops miniflare and its workerd. Node 20 is enough: miniflare declares
// Node >= 22 (its package.json's engines) but serves, puts and reads R2
// objects on Node 20, where wasmlm's tests run it; on a Node older than 22
// the script says so in one line on stderr, and nothing else warns.
import { Miniflare } from 'miniflare';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

function usage(message) {
  console.error(`worker-run: ${message}\nusage: node tools/worker-run.mjs --build DIR [--port N] [--r2 DIR] [--model FILE] [--put KEY=FILE]... [--var NAME=VALUE]... [--assets DIR] [--stdin]`);
  process.exit(2);
}

const opts = { port: 8787, puts: [], vars: {}, stdin: false };
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const flag = args[i];
  const value = () => {
    if (i + 1 >= args.length) usage(`${flag} needs a value`);
    return args[++i];
  };
  const pair = (what) => {
    const v = value();
    const eq = v.indexOf('=');
    if (eq <= 0) usage(`${flag} takes ${what}, got ${JSON.stringify(v)}`);
    return [v.slice(0, eq), v.slice(eq + 1)];
  };
  switch (flag) {
    case '--build': opts.build = value(); break;
    case '--port': opts.port = Number(value()); break;
    case '--r2': opts.r2 = value(); break;
    case '--model': opts.model = value(); break;
    case '--put': opts.puts.push(pair('KEY=FILE')); break;
    case '--var': { const [k, v] = pair('NAME=VALUE'); opts.vars[k] = v; break; }
    case '--assets': opts.assets = value(); break;
    case '--stdin': opts.stdin = true; break;
    default: usage(`unknown argument ${JSON.stringify(flag)}`);
  }
}
if (Number(process.versions.node.split('.')[0]) < 22) {
  console.error(`worker-run: warning: Node ${process.version}: miniflare declares Node >= 22; wasmlm tests it on Node 20, where it works`);
}
if (!opts.build) usage('--build is required');
if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) usage(`--port must be a port number, got ${opts.port}`);

// The modules make worker writes, by the names worker.mjs and runtime.mjs
// import them under.
const modules = [
  ['worker.mjs', 'ESModule'],
  ['runtime.mjs', 'ESModule'],
  ['wasm_exec.js', 'ESModule'],
  ['simd.js', 'ESModule'],
  ['simd.wasm', 'CompiledWasm'],
  ['simd-relaxed.wasm', 'CompiledWasm'],
  ['app.wasm', 'CompiledWasm'],
].map(([name, type]) => {
  const file = path.join(opts.build, name);
  if (!fs.existsSync(file)) usage(`${file} is missing: run make worker`);
  return { type, path: name, contents: fs.readFileSync(file) };
});

const bindings = {};
for (const [k, v] of Object.entries(process.env)) {
  if (k.startsWith('WASMLM_') && v !== '') bindings[k] = v;
}
if (opts.model) {
  if (!fs.existsSync(opts.model)) usage(`--model ${opts.model}: no such file`);
  const files = modelFiles(opts.model);
  opts.puts.unshift(...files.map((file) => [path.basename(file), file]));
  bindings.WASMLM_MODEL = path.basename(opts.model);
}

// modelFiles is the files --model names: the file, or, for the first part
// of a split set (NAME-00001-of-0000N.gguf), every part, found beside it.
function modelFiles(file) {
  const m = path.basename(file).match(/^(.*)-(\d{5})-of-(\d{5})\.gguf$/);
  if (!m || Number(m[3]) === 1) return [file];
  if (Number(m[2]) !== 1) usage(`--model ${file} is part ${Number(m[2])} of ${Number(m[3])} of a split set: name its first part, ${m[1]}-00001-of-${m[3]}.gguf`);
  const files = [];
  for (let i = 1; i <= Number(m[3]); i++) {
    const part = path.join(path.dirname(file), `${m[1]}-${String(i).padStart(5, '0')}-of-${m[3]}.gguf`);
    if (!fs.existsSync(part)) usage(`--model ${file}: part ${i} of the split set, ${part}, is missing`);
    files.push(part);
  }
  return files;
}
Object.assign(bindings, opts.vars);

let r2 = opts.r2;
let tmp;
if (!r2) r2 = tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wasmlm-r2-'));

// putFirst puts the --model and --put files in the bucket kept in dir
// through a miniflare of its own, which serves nothing and is stopped
// before the worker's starts.
async function putFirst(dir) {
  if (opts.puts.length === 0) return;
  current = new Miniflare({
    modules: true,
    script: 'export default { fetch() { return new Response(null, { status: 503 }); } };',
    compatibilityDate: '2025-06-01',
    r2Buckets: ['MODEL_BUCKET'],
    r2Persist: dir,
    host: '127.0.0.1',
    port: 0,
  });
  try {
    const bucket = await current.getR2Bucket('MODEL_BUCKET');
    for (const [key, file] of opts.puts) {
      const data = fs.readFileSync(file);
      const held = await bucket.head(key);
      if (held?.size === data.byteLength && held.etag === crypto.createHash('md5').update(data).digest('hex')) {
        console.error(`worker-run: MODEL_BUCKET already holds ${file} as ${key}`);
        continue;
      }
      await bucket.put(key, data);
      console.error(`worker-run: put ${file} in MODEL_BUCKET as ${key}`);
    }
  } finally {
    const mf = current;
    current = null;
    await mf.dispose();
  }
}

let current = null; // the miniflare running: putFirst's, then the worker's
let stopping = false;
async function stop(code) {
  if (stopping) return;
  stopping = true;
  await current?.dispose().catch(() => {});
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  process.exit(code);
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

// command runs one line of --stdin's commands, in the order they came,
// once the worker's miniflare is up.
let serving;
const served = new Promise((resolve) => { serving = resolve; });
let commands = served;
function command(line) {
  commands = commands.then(async () => {
    const put = line.match(/^put ([^=]+)=(.+)$/);
    try {
      if (!put) throw new Error(`unknown command ${JSON.stringify(line)} (put KEY=FILE)`);
      await (await current.getR2Bucket('MODEL_BUCKET')).put(put[1], fs.readFileSync(put[2]));
      console.log(`worker-run: put ${put[1]}`);
    } catch (err) {
      console.log(`worker-run: error: ${err?.message ?? err}`);
    }
  });
}
if (opts.stdin) {
  const lines = readline.createInterface({ input: process.stdin });
  lines.on('line', (line) => command(line));
  lines.on('close', () => stop(0));
}

try {
  await putFirst(path.resolve(r2));
  if (stopping) await new Promise(() => {}); // stop exits
  current = new Miniflare({
    modules,
    modulesRoot: '/',
    compatibilityDate: '2025-06-01',
    compatibilityFlags: ['enable_request_signal'], // as wrangler.toml's
    bindings,
    r2Buckets: ['MODEL_BUCKET'],
    r2Persist: path.resolve(r2),
    ...(opts.assets && {
      // routerConfig: the worker answers every path its assets do not hold.
      assets: { directory: path.resolve(opts.assets), binding: 'ASSETS', routerConfig: { has_user_worker: true } },
    }),
    host: '127.0.0.1',
    port: opts.port,
  });
  const url = await current.ready;
  serving();
  console.log(`wasmlm edge worker: ${url.href}`);
} catch (err) {
  if (!stopping) {
    console.error(`worker-run: ${err?.stack ?? err}`);
    await stop(1);
  }
}
