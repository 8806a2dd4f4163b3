// wasmlm.worker.js: the Web Worker that runs wasmlm.wasm for wasmlm.js.
//
// A classic worker (not a module worker), because Go's wasm_exec.js is a
// classic script and importScripts works in every browser with workers.
//
// Messages from the page: {id, type, ...}
//   boot      {module}                    start the Go program (a compiled WebAssembly.Module)
//   load      {model, tokenizer, contextLength}
//   call      {method, args}              info, tokenize, detokenize
//   generate  {prompt, options}           stream {prompt, options}   chat {messages, options, openai}
//   abort     {id}                        abort generation id (also while it waits its turn)
// Replies: {type: 'chunk', id, chunk} while streaming, then {type: 'result', id, value | error};
// {type: 'fatal', message} when the Go program exits and nothing more can run.
'use strict';

importScripts('./wasm_exec.js');

let binding = null; // a Promise of globalThis.wasmlm, set by the Go program
const controllers = new Map(); // generation id → AbortController

// OpenAI names of the options, for the errors of chat.completions.create.
const OPENAI_NAMES = {
  maxTokens: 'max_tokens', topP: 'top_p', topK: 'top_k', minP: 'min_p', repeatPenalty: 'repeat_penalty',
  presencePenalty: 'presence_penalty', frequencyPenalty: 'frequency_penalty',
};

function boot(module) {
  binding ??= (async () => {
    const go = new Go();
    let exitCode = '?';
    go.exit = (code) => { exitCode = code; };
    const instance = await WebAssembly.instantiate(module, go.importObject);
    // run() returns once main blocks, having set globalThis.wasmlm; its
    // Promise settles only if the Go program exits.
    go.run(instance).then(
      () => postMessage({ type: 'fatal', message: `the Go program exited (code ${exitCode})` }),
      (err) => postMessage({ type: 'fatal', message: String(err?.message ?? err) }),
    );
    if (!self.wasmlm) throw new Error('wasmlm: wasmlm.wasm did not register its binding (is it the wasmlm build?)');
    return self.wasmlm;
  })();
  return binding;
}

// options plus the AbortSignal of this generation (options that are not an
// object go to Go as they are, which rejects them with a clear message).
function withSignal(options, signal) {
  if (options == null) return { signal };
  if (typeof options !== 'object' || Array.isArray(options)) return options;
  return { ...options, signal };
}

async function handle(m, signal) {
  if (m.type === 'boot') {
    await boot(m.module);
    return null;
  }
  if (!binding) throw new Error('wasmlm: the worker was not booted');
  const b = await binding;
  const onToken = (chunk) => postMessage({ type: 'chunk', id: m.id, chunk });
  switch (m.type) {
    case 'load':
      return b.load(m.model, { tokenizer: m.tokenizer ?? undefined, contextLength: m.contextLength ?? undefined });
    case 'call':
      if (!['info', 'tokenize', 'detokenize'].includes(m.method)) throw new Error(`wasmlm: unknown method ${m.method}`);
      return b[m.method](...m.args);
    case 'generate':
      return b.generate(m.prompt, withSignal(m.options, signal));
    case 'stream':
      return b.stream(m.prompt, withSignal(m.options, signal), onToken);
    case 'chat':
      return b.chat(m.messages, withSignal(m.options, signal), onToken);
  }
  throw new Error(`wasmlm: unknown request ${m.type}`);
}

self.onmessage = async (e) => {
  const m = e.data;
  if (m.type === 'abort') {
    controllers.get(m.id)?.abort();
    return;
  }
  // Registered before any await, so an abort that follows at once finds it.
  const controller = new AbortController();
  controllers.set(m.id, controller);
  try {
    const value = await handle(m, controller.signal);
    postMessage({ type: 'result', id: m.id, value });
  } catch (err) {
    let message = String(err?.message ?? err);
    if (m.openai && err?.code === 'invalid_argument') {
      message = message.replace(/\b(maxTokens|topP|topK|minP|repeatPenalty|presencePenalty|frequencyPenalty)\b/g, (n) => OPENAI_NAMES[n]);
    }
    postMessage({ type: 'result', id: m.id, error: { message, code: err?.code ?? 'error' } });
  } finally {
    controllers.delete(m.id);
  }
};
