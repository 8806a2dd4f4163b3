// prompt-api.js: the Prompt API (webmachinelearning/prompt-api, as Chrome
// ships it) over wasmlm: a LanguageModel class for pages and workers, and
// installPolyfill, which makes it globalThis.LanguageModel where the
// browser has none or its own answers 'unavailable'. Every session of one
// model source shares one WasmLM (one loaded model, one worker); each keeps
// its own conversation, which it sends whole to lm.chat.completions.create,
// so the model's chat template formats it (lm.chat.countTokens counts it)
// and the engine's prefix cache reuses what the last request evaluated. See docs/prompt-api.md. An ES
// module.

import { WasmLM } from './wasmlm.js';
import { regexpToGBNF, regexpToGBNFAfter } from './prompt-api-regexp.js';

/** The source and load options installPolyfill gave: those of LanguageModel.create. */
const config = { src: undefined, loadOptions: {} };

/** Loaded (or loading) models by source: {lm, promise, listeners, loading}. */
const models = new Map();

/** The sampling defaults (Chrome's) and bounds: params(), and what a session without the options samples with. */
const PARAMS = Object.freeze({ defaultTopK: 3, maxTopK: 128, defaultTemperature: 1, maxTemperature: 2 });

/** How many tool rounds one prompt may take before it fails. */
const MAX_TOOL_ROUNDS = 16;

const ROLES = ['system', 'user', 'assistant'];
const TYPES = ['text', 'image', 'audio', 'tool-call', 'tool-response'];

function domError(name, message) {
  return new DOMException(message, name);
}

/** A QuotaExceededError: the platform's class where it has one, else a DOMException of that name. */
function quotaError(requested, quota) {
  const message = `the input needs ${requested} tokens of context, ${quota} are available`;
  const Q = globalThis.QuotaExceededError;
  if (typeof Q === 'function') {
    try {
      return new Q(message, { requested, quota });
    } catch { /* an older shape: fall through */ }
  }
  const e = domError('QuotaExceededError', message);
  Object.defineProperties(e, { requested: { value: requested }, quota: { value: quota } });
  return e;
}

/** The DOMException a wasmlm rejection stands for. */
function translate(err) {
  if (err instanceof DOMException || err instanceof TypeError || err instanceof RangeError) return err;
  switch (err?.code) {
    case 'fetch_failed': return domError('NetworkError', err.message);
    case 'unsupported_model': return domError('NotSupportedError', err.message);
    case 'no_model': return domError('InvalidStateError', err.message);
    case 'invalid_argument': {
      // A JSON Schema responseConstraint with a feature the grammar lacks.
      const schema = /^response_format\.json_schema\.schema(?:\.(.+))?$/.exec(err.param ?? '');
      if (schema) return domError('NotSupportedError', schemaRefusal(schema[1], err.message));
      if (err.param === 'response_format' || err.param === 'grammar' || err.param === 'tools') return domError('NotSupportedError', err.message);
      // A prefix the JSON Schema's grammar cannot continue (#generate's reply start).
      if (/^messages\[\d+\]\.content$/.test(err.param ?? '')) return domError('NotSupportedError', err.message);
      return domError('OperationError', err.message);
    }
    default: return domError('OperationError', err?.message ?? String(err));
  }
}

/**
 * The NotSupportedError message for a JSON Schema responseConstraint the
 * grammar cannot hold a reply to: the schema's path (path, dotted, or
 * undefined for the schema itself) and the reason, the last clause of the
 * engine's message ("lookaround and group flags are not supported").
 */
function schemaRefusal(path, message) {
  const reason = String(message ?? '').split(': ').at(-1);
  const where = path ? `responseConstraint's ${path}` : 'responseConstraint';
  return `the ${where} cannot be enforced on the reply: ${reason}`;
}

/** Whether src is a model loaded already (a WasmLM: installPolyfill(lm) shares the page's). */
function isLoaded(src) {
  return typeof src?.chat?.completions?.create === 'function' && typeof src?.chat?.countTokens === 'function' && src.info != null;
}

function key(src) {
  if (src === undefined) return '';
  if (typeof src === 'string' || src instanceof URL) return `url:${src}`;
  return src; // a buffer, a Blob or {model, tokenizer}: by identity
}

