// serve-engine.js: the package entry wasmlm/serve, which a bundled app that
// serves (WasmLM.load(source, { serve: true }), then lm.serve) imports for
// its side effect:
//
//   import 'wasmlm/serve';
//
// It names wasmlm-serve.wasm, the engine with the OpenAI endpoint, in the
// literal form bundlers copy the file for, and tells wasmlm.js where it is.
// An app that never serves does not import it, and so does not ship the
// file's 9.7 MB. From a static folder or a CDN it is not needed: wasmlm.js
// then finds wasmlm-serve.wasm beside itself.

import { host } from './host.js';

/** The URL of wasmlm-serve.wasm. */
export const SERVE_ENGINE = new URL('./wasmlm-serve.wasm', import.meta.url).href;

host.serveEngine = SERVE_ENGINE;
