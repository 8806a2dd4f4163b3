# workerd configuration for `make worker-run`: serves the edge build in
# build/worker/ (made by `make worker`) as Cloudflare would. The listening
# address is set on the command line: --socket-addr http=127.0.0.1:8787.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [(name = "wasmlm", worker = .worker)],
  sockets = [(name = "http", address = "127.0.0.1:8787", http = (), service = "wasmlm")],
);

# The files make worker writes (workers-assets-gen's glue, our worker.mjs,
# web/simd.js, the SIMD kernels and the Go build); the names are the ones
# worker.mjs and runtime.mjs import.
const worker :Workerd.Worker = (
  modules = [
    (name = "worker.mjs", esModule = embed "../../build/worker/worker.mjs"),
    (name = "runtime.mjs", esModule = embed "../../build/worker/runtime.mjs"),
    (name = "wasm_exec.js", esModule = embed "../../build/worker/wasm_exec.js"),
    (name = "simd.js", esModule = embed "../../build/worker/simd.js"),
    (name = "simd.wasm", wasm = embed "../../build/worker/simd.wasm"),
    (name = "simd-relaxed.wasm", wasm = embed "../../build/worker/simd-relaxed.wasm"),
    (name = "app.wasm", wasm = embed "../../build/worker/app.wasm"),
  ],
  # The keys and limits Cloudflare gives as a secret and variables, taken
  # here from the environment workerd runs in, so that
  #   WASMLM_API_KEYS=sk-local WASMLM_RATE_LIMIT=60 make worker-run
  # tries them locally (unset: null, which the worker reads as unset).
  bindings = [
    (name = "WASMLM_API_KEYS", fromEnvironment = "WASMLM_API_KEYS"),
    (name = "WASMLM_RATE_LIMIT", fromEnvironment = "WASMLM_RATE_LIMIT"),
    (name = "WASMLM_TOKEN_LIMIT", fromEnvironment = "WASMLM_TOKEN_LIMIT"),
    (name = "WASMLM_MAX_TOKENS", fromEnvironment = "WASMLM_MAX_TOKENS"),
    (name = "WASMLM_MAX_EMBED_TOKENS", fromEnvironment = "WASMLM_MAX_EMBED_TOKENS"),
  ],
  compatibilityDate = "2025-06-01",
);