/** The shared model of src, loading it on first use; onFraction hears 0…1. */
function model(src, loadOptions, onFraction) {
  const k = key(src);
  let m = models.get(k);
  if (!m && isLoaded(src)) {
    m = { lm: src, listeners: new Set(), loading: false, promise: Promise.resolve(src) };
    models.set(k, m);
  }
  if (!m) {
    m = { lm: null, listeners: new Set(), loading: true };
    const report = (p) => {
      const f = p.total ? Math.min(p.loaded / p.total, 1) : 0;
      for (const l of m.listeners) l(f);
    };
    const { onProgress, ...rest } = loadOptions ?? {};
    m.promise = WasmLM.load(src, { ...rest, onProgress: (p) => { onProgress?.(p); report(p); } }).then((lm) => {
      m.lm = lm;
      m.loading = false;
      return lm;
    }, (err) => {
      models.delete(k);
      throw err;
    });
    models.set(k, m);
  }
  if (onFraction) {
    m.listeners.add(onFraction);
    m.promise.finally(() => m.listeners.delete(onFraction)).catch(() => {});
  }
  return m;
}

/** An option's value, read once (a getter that throws rejects the call). */
function languages(list, field) {
  if (list === undefined) return undefined;
  if (list === null || typeof list[Symbol.iterator] !== 'function') throw new TypeError(`${field} must be a sequence`);
  return Array.from(list, (expected, i) => {
    if (expected === null || typeof expected !== 'object') throw new TypeError(`${field}[${i}] must be an object`);
    const type = expected.type;
    if (!TYPES.includes(type)) throw new TypeError(`${field}[${i}].type must be one of ${TYPES.join(', ')}`);
    const langs = expected.languages === undefined ? undefined : Intl.getCanonicalLocales(Array.from(expected.languages, String));
    return { type, languages: langs };
  });
}

/** The create options, validated and canonicalised (throws TypeError, RangeError, and sampling's errors). */
function coreOptions(options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
  const o = {
    expectedInputs: languages(options.expectedInputs, 'expectedInputs'),
    expectedOutputs: languages(options.expectedOutputs, 'expectedOutputs'),
    temperature: options.temperature,
    topK: options.topK,
  };
  return { ...o, ...sampling(o.temperature, o.topK) };
}

/**
 * temperature and topK checked as Chrome checks them, with its messages:
 * both or neither (NotSupportedError), topK at least 1 and temperature at
 * least 0 (RangeError); above the maximum (Infinity too), the maximum.
 */
function sampling(temperature, topK) {
  if ((temperature === undefined) !== (topK === undefined)) {
    throw domError('NotSupportedError', 'Initializing a new session must either specify both topK and temperature, or neither of them.');
  }
  if (topK === undefined) return {};
  const k = Math.floor(Number(topK));
  if (!(k >= 1)) throw new RangeError('The topK value provided is invalid.');
  const t = Number(temperature);
  if (!(t >= 0)) throw new RangeError('The temperature value provided is invalid.');
  return { topK: Math.min(k, PARAMS.maxTopK), temperature: Math.min(t, PARAMS.maxTemperature) };
}

/** Whether the options ask for what no model here has: images, audio. */
function unsupportedTypes(o) {
  const bad = (list) => (list ?? []).some((e) => e.type === 'image' || e.type === 'audio');
  return bad(o.expectedInputs) || bad(o.expectedOutputs);
}

