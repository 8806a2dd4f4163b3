// promptapi_session.test.mjs: web/prompt-api.js's session logic in Node.js
// (node --test; TestBrowserPromptAPISessionsInNode runs it) over a scripted model
// given to installPolyfill: the tool loop (execute called with the model's
// arguments, results fed back until the model answers, concurrent calls,
// a model that never answers) and the eviction rule, with token counts this
// test chooses, so each expected value follows from the rule.
import test from 'node:test';
import assert from 'node:assert/strict';
import { LanguageModel, installPolyfill } from '../../web/prompt-api.js';

/**
 * A model whose replies reply(messages) scripts: {content} or {calls:
 * [{name, arguments}]}; a message counts 10 tokens, plus 1 for the
 * reply's opening. requests records every chat request.
 */
function scripted(reply, contextLength = 100) {
  const requests = [];
  return {
    requests,
    info: { sessionContextLength: contextLength },
    chat: {
      countTokens: async ({ messages }) => messages.length * 10 + 1,
      completions: {
        create: async (body) => {
          requests.push(structuredClone(body));
          const r = reply(body.messages);
          const chunks = [{ choices: [{ delta: { role: 'assistant', content: '' } }] }];
          for (const piece of (r.content ?? '').match(/.{1,3}/gs) ?? []) chunks.push({ choices: [{ delta: { content: piece } }] });
          if (r.calls) {
            chunks.push({ choices: [{ delta: { tool_calls: r.calls.map((c, index) => ({ index, id: `call_${index}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } })) } }] });
          }
          return (async function* () { yield* chunks; })();
        },
      },
    },
  };
}

const add = (seen) => ({
  name: 'add', description: 'Adds two numbers.',
  inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  execute: async (args) => { seen.push(args); return String(args.a + args.b); },
});

test('tools: execute gets the arguments, its result goes back, the model answers', async () => {
  const lm = scripted((messages) => {
    const last = messages.at(-1);
    if (last.role === 'user') return { calls: [{ name: 'add', arguments: { a: 2, b: 3 } }, { name: 'add', arguments: { a: 1, b: 1 } }] };
    return { content: `The sums are ${messages.filter((m) => m.role === 'tool').map((m) => m.content).join(' and ')}.` };
  });
  await installPolyfill(lm);
  const seen = [];
  const session = await LanguageModel.create({ tools: [add(seen)] });
  assert.equal(await session.prompt('Add them'), 'The sums are 5 and 2.');
  assert.deepEqual(seen, [{ a: 2, b: 3 }, { a: 1, b: 1 }]);
  assert.equal(lm.requests.length, 2);
  assert.equal(lm.requests[0].tools[0].function.name, 'add');
  const second = lm.requests[1].messages;
  assert.deepEqual(second.slice(-3).map((m) => [m.role, m.tool_call_id ?? null]), [['assistant', null], ['tool', 'call_0'], ['tool', 'call_1']]);
  assert.equal(second.at(-3).tool_calls.length, 2);
  // The calls and results stay in the conversation: the next prompt sends them.
  await session.prompt('Again');
  assert.deepEqual(lm.requests[2].messages.map((m) => m.role), ['user', 'assistant', 'tool', 'tool', 'assistant', 'user']);
});

test('tools: a model that never answers fails with OperationError', async () => {
  const lm = scripted(() => ({ calls: [{ name: 'add', arguments: { a: 1, b: 2 } }] }));
  await installPolyfill(lm);
  const session = await LanguageModel.create({ tools: [add([])] });
  await assert.rejects(session.prompt('Add'), (e) => e.name === 'OperationError');
  assert.equal(session.contextUsage, 0, 'a failed prompt leaves the conversation');
});

test('tools: an execute that throws rejects the prompt with its error', async () => {
  const lm = scripted(() => ({ calls: [{ name: 'add', arguments: {} }] }));
  await installPolyfill(lm);
  const boom = new Error('boom');
  const session = await LanguageModel.create({ tools: [{ ...add([]), execute: async () => { throw boom; } }] });
  await assert.rejects(session.prompt('Add'), (e) => e.name === 'OperationError' && e.message.includes('boom'));
});

test('eviction: the oldest pairs go, initialPrompts stay, contextoverflow fires once per prompt', async () => {
  // 10 tokens a message, 1 for the opening, a window of 100: the system
  // prompt and four one-message appends fit (51); a prompt of one message
  // and its reply make 2 more, and it needs room for its reply (10, the
  // template's around an empty reply) and a token.
  const lm = scripted(() => ({ content: 'ok' }), 100);
  await installPolyfill(lm);
  const session = await LanguageModel.create({ initialPrompts: [{ role: 'system', content: 'S' }] });
  assert.equal(session.contextUsage, 11);
  let overflows = 0;
  session.oncontextoverflow = () => overflows++;
  for (const text of ['a', 'b', 'c', 'd']) await session.append(text);
  assert.equal(session.contextUsage, 51);
  for (const text of ['p', 'q', 'r']) await session.prompt(text); // 71, 91, then 101 + 11 > 100
  assert.equal(overflows, 1);
  // r's request (1 + 4 + 2·2 + 1 = 10 messages) with room for its reply
  // did not fit, nor did it without 'a': 'a' and 'b' went.
  assert.deepEqual(lm.requests.at(-1).messages.map((m) => m.content), ['S', 'c', 'd', 'p', 'ok', 'q', 'ok', 'r']);
  assert.equal(lm.requests.at(-1).max_tokens, 100 - (9 * 10 + 1), 'the room the reply has in the window');
  assert.equal(session.contextUsage, 9 * 10 + 1);
  // A prompt as long as the window beside the system prompt alone is refused, evicting nothing.
  const huge = Array.from({ length: 9 }, () => ({ role: 'user', content: 'x' }));
  await assert.rejects(session.append(huge), (e) => e.name === 'QuotaExceededError' && e.requested === 90 && e.quota === 89);
  assert.equal(session.contextUsage, 91);
  assert.equal(await session.measureContextUsage('one more'), 10);
});

test('eviction: a prompt leaves room for its reply', async () => {
  // A window of 41: S, a and b take 31; with c, 41, a full window that
  // leaves the reply (10, and a token) no room, so a and b go. An append
  // of the same size fits.
  const lm = scripted(() => ({ content: 'ok' }), 41);
  await installPolyfill(lm);
  const prompted = await LanguageModel.create({ initialPrompts: [{ role: 'system', content: 'S' }] });
  const appended = await prompted.clone();
  for (const s of [prompted, appended]) {
    await s.append('a');
    await s.append('b');
  }
  let overflows = 0;
  prompted.addEventListener('contextoverflow', () => overflows++);
  appended.addEventListener('contextoverflow', () => overflows += 10);
  await prompted.prompt('c');
  assert.deepEqual(lm.requests.at(-1).messages.map((m) => m.content), ['S', 'c']);
  assert.equal(prompted.contextUsage, 31);
  await appended.append('c');
  assert.equal(appended.contextUsage, 41);
  assert.equal(overflows, 1);
});

test('temperature and topK: checked as Chrome checks them', async () => {
  const lm = scripted(() => ({ content: 'ok' }));
  await installPolyfill(lm);
  const notSupported = (e) => e.name === 'NotSupportedError' && /both topK and temperature/.test(e.message);
  const range = (what) => (e) => e instanceof RangeError && e.message === `The ${what} value provided is invalid.`;
  const cases = [
    ['temperature alone', { temperature: 0.5 }, notSupported],
    ['topK alone', { topK: 3 }, notSupported],
    ['temperature below 0', { temperature: -0.1, topK: 3 }, range('temperature')],
    ['topK below 1', { temperature: 1, topK: 0 }, range('topK')],
    ['topK not a number', { temperature: 1, topK: NaN }, range('topK')],
    ['temperature not a number', { temperature: 'warm', topK: 3 }, range('temperature')],
  ];
  for (const [name, options, refused] of cases) {
    await assert.rejects(LanguageModel.create(options), refused, name);
    assert.equal(await LanguageModel.availability(options), 'unavailable', name);
  }
  // Above the maximum (Infinity too): params()'s maximum, as Chrome clamps.
  const { maxTopK, maxTemperature } = await LanguageModel.params();
  for (const [options, want] of [
    [{ temperature: Infinity, topK: Infinity }, [maxTemperature, maxTopK]],
    [{ temperature: 9, topK: 1000 }, [maxTemperature, maxTopK]],
    [{ temperature: 0, topK: 1 }, [0, 1]],
  ]) {
    assert.equal(await LanguageModel.availability(options), 'available');
    await (await LanguageModel.create(options)).prompt('x');
    assert.deepEqual([lm.requests.at(-1).temperature, lm.requests.at(-1).top_k], want, JSON.stringify(options));
  }
});
