// worker_models_miniflare.mjs: serves the edge build in miniflare (its own
// workerd, with a local R2 bucket MODEL_BUCKET) for worker_models_test.go.
//
//   node worker_models_miniflare.mjs '{"build": DIR, "persist": DIR, "bindings": {...}, "assets": DIR}'
//
// (assets, optional: a directory served as the worker's static assets,
// bound as ASSETS)
// prints "listening URL", then takes commands on standard input, one JSON
// object a line, answering "ok" or "error: why" on a line each:
//   {"op": "put", "key": KEY, "file": PATH}   put a file into the bucket
//   {"op": "delete", "key": KEY}             delete an object
// and disposes of miniflare when its input ends.
import { readFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import { Miniflare } from "miniflare";
const { build, persist, bindings, assets } = JSON.parse(process.argv[2]);
const mf = new Miniflare({
  modules: true,
  scriptPath: `${build}/worker.mjs`,
  modulesRoot: build,
  modulesRules: [
    { type: "CompiledWasm", include: ["**/*.wasm"] },
    { type: "ESModule", include: ["**/*.mjs", "**/*.js"] },
  ],
  compatibilityDate: "2025-06-01",
  r2Buckets: ["MODEL_BUCKET"],
  r2Persist: persist,
  bindings: bindings ?? {},
  ...(assets && { assets: { directory: assets, binding: "ASSETS", routerConfig: { has_user_worker: true } } }),
  host: "127.0.0.1",
  port: 0,
});
const url = await mf.ready;
const bucket = await mf.getR2Bucket("MODEL_BUCKET");
console.log(`listening ${url.origin}`);
for await (const line of createInterface({ input: process.stdin })) {
  try {
    const cmd = JSON.parse(line);
    if (cmd.op === "put") await bucket.put(cmd.key, await readFile(cmd.file));
    else if (cmd.op === "delete") await bucket.delete(cmd.key);
    else throw new Error(`unknown op ${cmd.op}`);
    console.log("ok");
  } catch (err) {
    console.log(`error: ${err.message ?? err}`);
  }
}
await mf.dispose();