/** The tools of create(), checked as Chrome checks them (TypeError). */
function checkTools(tools) {
  if (tools === undefined) return [];
  const names = new Set();
  return Array.from(tools, (t, i) => {
    const field = `tools[${i}]`;
    if (t === null || typeof t !== 'object') throw new TypeError(`${field} must be an object`);
    const { name, description, inputSchema, execute } = t;
    if (typeof name !== 'string' || name === '') throw new TypeError(`${field}.name must be a non-empty string`);
    if (typeof description !== 'string' || description === '') throw new TypeError(`${field}.description must be a non-empty string`);
    if (names.has(name)) throw new TypeError(`${field}.name ${name} is not unique`);
    names.add(name);
    if (inputSchema === null || typeof inputSchema !== 'object') throw new TypeError(`${field}.inputSchema must be an object`);
    if (inputSchema.type !== 'object') throw new TypeError(`${field}.inputSchema.type must be "object"`);
    const props = inputSchema.properties;
    if (props !== undefined && (props === null || typeof props !== 'object')) throw new TypeError(`${field}.inputSchema.properties must be an object`);
    if (inputSchema.required !== undefined && !Array.isArray(inputSchema.required)) throw new TypeError(`${field}.inputSchema.required must be an array`);
    if (typeof execute !== 'function') throw new TypeError(`${field}.execute must be a function`);
    // A circular schema throws TypeError; a getter or toJSON that throws, its own error.
    const parameters = JSON.parse(JSON.stringify(inputSchema));
    return { name, description, parameters, execute };
  });
}

/**
 * The input as canonical messages ({role, content: text, prefix}): the
 * specification's "validate and canonicalize a prompt" (hasAppended: the
 * session has input already, so a system message is a TypeError).
 */
function canonical(input, hasAppended) {
  if (input === null || typeof input !== 'object' || typeof input[Symbol.iterator] !== 'function') {
    return [{ role: 'user', content: String(input), prefix: false }];
  }
  const list = Array.from(input);
  if (list.length === 0) return [{ role: 'user', content: '', prefix: false }];
  return list.map((m, i) => {
    if (m === null || typeof m !== 'object') throw new TypeError(`messages[${i}] must be an object`);
    const { role, content, prefix = false } = m;
    if (!ROLES.includes(role)) throw new TypeError(`messages[${i}].role must be one of ${ROLES.join(', ')}`);
    if (prefix) {
      if (role !== 'assistant') throw domError('SyntaxError', `messages[${i}]: prefix is only for an assistant message`);
      if (i !== list.length - 1) throw domError('SyntaxError', `messages[${i}]: prefix is only for the last message`);
    }
    if (role === 'system' && (hasAppended || i > 0)) throw new TypeError(`messages[${i}]: a system message must come first in the session`);
    let text = '';
    if (typeof content === 'string') {
      text = content;
    } else if (content !== null && typeof content === 'object' && typeof content[Symbol.iterator] === 'function') {
      for (const [j, c] of Array.from(content).entries()) {
        if (c === null || typeof c !== 'object' || !TYPES.includes(c.type)) throw new TypeError(`messages[${i}].content[${j}].type must be one of ${TYPES.join(', ')}`);
        if (c.type !== 'text') throw domError('NotSupportedError', `messages[${i}].content[${j}]: ${c.type} inputs are not supported by this model`);
        if (typeof c.value !== 'string') throw new TypeError(`messages[${i}].content[${j}].value must be a string`);
        text += c.value;
      }
    } else {
      throw new TypeError(`messages[${i}].content must be a string or a sequence`);
    }
    return { role, content: text, prefix: Boolean(prefix) };
  });
}

/** A signal that aborts with the first of signals. */
function anySignal(signals) {
  const list = signals.filter(Boolean);
  if (typeof AbortSignal.any === 'function') return AbortSignal.any(list);
  const c = new AbortController();
  for (const s of list) {
    if (s.aborted) c.abort(s.reason);
    else s.addEventListener('abort', () => c.abort(s.reason), { once: true });
  }
  return c.signal;
}

function checkSignal(signal) {
  if (signal?.aborted) throw signal.reason ?? domError('AbortError', 'aborted');
}

/** A string for a regular expression's GBNF, or the request's response_format. */
function constraint(rc) {
  if (rc === undefined || rc === null) return {};
  if (rc instanceof RegExp) return { grammar: regexpToGBNF(rc), test: (s) => new RegExp(rc.source, rc.flags.replace(/[gy]/g, '')).test(s) };
  if (typeof rc !== 'object') throw new TypeError('responseConstraint must be a JSON Schema object or a RegExp');
  let schema;
  try {
    schema = JSON.parse(JSON.stringify(rc));
  } catch (err) {
    throw new TypeError(`responseConstraint is not JSON: ${err.message}`);
  }
  return {
    response_format: { type: 'json_schema', json_schema: { name: 'response', schema, strict: true } },
    test: (s) => { try { JSON.parse(s); return true; } catch { return false; } },
  };
}

