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
