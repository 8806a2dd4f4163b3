// chat-completions.js: OpenAI-shaped chat completions over a model's
// generations, for wasmlm.js (lm.chat.completions.create). It turns an
// OpenAI request into the Go side's chat options and its results and
// chunks into OpenAI's shapes; the worker does the rest. An ES module.

import { argumentError, describe, invalidCall } from './errors.js';

const FINISH_TO_OPENAI = { stop: 'stop', length: 'length', context: 'length', abort: 'abort' };
const OPENAI_PARAMS = {
  max_tokens: 'maxTokens', max_completion_tokens: 'maxTokens', temperature: 'temperature',
  top_p: 'topP', top_k: 'topK', min_p: 'minP', repeat_penalty: 'repeatPenalty',
  presence_penalty: 'presencePenalty', frequency_penalty: 'frequencyPenalty', seed: 'seed', stop: 'stop',
  enable_thinking: 'enableThinking', response_format: 'responseFormat', grammar: 'grammar',
  tools: 'tools', tool_choice: 'toolChoice', parallel_tool_calls: 'parallelToolCalls',
};

/**
 * A chat result's OpenAI message: the reply's content, and its reasoning
 * ("<think>...</think>", which the engine splits off) as reasoning_content
 * when there is any, as llama.cpp's server returns it.
 */
function assistantMessage(r) {
  const calls = r.toolCalls ?? [];
  const m = { role: 'assistant', content: calls.length > 0 && r.content === '' ? null : r.content };
  if (r.reasoning) m.reasoning_content = r.reasoning;
  if (calls.length > 0) m.tool_calls = calls.map(openAIToolCall);
  return m;
}

/** A tool call of the Go side ({id, name, arguments}) in OpenAI's shape. */
function openAIToolCall(c) {
  return { id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } };
}

/** A chat's OpenAI finish_reason: 'tool_calls' when the reply made calls, as the HTTP API says it. */
function chatFinishReason(r) {
  if (r.toolCalls?.length > 0) return 'tool_calls';
  return FINISH_TO_OPENAI[r.finishReason];
}

/**
 * The streamed deltas of a reply's tool calls, as OpenAI sends them: per
 * call, one with its index, id, type and name (arguments ''), then one
 * with its arguments.
 */
function toolCallDeltas(calls) {
  return calls.flatMap((c, index) => [
    { tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] },
    { tool_calls: [{ index, function: { arguments: c.arguments } }] },
  ]);
}

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
      choices: [{ index: 0, message: assistantMessage(r), logprobs: null, finish_reason: chatFinishReason(r) }],
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
  const tokens = lm.iterable(request, controller.signal, (c) => [
    ...(c.reasoning ? [chunk({ reasoning_content: c.reasoning }, null)] : []),
    ...(c.content ? [chunk({ content: c.content }, null)] : []),
    ...toolCallDeltas(c.toolCalls ?? []).map((d) => chunk(d, null)),
  ]);
  const result = tokens.result;
  async function* chunks() {
    yield chunk({ role: 'assistant', content: '' }, null);
    yield* tokens;
    const r = await result;
    yield chunk({}, chatFinishReason(r));
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