/**
 * Sets how a reply that starts with prefix (a final assistant message with
 * prefix: true) is generated; the reply returned is what follows the
 * prefix. Without a constraint or with a RegExp, c.prefixGrammar: the
 * prefix, then any text, or what completes the prefix to a match of the
 * RegExp (a NotSupportedError when nothing does); the model generates the
 * prefix under it, so that its reply continues it. With a JSON Schema,
 * c.startsReply: the request ends with the prefix as the reply's
 * beginning (chat completions' prefix: true), which the schema's grammar
 * reads first, so that it holds the whole reply (a prefix it cannot
 * continue: NotSupportedError).
 */
function prefixed(c, prefix, rc) {
  const start = `root ::= ${gbnfString(prefix)} rest\n`;
  if (rc === undefined || rc === null) {
    c.prefixGrammar = `${start}rest ::= [\\x00-\\U0010FFFF]*\n`;
  } else if (rc instanceof RegExp) {
    c.prefixGrammar = start + regexpToGBNFAfter(rc, prefix).replace(/^root ::=/, 'rest ::=');
  } else {
    c.startsReply = true;
  }
}

/** A downloadprogress ProgressEvent (an Event with loaded and total where there is no ProgressEvent: Node.js). */
function progressEvent(loaded) {
  if (typeof ProgressEvent === 'function') return new ProgressEvent('downloadprogress', { loaded, total: 1, lengthComputable: true });
  return Object.assign(new Event('downloadprogress'), { loaded, total: 1, lengthComputable: true });
}

