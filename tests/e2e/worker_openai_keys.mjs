// Drives the official openai npm client (the version pinned in
// package-lock.json) against the edge worker configured with API keys, and
// prints what it got as one JSON object, for worker_limits_test.go to check.
//
//   node tests/e2e/worker_openai_keys.mjs BASE_URL KEY WRONG_KEY PROMPT MAX_TOKENS
//
// With KEY it streams a greedy chat completion; with WRONG_KEY, and with no
// key at all (the Authorization header omitted, as the client allows), it
// keeps the errors the client throws.
import OpenAI from "openai";

const [baseURL, key, wrongKey, prompt, maxTokensArg] = process.argv.slice(2);
const max_tokens = Number(maxTokensArg);
const request = { model: "any-model-name", messages: [{ role: "user", content: prompt }], max_tokens, temperature: 0 };
const options = { baseURL, maxRetries: 0, timeout: 60_000 };

function errorOf(e) {
  return { name: e.constructor.name, status: e.status ?? null, type: e.type ?? null, param: e.param ?? null, code: e.code ?? null, message: e.message };
}

async function errorWith(client) {
  try {
    await client.chat.completions.create(request);
    return null;
  } catch (e) {
    return errorOf(e);
  }
}

const out = {};

const client = new OpenAI({ ...options, apiKey: key });
let text = "", chunks = 0, role = null, finish = null, usage = null;
for await (const chunk of await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } })) {
  chunks++;
  const choice = chunk.choices[0];
  if (choice) {
    role = choice.delta.role ?? role;
    text += choice.delta.content ?? "";
    finish = choice.finish_reason ?? finish;
  }
  if (chunk.usage) usage = chunk.usage;
}
out.chat_stream = { role, text, chunks, finish_reason: finish, usage };

out.wrong_key = await errorWith(new OpenAI({ ...options, apiKey: wrongKey }));
// The client insists on credentials but lets a header be omitted: this one
// sends no key at all.
out.no_key = await errorWith(new OpenAI({ ...options, apiKey: "never-sent", defaultHeaders: { Authorization: null } }));

console.log(JSON.stringify(out));
