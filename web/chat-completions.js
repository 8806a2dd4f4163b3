// chat-completions.js: OpenAI's chat completions over a model, for
// wasmlm.js (lm.chat.completions.create). The request goes to the Go side
// as OpenAI's JSON, which Go's package openai reads exactly as the HTTP
// API's /v1/chat/completions does (its fields, OpenAI's defaults, its
// errors); the Go side answers in OpenAI's shapes (the message and
// finish_reason of a result, the deltas of a chunk), which this module
// wraps in a completion or its chunks. An ES module.

import { checkJSON, checkRequestOptions, describe, invalidCall } from './errors.js';

/**
 * lm.chat.completions.create(body, {signal}): a ChatCompletion, or with
 * stream: true a ChatCompletionStream. lm: {name, run(message, signal),
 * iterable(message, signal, map)}, the model's generations (wasmlm.js).
 */
export async function createChatCompletion(lm, body, requestOptions = {}) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidCall(`create() takes a request object {messages, ...}, got ${describe(body)}`);
  }
  checkRequestOptions(requestOptions);
  // signal is the page's, not the request's, and session names a saved
  // session to continue from (sessions.js); the rest is OpenAI's JSON.
  const { signal: bodySignal, session, ...request } = body;
  checkJSON(request, '');
  if (session !== undefined) await lm.restoreSession(session);
  const stream = request.stream === true;
  const streamOptions = request.stream_options;
  const signal = requestOptions?.signal ?? bodySignal;
  const base = {
    id: `chatcmpl-${randomID()}`,
    created: Math.floor(Date.now() / 1000),
    model: lm.name,
  };
  // usage reports context shifts as the HTTP API does: only when one
  // happened. timings (llama.cpp's, as the HTTP API's) go with the usage:
  // on the completion, and on the usage chunk of a stream.
  const usage = (r) => ({
    prompt_tokens: r.usage.promptTokens, completion_tokens: r.usage.completionTokens, total_tokens: r.usage.totalTokens,
    ...(r.usage.contextShifts > 0 ? { context_shifts: r.usage.contextShifts, context_shifted_tokens: r.usage.contextShiftedTokens } : {}),
  });
  // load's contextShift: the default of a request without context_shift, n_keep.
  const { contextShift, nKeep } = lm.shift ?? {};
  const message = { type: 'chat', request: JSON.stringify(request), contextShift, nKeep };
  if (!stream) {
    const r = await lm.run(message, signal);
    return {
      ...base, object: 'chat.completion',
      choices: [{ index: 0, message: r.choice.message, logprobs: r.choice.logprobs ?? null, finish_reason: r.choice.finish_reason }],
      usage: usage(r), timings: r.completionTimings, seed: r.seed,
    };
  }
  const controller = new AbortController();
  signal?.addEventListener('abort', () => controller.abort(), { once: true });
  if (signal?.aborted) controller.abort();
  const chunk = (delta, finish) => ({
    ...base, object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  // The reasoning and the content a token completes, in that order, each
  // in its own chunk as llama.cpp's server sends them; the tool calls
  // come with the last chunk of the Go side, once the reply is whole.
  // The Go side's first chunk, with no text, says the request is valid: as
  // a client of the HTTP API gets its status before the events, create()
  // resolves then, or rejects with the request's error.
  // With logprobs, each Go chunk carries its token's, which go with the
  // next chunk that has a delta (a token's text may be held back).
  let pending = [];
  const withLogprobs = (out) => {
    if (out.length > 0 && pending.length > 0) {
      out[0].choices[0].logprobs = { content: pending, refusal: null };
      pending = [];
    }
    return out;
  };
  let accept;
  const accepted = new Promise((resolve) => { accept = resolve; });
  const tokens = lm.iterable(message, controller.signal, (c) => {
    accept();
    if (c.logprobs) pending.push(...c.logprobs);
    return withLogprobs((c.deltas ?? []).map((d) => chunk(d, null)));
  });
  const result = tokens.result;
  await Promise.race([accepted, result]);
  async function* chunks() {
    yield chunk({ role: 'assistant', content: '' }, null);
    yield* tokens;
    const r = await result;
    yield withLogprobs([chunk({}, r.choice.finish_reason)])[0];
    if (streamOptions?.include_usage) yield { ...base, object: 'chat.completion.chunk', choices: [], usage: usage(r), timings: r.completionTimings };
  }
  const it = chunks();
  return { [Symbol.asyncIterator]: () => it, next: () => it.next(), return: (v) => it.return(v), controller, result };
}

/**
 * lm.chat.countTokens(body): how many tokens the prompt of the chat request
 * body ({messages, tools, ...}) takes as the model's chat template writes
 * it, ending with the reply's opening; counted even when it does not fit
 * the context, without generating. lm: as createChatCompletion's, with
 * call(method, args), a call of the Go binding.
 */
export async function countChatTokens(lm, body) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidCall(`countTokens() takes a request object {messages, ...}, got ${describe(body)}`);
  }
  checkJSON(body, '');
  return lm.call('chatTokens', [JSON.stringify(body)]);
}

/** 24 random hex digits: a completion's id. */
function randomID() {
  const b = crypto.getRandomValues(new Uint8Array(12));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