/** A GBNF string literal of text. */
function gbnfString(text) {
  let out = '"';
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (cp >= 0x20 && cp < 0x7f && ch !== '"' && ch !== '\\') out += ch;
    else out += cp <= 0xffff ? `\\u${cp.toString(16).padStart(4, '0')}` : `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

/** A session of the Prompt API: the specification's LanguageModel. */
export class LanguageModel extends EventTarget {
  #lm;
  #window;
  #initial; // OpenAI messages of initialPrompts and the tools' system text, never evicted
  #initialUsage;
  #turns = []; // [[OpenAI message, ...], ...]: each prompt's input and reply, each append's input
  #usage;
  #options;
  #tools;
  #queue = Promise.resolve();
  #destroyed = null; // the reason, once destroyed
  #destroyer = new AbortController();
  #oncontextoverflow = null;

  /** Not for pages: LanguageModel.create() makes sessions. */
  constructor(secret, state) {
    super();
    if (secret !== CREATE) throw new TypeError('Illegal constructor: use LanguageModel.create()');
    this.#lm = state.lm;
    this.#window = state.window;
    this.#initial = state.initial;
    this.#initialUsage = state.initialUsage;
    this.#turns = state.turns;
    this.#usage = state.usage;
    this.#options = state.options;
    this.#tools = state.tools;
  }

  /** 'available' once the model is loaded here, 'downloading' while it loads, 'downloadable' before, 'unavailable' for images or audio. */
  static async availability(options = {}) {
    if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
    const o = coreOptions({ ...options, temperature: undefined, topK: undefined });
    try {
      sampling(options.temperature, options.topK);
    } catch {
      return 'unavailable'; // Chrome's answer for a temperature and topK that create() refuses
    }
    if (unsupportedTypes(o)) return 'unavailable';
    if (isLoaded(config.src)) return 'available';
    const m = models.get(key(config.src));
    if (!m) return 'downloadable';
    return m.loading ? 'downloading' : 'available';
  }

  /** The sampling parameters' defaults and bounds (the specification's extension-only params()). */
  static async params() {
    return { ...PARAMS };
  }

  /** A new session: loads the model on first use (downloadprogress on monitor's target), then its initialPrompts. */
  static async create(options = {}) {
    const o = coreOptions(options);
    const signal = options.signal;
    checkSignal(signal);
    const tools = checkTools(options.tools);
    const initialPrompts = options.initialPrompts === undefined ? [] : canonical(options.initialPrompts, false);
    if (unsupportedTypes(o)) throw domError('NotSupportedError', 'image and audio inputs and outputs are not supported by this model');
    if (initialPrompts.some((m) => m.prefix)) throw domError('SyntaxError', 'initialPrompts cannot end with a prefix');
    const monitorTarget = new EventTarget();
    if (options.monitor !== undefined) {
      if (typeof options.monitor !== 'function') throw new TypeError('monitor must be a function');
      options.monitor(monitorTarget);
    }
    let last = -1;
    const progress = (f) => {
      if (signal?.aborted || f <= last) return;
      last = f;
      monitorTarget.dispatchEvent(progressEvent(f));
    };
    progress(0);
    const m = model(config.src, config.loadOptions, (f) => progress(Math.min(f, 0.99)));
    const aborted = new Promise((_, reject) => {
      signal?.addEventListener('abort', () => reject(signal.reason ?? domError('AbortError', 'aborted')), { once: true });
    });
    aborted.catch(() => {}); // a signal aborted after create() settled rejects nobody
    let lm;
    try {
      lm = await Promise.race([m.promise, aborted]);
    } catch (err) {
      throw translate(err);
    }
    const window = lm.info.sessionContextLength;
    const initial = initialPrompts.map(({ role, content }) => ({ role, content }));
    const state = { lm, window, initial, turns: [], options: o, tools };
    const count = counter(lm, tools, signal);
    let initialUsage;
    try {
      initialUsage = await Promise.race([count(initial), aborted]);
    } catch (err) {
      throw translate(err);
    }
    if (initialUsage > window) throw quotaError(initialUsage, window);
    checkSignal(signal);
    progress(1);
    const session = new LanguageModel(CREATE, { ...state, initialUsage, usage: initialUsage });
    signal?.addEventListener('abort', () => session.#destroy(signal.reason), { once: true });
    return session;
  }

  /** The tokens the conversation takes (initialPrompts included), as the model's chat template writes it. */
  get contextUsage() { return this.#usage; }
  /** The tokens the session holds at most. */
  get contextWindow() { return this.#window; }
  /** The contextoverflow event's handler. */
  get oncontextoverflow() { return this.#oncontextoverflow; }
  set oncontextoverflow(f) {
    if (this.#oncontextoverflow) this.removeEventListener('contextoverflow', this.#oncontextoverflow);
    this.#oncontextoverflow = typeof f === 'function' ? f : null;
    if (this.#oncontextoverflow) this.addEventListener('contextoverflow', this.#oncontextoverflow);
  }

  /** The model's reply to input, whole. */
  async prompt(input, options = {}) {
    let text = '';
    await this.#run(input, options, true, (chunk) => { text += chunk; });
    return text;
  }

  /** The model's reply to input, as a ReadableStream of its text's chunks. */
  promptStreaming(input, options = {}) {
    let controller;
    const cancelled = new AbortController(); // the reader cancelled the stream: stop generating
    const stream = new ReadableStream({ start(c) { controller = c; }, cancel(reason) { cancelled.abort(reason); } });
    const opts = {
      responseConstraint: options?.responseConstraint,
      omitResponseConstraintInput: options?.omitResponseConstraintInput,
      signal: anySignal([options?.signal, cancelled.signal]),
    };
    this.#run(input, opts, true, (chunk) => controller.enqueue(chunk)).then(
      () => controller.close(),
      (err) => controller.error(err),
    );
    return stream;
  }

  /** Adds input to the conversation without a reply. */
  async append(input, options = {}) {
    await this.#run(input, options, false, null);
  }

  /** The tokens input would add to the conversation. */
  async measureContextUsage(input, options = {}) {
    if (options?.omitResponseConstraintInput && options.responseConstraint == null) {
      throw new TypeError('omitResponseConstraintInput needs a responseConstraint');
    }
    this.#alive();
    const messages = canonical(input, false).map(({ role, content }) => ({ role, content }));
    const signal = anySignal([options?.signal, this.#destroyer.signal]);
    const count = counter(this.#lm, this.#tools, signal);
    try {
      const history = [...this.#initial, ...this.#turns.flat()];
      return (await count([...history, ...messages])) - (await count(history));
    } catch (err) {
      checkSignal(signal);
      throw translate(err);
    }
  }

  /** A new session with this one's options and conversation. */
  async clone(options = {}) {
    this.#alive();
    const signal = options?.signal;
    checkSignal(signal);
    await this.#queue.catch(() => {});
    checkSignal(signal);
    this.#alive();
    const copy = new LanguageModel(CREATE, {
      lm: this.#lm, window: this.#window, initial: this.#initial, initialUsage: this.#initialUsage,
      turns: this.#turns.map((t) => [...t]), usage: this.#usage, options: this.#options, tools: this.#tools,
    });
    return copy;
  }

  /** Ends the session: its calls in flight and every later one reject with InvalidStateError. */
  destroy() {
    this.#destroy(domError('InvalidStateError', 'The model execution session has been destroyed.'));
  }

  #destroy(reason) {
    if (this.#destroyed) return;
    this.#destroyed = reason ?? domError('AbortError', 'aborted');
    this.#destroyer.abort(this.#destroyed);
  }

  #alive() {
    if (this.#destroyed) throw domError('InvalidStateError', 'The model execution session has been destroyed.');
  }

  /** Runs one prompt (reply: true) or append after the session's earlier calls. */
  #run(input, options, reply, onChunk) {
    const run = async () => {
      this.#alive();
      const opts = options ?? {};
      const signal = anySignal([opts.signal, this.#destroyer.signal]);
      checkSignal(signal);
      if (opts.omitResponseConstraintInput && opts.responseConstraint == null) {
        throw new TypeError('omitResponseConstraintInput needs a responseConstraint');
      }
      const hasAppended = this.#initial.length > 0 || this.#turns.length > 0;
      const messages = canonical(input, hasAppended);
      const c = reply ? constraint(opts.responseConstraint) : {};
      if (reply && this.#tools.length && opts.responseConstraint != null) {
        throw domError('NotSupportedError', 'a session with tools takes no responseConstraint: its reply may be a tool call');
      }
      if (reply && this.#tools.length && messages.at(-1).prefix) {
        throw domError('NotSupportedError', 'a session with tools takes no prefix: its reply may be a tool call');
      }
      let prefix = null;
      if (reply && messages.at(-1).prefix) {
        prefix = messages.pop().content;
        prefixed(c, prefix, opts.responseConstraint);
      }
      const turn = messages.map(({ role, content }) => ({ role, content }));
      try {
        const count = counter(this.#lm, this.#tools, signal);
        // A reply needs a token of room, and the markup that closes it
        // (and its prefix).
        const room = reply ? 1 + (await count([...turn, { role: 'assistant', content: prefix ?? '' }])) - (await count(turn)) : 0;
        // contextoverflow fires once per call, whatever evicted or cut.
        let fired = await this.#fit(turn, signal, room);
        if (!reply) {
          this.#turns.push(turn);
          this.#usage = await count([...this.#initial, ...this.#turns.flat()]);
          return;
        }
        // A reply the window's end cuts goes on after the oldest pair is
        // evicted (its text so far the next request's reply start), as a
        // prompt evicts for its input, until it ends or nothing is left to
        // evict; a session with tools does not continue a reply.
        const turns = [...this.#turns];
        let answer = await this.#generate([...this.#initial, ...turns.flat(), ...turn], c, prefix, signal, onChunk);
        let text = answer.text;
        let evicted = false;
        while (answer.finish === 'length' && turns.length > 0 && !this.#tools.length) {
          turns.shift();
          evicted = true;
          const sofar = (prefix ?? '') + text;
          const going = { response_format: c.response_format, prefixGrammar: c.grammar, startsReply: true };
          answer = await this.#generate([...this.#initial, ...turns.flat(), ...turn], going, sofar, signal, onChunk);
          text += answer.text;
        }
        checkSignal(signal);
        const cut = answer.finish === 'length';
        if (c.test && !c.test((prefix ?? '') + text)) throw domError('SyntaxError', 'the reply does not satisfy the responseConstraint (the context window cut it)');
        this.#turns = [...turns, [...turn, ...answer.messages]];
        this.#usage = await count([...this.#initial, ...this.#turns.flat()]);
        // Evicting to go on is a context overflow; so is a reply the
        // window's end cut with nothing left to evict, that the page
        // can tell the reply is not whole.
        if ((evicted || cut) && !fired) {
          this.dispatchEvent(new Event('contextoverflow'));
          fired = true;
        }
        if (this.#usage > this.#window) await this.#fitReply(count, signal, fired);
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        throw translate(err);
      }
    };
    const p = this.#queue.then(run, run);
    this.#queue = p.catch(() => {});
    return p;
  }

  /**
   * Makes room for turn and room more tokens (the reply's first): evicts
   * the oldest prompt/response pairs (never the initialPrompts) until the
   * conversation and turn fit the window,
   * firing contextoverflow once; a QuotaExceededError, evicting nothing,
   * when turn does not fit beside the initialPrompts alone. Answers
   * whether it evicted (and fired the event).
   */
  async #fit(turn, signal, room) {
    const count = counter(this.#lm, this.#tools, signal);
    const all = (turns) => [...this.#initial, ...turns.flat(), ...turn];
    const limit = this.#window - room;
    if ((await count(all(this.#turns))) <= limit) return false;
    const alone = await count(all([]));
    if (alone > limit) throw quotaError(alone - this.#initialUsage + room, this.#window - this.#initialUsage);
    const turns = [...this.#turns];
    do turns.shift(); while (turns.length && (await count(all(turns))) > limit);
    checkSignal(signal);
    this.#turns = turns;
    this.dispatchEvent(new Event('contextoverflow'));
    return true;
  }

  /**
   * Keeps the conversation in the window after a reply whose text, written
   * back by the template, takes more tokens than were generated (the
   * tokenizer may split it otherwise): evicts the oldest pairs before it,
   * firing contextoverflow unless the call has (fired). The reply's own
   * pair is never evicted.
   */
  async #fitReply(count, signal, fired) {
    const turns = [...this.#turns];
    const all = () => count([...this.#initial, ...turns.flat()]);
    let usage = this.#usage;
    while (turns.length > 1 && usage > this.#window) {
      turns.shift();
      usage = await all();
    }
    checkSignal(signal);
    if (turns.length === this.#turns.length) return;
    this.#turns = turns;
    this.#usage = usage;
    if (!fired) this.dispatchEvent(new Event('contextoverflow'));
  }

  /**
   * The reply to messages, calling the tools the model asks for until it
   * answers: {text, messages}. Each round's max_tokens is the room the
   * window has left for the reply and the markup that closes it, so that
   * the conversation with the reply stays within the window.
   */
  async #generate(messages, c, prefix, signal, onChunk) {
    const o = this.#options;
    const sampling = {};
    sampling.temperature = o.temperature ?? PARAMS.defaultTemperature;
    sampling.top_k = o.topK ?? PARAMS.defaultTopK;
    const tools = this.#tools.length ? { tools: this.#tools.map(({ name, description, parameters }) => ({ type: 'function', function: { name, description, parameters } })) } : {};
    let grammar = prefix === null ? c.grammar : c.prefixGrammar;
    const added = [];
    const count = counter(this.#lm, this.#tools, signal);
    for (let round = 0; round < MAX_TOOL_ROUNDS; round++) {
      // The prefix is the reply's, generated (under the grammar) or given.
      const room = this.#window - (await count([...messages, ...added, { role: 'assistant', content: prefix ?? '' }]));
      const start = prefix !== null && c.startsReply ? [{ role: 'assistant', content: prefix, prefix: true }] : [];
      const body = {
        messages: [...messages, ...added, ...start], stream: true, ...sampling, ...tools, max_tokens: Math.max(1, room),
        ...(grammar ? { grammar } : {}), ...(c.response_format ? { response_format: c.response_format } : {}),
      };
      const stream = await this.#lm.chat.completions.create(body, { signal });
      let text = '';
      let skip = prefix === null ? 0 : prefix.length;
      const calls = [];
      let finish = null;
      for await (const chunk of stream) {
        finish = chunk.choices[0]?.finish_reason ?? finish;
        const d = chunk.choices[0]?.delta;
        if (!d) continue;
        if (typeof d.content === 'string' && d.content !== '') {
          let piece = d.content;
          if (skip > 0) {
            const cut = Math.min(skip, piece.length);
            piece = piece.slice(cut);
            skip -= cut;
          }
          text += piece;
          if (piece) onChunk?.(piece);
        }
        for (const tc of d.tool_calls ?? []) {
          const call = (calls[tc.index ?? calls.length] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
          if (tc.id) call.id = tc.id;
          if (tc.function?.name) call.function.name += tc.function.name;
          if (tc.function?.arguments) call.function.arguments += tc.function.arguments;
        }
      }
      checkSignal(signal);
      const reply = { role: 'assistant', content: prefix === null ? text : prefix + text };
      if (!calls.length) return { text, messages: [...added, reply], finish };
      added.push({ ...reply, content: text || null, tool_calls: calls });
      const results = await Promise.all(calls.map(async (call) => {
        const tool = this.#tools.find((t) => t.name === call.function.name);
        if (!tool) throw domError('OperationError', `the model called an unknown tool ${call.function.name}`);
        let args;
        try {
          args = JSON.parse(call.function.arguments || '{}');
        } catch {
          throw domError('OperationError', `the model's arguments for ${call.function.name} are not JSON`);
        }
        return String(await tool.execute(args));
      }));
      checkSignal(signal);
      calls.forEach((call, i) => added.push({ role: 'tool', tool_call_id: call.id, content: results[i] }));
      prefix = null;
      grammar = c.grammar;
    }
    throw domError('OperationError', `the model called tools ${MAX_TOOL_ROUNDS} times without answering`);
  }
}

