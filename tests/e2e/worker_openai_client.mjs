// Drives the official openai npm client (the version pinned in
// package-lock.json) against an OpenAI-compatible server and prints what it
// got as one JSON object, for worker_test.go to check.
//
//   node tests/e2e/worker_openai_client.mjs BASE_URL PROMPT MAX_TOKENS
//
// BASE_URL ends in /v1. Requests are greedy (temperature 0) so their text
// can be compared with the same requests made natively.
import OpenAI from "openai";
import { attempt, readChatStream } from "./openai_client.mjs";

const [baseURL, prompt, maxTokensArg] = process.argv.slice(2);
const max_tokens = Number(maxTokensArg);
const model = "any-model-name";
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 60_000 });
const messages = [{ role: "user", content: prompt }];

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

out.chat_stream = await readChatStream(
  await client.chat.completions.create({ model, messages, max_tokens, temperature: 0, stream: true, stream_options: { include_usage: true } }));

out.error = (await attempt(() => client.chat.completions.create({ model, messages, n: 2 }))).error ?? null;
out.stream_error = (await attempt(() => client.chat.completions.create({ model, messages, max_tokens: 100000, stream: true }))).error ?? null;

console.log(JSON.stringify(out));
