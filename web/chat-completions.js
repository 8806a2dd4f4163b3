// chat-completions.js: OpenAI-shaped chat completions over a model's
// generations, for wasmlm.js (lm.chat.completions.create). It turns an
// OpenAI request into the Go side's chat options; the Go side reads the
// reply in OpenAI's shapes (Go's package openai: the message and
// finish_reason of a result, the deltas of a chunk), which this module
// wraps in a completion or its chunks. An ES module.

import { argumentError, describe, invalidCall } from './errors.js';

const OPENAI_PARAMS = {
  max_tokens: 'maxTokens', max_completion_tokens: 'maxTokens', temperature: 'temperature',
  top_p: 'topP', top_k: 'topK', min_p: 'minP', repeat_penalty: 'repeatPenalty',
  presence_penalty: 'presencePenalty', frequency_penalty: 'frequencyPenalty', seed: 'seed', stop: 'stop',
  enable_thinking: 'enableThinking', response_format: 'responseFormat', grammar: 'grammar',
  tools: 'tools', tool_choice: 'toolChoice', parallel_tool_calls: 'parallelToolCalls',
};

/**
 * lm.chat.completions.create(body, {signal}): a ChatCompletion, or with
 * stream: true a ChatCompletionStream. lm: {name, run(message, signal),
 * iterable(message, signal, map)}, the model's generations (wasmlm.js).
 */
export async function createChatCompletion(lm, body, requestOptions = {}) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidCall(`create() takes a request object {messages, ...}, got ${describe(body)}`);
  }
  const { messages, stream = false, stream_options: streamOptions, n, signal: bodySignal } = body;
  if (n != null && n !== 1) throw argumentError('n', `must be 1 (one choice per request), got ${describe(n)}`);
  const options = {};
  for (const [key, name] of Object.entries(OPENAI_PARAMS)) {
    if (body[key] != null) options[name] = body[key];
  }
  // llama.cpp's form of enable_thinking: chat_template_kwargs.enable_thinking.
  const kwargs = body.chat_template_kwargs;
  if (kwargs != null) {
    if (typeof kwargs !== 'object' || Array.isArray(kwargs)) {
      throw argumentError('chat_template_kwargs', `must be an object, got ${describe(kwargs)}`);
    }
    const enable = kwargs.enable_thinking;
    if (enable != null) {
      if (typeof enable !== 'boolean') {
        throw argumentError('chat_template_kwargs.enable_thinking', `must be a boolean, got ${describe(enable)}`);
      }
      if (options.enableThinking != null && options.enableThinking !== enable) {
        throw argumentError('enable_thinking', `is ${options.enableThinking} but chat_template_kwargs.enable_thinking is ${enable}: give one, or the same value`);
      }
      options.enableThinking = enable;
    }
  }
  const signal = requestOptions?.signal ?? bodySignal;
  const base = {
    id: `chatcmpl-${randomID()}`,
    created: Math.floor(Date.now() / 1000),
    model: lm.name,
  };
  const usage = (r) => ({
    prompt_tokens: r.usage.promptTokens, completion_tokens: r.usage.completionTokens, total_tokens: r.usage.totalTokens,
  });
  const request = { type: 'chat', messages, options, openai: true };
  if (!stream) {
    const r = await lm.run(request, signal);
    return {
      ...base, object: 'chat.completion',
      choices: [{ index: 0, message: r.choice.message, logprobs: null, finish_reason: r.choice.finish_reason }],
      usage: usage(r), seed: r.seed,
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
  const tokens = lm.iterable(request, controller.signal, (c) => (c.deltas ?? []).map((d) => chunk(d, null)));
  const result = tokens.result;
  async function* chunks() {
    yield chunk({ role: 'assistant', content: '' }, null);
    yield* tokens;
    const r = await result;
    yield chunk({}, r.choice.finish_reason);
    if (streamOptions?.include_usage) yield { ...base, object: 'chat.completion.chunk', choices: [], usage: usage(r) };
  }
  const it = chunks();
  return { [Symbol.asyncIterator]: () => it, next: () => it.next(), return: (v) => it.return(v), controller, result };
}

/** 24 random hex digits: a completion's id. */
function randomID() {
  const b = crypto.getRandomValues(new Uint8Array(12));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