const CREATE = Symbol('LanguageModel.create');

/**
 * count(messages): the tokens messages take as the model's chat template
 * writes them (with the tools' declaration and the reply's opening:
 * lm.chat.countTokens), signal stopping the wait for it. No messages take
 * none, or, with tools, their declaration alone: what the declaration adds
 * to an empty user message. So a session's fixed prefix (count of its
 * initialPrompts) holds the declaration whether or not it has
 * initialPrompts, and count(history + input) - count(history) is the input
 * alone.
 */
function counter(lm, tools, signal) {
  const toolList = tools.length ? { tools: tools.map(({ name, description, parameters }) => ({ type: 'function', function: { name, description, parameters } })) } : {};
  return async (messages) => {
    checkSignal(signal);
    if (messages.length === 0 && !tools.length) return 0;
    let n;
    if (messages.length === 0) {
      let declared = declarations.get(tools);
      if (declared === undefined) {
        const probe = [{ role: 'user', content: '' }];
        declared = lm.chat.countTokens({ messages: probe, ...toolList }).then(async (all) => all - (await lm.chat.countTokens({ messages: probe })));
        declarations.set(tools, declared);
        declared.catch(() => declarations.delete(tools));
      }
      n = await declared;
    } else {
      n = await lm.chat.countTokens({ messages, ...toolList });
    }
    checkSignal(signal);
    return n;
  };
}

/** The tokens each session's tools (its checked tools array) declare, once counted. */
const declarations = new WeakMap();

/**
 * installPolyfill(src?, loadOptions?): makes LanguageModel (this module's)
 * globalThis.LanguageModel where there is none or the browser's own
 * answers 'unavailable', its sessions loading src (default: the default
 * model) with loadOptions (WasmLM.load's) on first use — or using src
 * itself when it is a loaded WasmLM. Resolves to the class in use.
 */
export async function installPolyfill(src, loadOptions = {}) {
  config.src = src;
  config.loadOptions = loadOptions ?? {};
  const own = globalThis.LanguageModel;
  if (own && own !== LanguageModel) {
    let availability = 'unavailable';
    try {
      availability = await own.availability();
    } catch { /* a browser's class that fails is as good as none */ }
    if (availability !== 'unavailable') return own;
  }
  Object.defineProperty(globalThis, 'LanguageModel', { value: LanguageModel, writable: true, configurable: true, enumerable: false });
  return LanguageModel;
}

export default LanguageModel;
