// Drives the official openai npm client (the version pinned in
// package-lock.json) against an OpenAI-compatible server and prints what it
// got as one JSON object, for worker_test.go to check.
//
//   node tests/e2e/worker_openai_client.mjs BASE_URL PROMPT MAX_TOKENS
//
// BASE_URL ends in /v1. Requests are greedy (temperature 0) so their text
// can be compared with the same requests made natively.
import OpenAI from "openai";

const [baseURL, prompt, maxTokensArg] = process.argv.slice(2);
const max_tokens = Number(maxTokensArg);
const model = "any-model-name";
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 60_000 });
const messages = [{ role: "user", content: prompt }];

// errorOf keeps what the client made of an error response.
function errorOf(e) {
  return { name: e.constructor.name, status: e.status ?? null, type: e.type ?? null, param: e.param ?? null, code: e.code ?? null, message: e.message };
}

const out = {};

out.models = (await client.models.list()).data.map((m) => m.id);

const c = await client.completions.create({ model, prompt, max_tokens, temperature: 0 });
out.completion = { model: c.model, text: c.choices[0].text, finish_reason: c.choices[0].finish_reason, usage: c.usage };

let text = "", chunks = 0, finish = null;
for await (const chunk of await client.completions.create({ model, prompt, max_tokens, temperature: 0, stream: true })) {
  chunks++;
  text += chunk.choices[0]?.text ?? "";
  finish = chunk.choices[0]?.finish_reason ?? finish;
}
out.completion_stream = { text, chunks, finish_reason: finish };

const cc = await client.chat.completions.create({ model, messages, max_tokens, temperature: 0 });
out.chat = { model: cc.model, role: cc.choices[0].message.role, text: cc.choices[0].message.content, finish_reason: cc.choices[0].finish_reason, usage: cc.usage };

text = ""; chunks = 0; finish = null;
let role = null, usage = null;
const stream = await client.chat.completions.create({ model, messages, max_tokens, temperature: 0, stream: true, stream_options: { include_usage: true } });
for await (const chunk of stream) {
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

try {
  await client.chat.completions.create({ model, messages, n: 2 });
  out.error = null;
} catch (e) {
  out.error = errorOf(e);
}
try {
  await client.chat.completions.create({ model, messages, max_tokens: 100000, stream: true });
  out.stream_error = null;
} catch (e) {
  out.stream_error = errorOf(e);
}

console.log(JSON.stringify(out));
