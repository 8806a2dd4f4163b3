// errors.js: the errors of wasmlm.js and its modules. No dependencies; an ES
// module.
//
// Every rejection is an Error with a code (web/README.md, "Errors"): the Go
// side's (policy.CodeOf's, such as invalid_argument and invalid_model, and
// the bridge's no_model and js_exception) and the page's own for what fails
// around the engine: fetch_failed, worker_failed, aborted. An invalid
// argument or option also has field and param, as the Go side sets them.

/** An Error (or TypeError, with type) with code and more properties. */
export function codedError(code, message, props, type = Error) {
  const err = new type(message, props?.cause === undefined ? undefined : { cause: props.cause });
  err.code = code;
  for (const [k, v] of Object.entries(props ?? {})) if (k !== 'cause') err[k] = v;
  return err;
}

/**
 * The error of an argument or option named field whose value is wrong
 * (problem: "must be a boolean, got 5"), as the Go side words it: code
 * invalid_argument, field (the JavaScript name), param (snake_case).
 */
export function argumentError(field, problem) {
  const param = field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return codedError('invalid_argument', `wasmlm: invalid argument: ${field} ${problem}`, { field, param, problem }, TypeError);
}

/** The error of a call that is wrong as a whole, not in one argument. */
export function invalidCall(problem, props) {
  return codedError('invalid_argument', `wasmlm: invalid argument: ${problem}`, props, TypeError);
}

/** The error of a load whose signal aborted: an AbortError, with the signal's reason as its cause. */
export function abortError(signal) {
  return codedError('aborted', 'wasmlm: the load was aborted', { name: 'AbortError', cause: signal.reason });
}

/** The error of a response with an HTTP error status. */
export function httpError(url, res) {
  return codedError('fetch_failed', `wasmlm: fetching ${url} failed: HTTP ${res.status} ${res.statusText}`.trim(), { status: res.status });
}

/**
 * err with a code: err itself when it has one, else an Error of code
 * "error" (policy.CodeOf's "anything else") with err as its cause. Every
 * path this module knows of gives its own code; this is the safety net.
 */
export function withCode(err) {
  if (err instanceof Error && typeof err.code === 'string' && err.code !== '') return err;
  return codedError('error', `wasmlm: ${err?.message ?? err}`, { cause: err });
}

/** Checks a signal option: undefined or an AbortSignal. */
export function checkSignal(signal) {
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw argumentError('signal', `must be an AbortSignal, got ${describe(signal)}`);
  }
}

/**
 * Checks the second argument of chat.completions.create, embeddings.create
 * and rerank: undefined, null or an object, whose signal the caller checks
 * (the OpenAI SDK's other request options, such as timeout, mean nothing
 * here and are ignored).
 */
export function checkRequestOptions(options) {
  if (options != null && (typeof options !== 'object' || Array.isArray(options))) {
    throw argumentError('options', `must be an object {signal}, got ${describe(options)}`);
  }
}

/**
 * Checks the arguments of a call before they are posted to the worker,
 * which cannot receive a function or a symbol (postMessage refuses them):
 * one anywhere in args ({prompt, options}: each argument by its name) is
 * an invalid_argument naming its path, as the Go side names fields — an
 * options object's fields by their own names ('stop[1]', not
 * 'options.stop[1]'). The fields in json ('responseFormat') are JSON the
 * Go side reads whole, checked as checkJSON does. A BigInt crosses: the
 * Go side says what the field must be instead ('maxTokens must be an
 * integer, got bigint 5'). A getter that throws is the caller's
 * js_exception.
 */
export function checkSendable(args, json = []) {
  try {
    for (const [name, v] of Object.entries(args)) {
      if (name !== 'options' || !isPlainObject(v)) {
        checkValue(v, name, false, new Set());
        continue;
      }
      for (const k of Object.keys(v)) checkValue(v[k], k, json.includes(k), new Set());
    }
  } catch (err) {
    if (err?.code === 'invalid_argument') throw err;
    throw codedError('js_exception', `wasmlm: JavaScript threw while the arguments were read: ${describeThrown(err)}`, { cause: err });
  }
}

/**
 * Checks that v, OpenAI's request (or a part of one) at path ('' for the
 * whole body), is JSON as JSON.stringify would write it without changing
 * its meaning: no function, symbol or BigInt, no NaN or Infinity (which it
 * writes as null), no cycle. An undefined field is left out, as an omitted
 * one.
 */
export function checkJSON(v, path) {
  checkValue(v, path, true, new Set());
}

/**
 * checkSendable's and checkJSON's walk of v, the argument at path: json
 * says whether v must be JSON or only something a worker can receive;
 * seen holds the objects above v.
 */
function checkValue(v, path, json, seen) {
  const field = path || 'body';
  switch (typeof v) {
    case 'function': case 'symbol':
      throw invalidPath(field, json ? `must be a JSON value, got ${describe(v)}` : `must be data a worker can receive, got ${describe(v)}`);
    case 'bigint':
      if (json) throw invalidPath(field, `must be a JSON value, got ${describe(v)}`);
      return;
    case 'number':
      if (json && !Number.isFinite(v)) throw invalidPath(field, `must be a finite number, got ${describe(v)}`);
      return;
    case 'object':
      if (v === null) return;
      if (json && typeof v.toJSON === 'function') return; // JSON.stringify writes what toJSON returns
      if (!json && !Array.isArray(v) && !isPlainObject(v)) return; // a typed array, a Blob, a Map: postMessage copies it whole
      if (seen.has(v)) {
        if (json) throw invalidPath(field, 'must be JSON, got an object that contains itself');
        return; // postMessage copies cycles
      }
      seen.add(v);
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          const e = v[i];
          if (typeof e === 'string' || (typeof e === 'number' && (!json || Number.isFinite(e)))) continue; // the common case, without a path
          checkValue(e, `${path}[${i}]`, json, seen);
        }
      } else {
        for (const k of Object.keys(v)) checkValue(v[k], path ? `${path}.${k}` : k, json, seen);
      }
      seen.delete(v);
  }
}

/** Whether v is an object literal's kind of object (or Object.create(null)'s). */
function isPlainObject(v) {
  if (v === null || typeof v !== 'object') return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * The error of a field named by its path ('stop[1]',
 * 'responseFormat.json_schema.schema.maxLength', 'messages[0].content'):
 * argumentError's, whose param is the path with its first name in
 * snake_case, as the Go side writes it ('response_format.json_schema…').
 */
function invalidPath(field, problem) {
  const [first] = field.split(/[.[]/, 1);
  const err = argumentError(first, problem);
  err.message = `wasmlm: invalid argument: ${field} ${problem}`;
  err.field = field;
  err.param += field.slice(first.length);
  return err;
}

/**
 * v for an error message, as the Go side describes values: numbers and
 * booleans as JavaScript prints them, strings quoted, objects by kind.
 */
export function describe(v) {
  switch (typeof v) {
    case 'undefined': return 'undefined';
    case 'number': return String(v);
    case 'boolean': return `boolean ${v}`;
    case 'string': return `string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
    case 'function': return 'a function';
    case 'symbol': return 'a symbol';
    case 'bigint': return `bigint ${v}`;
  }
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  const kind = Object.getPrototypeOf(v)?.constructor?.name;
  if (!kind || kind === 'Object') return 'an object';
  return `${/^[AEIOU]/.test(kind) ? 'an' : 'a'} ${kind}`;
}

/** A thrown value as String(value) prints it ("Error: message"). */
export function describeThrown(v) {
  try {
    return String(v);
  } catch {
    return 'an exception that cannot be printed';
  }
}
