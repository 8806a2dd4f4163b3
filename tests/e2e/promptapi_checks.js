// promptapi_checks.js: the Prompt API's behaviours, as the specification's
// web-platform-tests (ai/language-model/) check them, run against
// web/prompt-api.js in a page or a Web Worker by browser_promptapi_test.go.
// checks(origin, src) resolves to {failures: [names], ...values}, src the
// model (undefined: the default); every check that fails adds its name and
// what it saw.
async function checks(origin, src) {
  const failures = [];
  const expect = (name, ok, seen) => { if (!ok) failures.push(`${name}: ${JSON.stringify(seen)}`); };
  const rejects = async (name, p, test) => {
    try {
      await p;
      failures.push(`${name}: resolved`);
    } catch (e) {
      if (!test(e)) failures.push(`${name}: ${e?.name}: ${e?.message}`);
    }
  };
  const { LanguageModel, installPolyfill } = await import(`${origin}/prompt-api.js`);
  const { WasmLM } = await import(`${origin}/wasmlm.js`);
  const { regexpToGBNF } = await import(`${origin}/prompt-api-regexp.js`);
  // A sentence: bounds the replies compared with chat completions (the
  // default model seldom ends a reply before the context is full).
  const sentence = /^[A-Za-z ,']{1,60}\.$/;
  const bounded = { responseConstraint: sentence };
  const out = { failures, hadOwn: typeof globalThis.LanguageModel };
  const loadOptions = { contextLength: 256 };
  const installed = await installPolyfill(src, loadOptions);
  expect('installPolyfill installs ours', installed === LanguageModel && globalThis.LanguageModel === LanguageModel, out.hadOwn);
  expect('availability before a load', (await LanguageModel.availability()) === 'downloadable', null);
  expect('availability of images', (await LanguageModel.availability({ expectedInputs: [{ type: 'image' }] })) === 'unavailable', null);

  // create: the monitor's downloadprogress, 0 first, 1 last, monotonic, total 1.
  const events = [];
  const greedy = { temperature: 0, topK: 1 };
  const s = await LanguageModel.create({ ...greedy, monitor(m) { m.addEventListener('downloadprogress', (e) => events.push([e.loaded, e.total])); } });
  const loaded = events.map((e) => e[0]);
  expect('downloadprogress', loaded[0] === 0 && loaded.at(-1) === 1 && events.every((e, i) => e[1] === 1 && (i === 0 || e[0] > events[i - 1][0])), events);
  expect('availability after a load', (await LanguageModel.availability()) === 'available', null);
  expect('session shape', ['prompt', 'promptStreaming', 'append', 'measureContextUsage', 'clone', 'destroy'].every((f) => typeof s[f] === 'function')
    && s.contextUsage === 0 && s.contextWindow === 256 && s.topK === undefined && s.temperature === undefined && s.oncontextoverflow === null, null);

  // Greedy replies equal chat completions' for the same messages.
  const lm = await WasmLM.load(src, loadOptions);
  out.template = lm.info.chatTemplate;
  const reference = async (messages) => (await lm.chat.completions.create({ messages, temperature: 0, top_k: 1, grammar: regexpToGBNF(sentence) })).choices[0].message.content;
  const r1 = await s.prompt('Once upon a time', bounded);
  const want1 = await reference([{ role: 'user', content: 'Once upon a time' }]);
  expect('prompt equals chat completions', r1 === want1 && r1.length > 0, [r1, want1]);
  expect('contextUsage after a prompt', s.contextUsage > 0 && s.contextUsage <= s.contextWindow, s.contextUsage);

  // Two sessions of one model keep their own conversations.
  const other = await LanguageModel.create({ ...greedy, initialPrompts: [{ role: 'system', content: 'Tom had a dog.' }] });
  const o1 = await other.prompt('The dog', bounded);
  const r2 = await s.prompt([{ role: 'user', content: 'The cat' }], bounded);
  const want2 = await reference([{ role: 'user', content: 'Once upon a time' }, { role: 'assistant', content: r1 }, { role: 'user', content: 'The cat' }]);
  const wantO = await reference([{ role: 'system', content: 'Tom had a dog.' }, { role: 'user', content: 'The dog' }]);
  expect('interleaved sessions', r2 === want2 && o1 === wantO, [r2, want2, o1, wantO]);

  // promptStreaming: the chunks of a clone's reply are the reply.
  const c = await s.clone();
  expect('clone copies usage', c.contextUsage === s.contextUsage && c.contextWindow === s.contextWindow, [c.contextUsage, s.contextUsage]);
  const chunks = [];
  for await (const chunk of c.promptStreaming('A bird', bounded)) chunks.push(chunk);
  const viaPrompt = await (await s.clone()).prompt('A bird', bounded);
  expect('promptStreaming', chunks.length > 1 && chunks.every((x) => typeof x === 'string') && chunks.join('') === viaPrompt, [chunks, viaPrompt]);
  expect('clone keeps its own usage', c.contextUsage > s.contextUsage, [c.contextUsage, s.contextUsage]);

  // append and measureContextUsage.
  const a = await LanguageModel.create(greedy);
  const m = await a.measureContextUsage('Lily went to the park.');
  expect('append resolves undefined', (await a.append('Lily went to the park.')) === undefined, null);
  expect('append adds what measureContextUsage said', m > 0 && a.contextUsage === m, [m, a.contextUsage]);
  for (const input of [null, undefined, {}, '', [], [{ role: 'user', content: [] }], [{ role: 'user', content: [{ type: 'text', value: '' }] }]]) await a.append(input);
  expect('measure after prompts', (await other.measureContextUsage([{ role: 'user', content: 'bar' }, { role: 'assistant', content: 'baz' }])) > 0, null);

  // The specification's errors.
  await rejects('system after user', s.prompt([{ role: 'user', content: 'a' }, { role: 'system', content: 'b' }]), (e) => e instanceof TypeError);
  await rejects('system in a later call', s.append([{ role: 'system', content: 'b' }]), (e) => e instanceof TypeError);
  await rejects('prefix not last', s.prompt([{ role: 'assistant', content: 'a', prefix: true }, { role: 'user', content: 'b' }]), (e) => e.name === 'SyntaxError');
  await rejects('prefix on a user message', s.prompt([{ role: 'user', content: 'a', prefix: true }]), (e) => e.name === 'SyntaxError');
  await rejects('image input', s.prompt([{ role: 'user', content: [{ type: 'image', value: new Uint8Array(4) }] }]), (e) => e.name === 'NotSupportedError');
  await rejects('image expected', LanguageModel.create({ expectedInputs: [{ type: 'image' }] }), (e) => e.name === 'NotSupportedError');
  await rejects('bad language tag', LanguageModel.create({ expectedInputs: [{ type: 'text', languages: ['not a tag!'] }] }), (e) => e instanceof RangeError);
  await rejects('omitResponseConstraintInput alone', s.prompt('x', { omitResponseConstraintInput: true }), (e) => e instanceof TypeError);
  await rejects('RegExp without an exact grammar', s.prompt('x', { responseConstraint: /(?=a)b/ }), (e) => e.name === 'NotSupportedError');
  await rejects('JSON Schema beyond the grammar', s.prompt('x', { responseConstraint: { type: 'object', properties: { a: { type: 'string', pattern: '(?=x)' } } } }),
    (e) => e.name === 'NotSupportedError' && e.message.includes('properties.a.pattern') && /lookaround/.test(e.message) && !/wasmlm|response_format|invalid argument/.test(e.message));
  await rejects('prefix that the constraint refuses', s.prompt([{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'invalid', prefix: true }], { responseConstraint: /^Greetings.*/ }), (e) => e.name === 'NotSupportedError');
  await rejects('prefix the JSON Schema refuses', s.prompt([{ role: 'user', content: 'hello' }, { role: 'assistant', content: '[', prefix: true }], { responseConstraint: { type: 'object' } }), (e) => e.name === 'NotSupportedError');
  const tool = { name: 't', description: 'd', inputSchema: { type: 'object', properties: {} }, execute: async () => '1' };
  await rejects('duplicate tools', LanguageModel.create({ tools: [tool, tool] }), (e) => e instanceof TypeError);
  await rejects('tool schema not an object', LanguageModel.create({ tools: [{ ...tool, inputSchema: { type: 'string' } }] }), (e) => e instanceof TypeError);
  await rejects('tool without a name', LanguageModel.create({ tools: [{ ...tool, name: '' }] }), (e) => e instanceof TypeError);

  // Aborts reject with the signal's reason.
  const reason = new Error('stop');
  await rejects('create aborted before', LanguageModel.create({ signal: AbortSignal.abort(reason) }), (e) => e === reason);
  await rejects('clone aborted before', s.clone({ signal: AbortSignal.abort(reason) }), (e) => e === reason);
  await rejects('prompt aborted before', s.prompt('x', { signal: AbortSignal.abort(reason) }), (e) => e === reason);
  const before = s.contextUsage;
  const ac = new AbortController();
  const stream = s.promptStreaming('Once', { signal: ac.signal });
  const reader = stream.getReader();
  await reader.read();
  ac.abort(reason);
  await rejects('promptStreaming aborted midway', (async () => { for (;;) { if ((await reader.read()).done) return; } })(), (e) => e === reason);
  expect('an aborted prompt leaves the conversation', s.contextUsage === before, [s.contextUsage, before]);
  const cancelled = s.promptStreaming('Once').getReader();
  await cancelled.read();
  await cancelled.cancel();
  const settled = await s.clone(); // after the calls before it
  expect('a cancelled stream leaves the conversation', settled.contextUsage === before && s.contextUsage === before, [s.contextUsage, before]);

  // Response constraints.
  const yn = await s.prompt('Is it?', { responseConstraint: /^(yes|no)$/ });
  expect('RegExp constraint', yn === 'yes' || yn === 'no', yn);
  const b = await s.prompt('Is it?', { responseConstraint: { type: 'boolean' }, omitResponseConstraintInput: true });
  expect('JSON Schema constraint', b === 'true' || b === 'false', b);
  const pre = await s.prompt([{ role: 'user', content: 'Tell me' }, { role: 'assistant', content: 'Once', prefix: true }]);
  expect('prefix', typeof pre === 'string', pre);
  const greet = await (await LanguageModel.create(greedy)).prompt([{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'Greetings', prefix: true }], { responseConstraint: /^Greetings and salutations[a-z ]{0,20}\.$/ });
  expect('prefix with a RegExp', /^ and salutations[a-z ]{0,20}\.$/.test(greet), greet);
  // With a JSON Schema the constraint holds the whole reply, the prefix and what follows it.
  const named = await (await LanguageModel.create(greedy)).prompt([{ role: 'user', content: 'Who?' }, { role: 'assistant', content: '{"name": "Li', prefix: true }],
    { responseConstraint: { type: 'object', properties: { name: { type: 'string', maxLength: 12 } }, required: ['name'], additionalProperties: false } });
  const parsed = (() => { try { return JSON.parse(`{"name": "Li${named}`); } catch { return null; } })();
  expect('prefix with a JSON Schema', typeof parsed?.name === 'string' && parsed.name.startsWith('Li') && Object.keys(parsed).length === 1, named);

  // A reply that runs to the end of the window: the conversation, written
  // back with the reply and the markup that closes it, stays within it;
  // the next prompt evicts the pair.
  // A reply the window cuts, with nothing to evict, fires contextoverflow.
  const filled = await LanguageModel.create(greedy);
  let cuts = 0;
  filled.addEventListener('contextoverflow', () => cuts++);
  await filled.prompt('Once upon a time');
  expect('contextUsage within the window after a reply that fills it', filled.contextUsage <= filled.contextWindow && filled.contextUsage > filled.contextWindow - 16, filled.contextUsage);
  expect('a reply the window cut fires contextoverflow', cuts === 1, cuts);
  // A reply that reaches the window's end with older pairs evicts them and
  // goes on: it is longer than the room it started with.
  const going = await LanguageModel.create(greedy);
  await going.append('the big red ball '.repeat(25));
  const room = going.contextWindow - going.contextUsage;
  let goingOverflows = 0;
  going.addEventListener('contextoverflow', () => goingOverflows++);
  const long = await going.prompt('Once upon a time');
  const longTokens = await (await LanguageModel.create(greedy)).measureContextUsage([{ role: 'assistant', content: long }]);
  expect('a reply goes on past the window after evicting', goingOverflows >= 1 && longTokens > room && going.contextUsage <= going.contextWindow, [goingOverflows, longTokens, room, going.contextUsage]);
  await filled.prompt('The end', bounded);
  expect('contextUsage within the window after the next prompt', filled.contextUsage <= filled.contextWindow, filled.contextUsage);

  // Past the context window: whole pairs go, initialPrompts stay.
  const init = [{ role: 'system', content: 'Tim and Sue.' }];
  const w = await LanguageModel.create({ ...greedy, initialPrompts: init });
  let overflows = 0;
  w.addEventListener('contextoverflow', () => overflows++);
  const part = 'the big red ball '.repeat(12);
  for (let i = 0; i < 4; i++) await w.append(`${i} ${part}`);
  expect('contextoverflow fired', overflows > 0 && w.contextUsage <= w.contextWindow, [overflows, w.contextUsage]);
  const fresh = await LanguageModel.create({ ...greedy, initialPrompts: init });
  const kept = Math.round((w.contextUsage - fresh.contextUsage) / (await fresh.measureContextUsage(`3 ${part}`)));
  for (let i = 4 - kept; i < 4; i++) await fresh.append(`${i} ${part}`);
  expect('eviction keeps initialPrompts and the newest inputs', kept >= 1 && fresh.contextUsage === w.contextUsage, [kept, fresh.contextUsage, w.contextUsage]);
  const huge = 'word '.repeat(400);
  const q = await LanguageModel.create(greedy);
  const need = await q.measureContextUsage(huge);
  await rejects('QuotaExceededError', q.append(huge), (e) => e.name === 'QuotaExceededError' && e.requested === need && e.quota === q.contextWindow);
  expect('a refused input evicts nothing', q.contextUsage === 0, q.contextUsage);
  // A prompt's requested also counts its reply's room: a token and the
  // markup that closes a reply.
  await rejects('QuotaExceededError of a prompt', q.prompt(huge), (e) => e.name === 'QuotaExceededError' && e.requested > need && e.quota === q.contextWindow);

  await rejects('initialPrompts past the window', LanguageModel.create({ initialPrompts: [{ role: 'system', content: huge }] }),
    (e) => e.name === 'QuotaExceededError' && e.requested > e.quota && e.quota === q.contextWindow);
  const params = await LanguageModel.params();
  expect('params', params.defaultTopK >= 1 && params.maxTopK >= params.defaultTopK && params.maxTemperature >= params.defaultTemperature, params);
  await rejects('negative temperature', LanguageModel.create({ temperature: -1, topK: 3 }), (e) => e instanceof RangeError);
  await rejects('topK below 1', LanguageModel.create({ topK: 0, temperature: 1 }), (e) => e instanceof RangeError);
  await rejects('temperature without topK', LanguageModel.create({ temperature: 1 }), (e) => e.name === 'NotSupportedError');

  // destroy: calls in flight and later ones reject with InvalidStateError.
  const d = await LanguageModel.create(greedy);
  const pending = d.prompt('Once upon a time');
  d.destroy();
  await rejects('prompt in flight at destroy', pending, (e) => e.name === 'InvalidStateError');
  await rejects('prompt after destroy', d.prompt('x'), (e) => e.name === 'InvalidStateError');
  expect('attributes after destroy', typeof d.contextUsage === 'number' && typeof d.contextWindow === 'number', null);
  lm.unload();

  // Tools on any chat template: its own tool format, or (the default model's
  // plain one) llama.cpp's generic one, as lm.chat.completions.create writes
  // them. The declaration is the session's fixed prefix, as initialPrompts
  // are: in contextUsage from create() on, outside what
  // measureContextUsage measures and what QuotaExceededError's quota
  // offers; declaration and initialPrompts past the window fail create().
  // A session and chat completions both run with tools (the model's whole
  // context: the declaration takes most of its 512 tokens).
  const full = await WasmLM.load(src);
  await installPolyfill(full);
  const toolSpec = [{ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.inputSchema } }];
  const hi = [{ role: 'user', content: 'Hi' }];
  const tooled = await LanguageModel.create({ ...greedy, tools: [tool] });
  const declared = tooled.contextUsage;
  const measured = await tooled.measureContextUsage('Hi');
  const counted = await full.chat.countTokens({ messages: hi, tools: toolSpec });
  expect('tools: the declaration counts from create()', declared > 0 && declared + measured === counted && counted > (await full.chat.countTokens({ messages: hi })), [declared, measured, counted]);
  const appended = await tooled.clone();
  await appended.append('Hi');
  expect('tools: append adds what measureContextUsage said', appended.contextUsage === counted, [appended.contextUsage, counted]);
  const withInitial = await LanguageModel.create({ ...greedy, tools: [tool], initialPrompts: [{ role: 'system', content: 'Be brief.' }] });
  const initialCounted = await full.chat.countTokens({ messages: [{ role: 'system', content: 'Be brief.' }], tools: toolSpec });
  const measuredAfter = await withInitial.measureContextUsage('Hi');
  const bothCounted = await full.chat.countTokens({ messages: [{ role: 'system', content: 'Be brief.' }, ...hi], tools: toolSpec });
  expect('tools: with initialPrompts, the same prefix', withInitial.contextUsage === initialCounted && initialCounted + measuredAfter === bothCounted, [withInitial.contextUsage, initialCounted, measuredAfter, bothCounted]);
  const big = 'word '.repeat(200);
  const bigNeed = await tooled.measureContextUsage(big);
  await rejects('tools: QuotaExceededError leaves out the declaration', tooled.append(big),
    (e) => e.name === 'QuotaExceededError' && e.requested === bigNeed && e.quota === tooled.contextWindow - declared && e.requested > e.quota);
  await rejects('tools: declaration and initialPrompts past the window', LanguageModel.create({ tools: [tool], initialPrompts: [{ role: 'system', content: big }] }),
    (e) => e.name === 'QuotaExceededError' && e.requested > e.quota && e.quota === tooled.contextWindow);
  await rejects('tools: no responseConstraint', tooled.prompt('Hi', { responseConstraint: { type: 'boolean' } }),
    (e) => e.name === 'NotSupportedError' && e.message.includes('responseConstraint') && !/tool_choice|response_format/.test(e.message));
  await rejects('tools: no prefix', tooled.prompt([{ role: 'user', content: 'Hi' }, { role: 'assistant', content: 'A', prefix: true }]),
    (e) => e.name === 'NotSupportedError' && e.message.includes('prefix') && !/tool_choice|grammar/.test(e.message));
  const viaSession = await tooled.prompt('Hi').then(() => 'ok', (e) => `${e.name}: ${e.message}`);
  const viaChat = await full.chat.completions.create({ messages: hi, tools: toolSpec, temperature: 0, max_tokens: 16 }).then(() => 'ok', (e) => `${e.code}: ${e.message}`);
  expect('tools: the session and chat completions both run them', viaSession === 'ok' && viaChat === 'ok', [counted, tooled.contextWindow, viaSession, viaChat]);
  // A prompt that evicts and whose reply the window then cuts fires
  // contextoverflow once, not for each.
  const talk = await LanguageModel.create({ ...greedy, tools: [tool] });
  let fires = 0;
  talk.addEventListener('contextoverflow', () => fires++);
  const perPrompt = [];
  for (let i = 0; i < 3; i++) {
    const before = fires;
    await talk.prompt(`Hi ${i}`);
    perPrompt.push(fires - before);
  }
  expect('tools: contextoverflow fires once a prompt', fires > 1 && perPrompt.every((n) => n <= 1), perPrompt);
  full.unload();

  // A model that cannot be fetched: NetworkError (after the checks above,
  // as installPolyfill's source is the module's).
  await installPolyfill(`${origin}/no-such-model.gguf`);
  await rejects('a model that cannot be fetched', LanguageModel.create(), (e) => e.name === 'NetworkError');
  return out;
}
