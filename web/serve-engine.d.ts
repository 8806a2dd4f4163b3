// Types of serve-engine.js (the package entry wasmlm/serve), imported for its side effect.

/** The URL of wasmlm-serve.wasm, the engine with lm.serve's OpenAI endpoint. */
export declare const SERVE_ENGINE: string;
