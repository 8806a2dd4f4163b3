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
import { attempt, readChatStream } from "./openai_client.mjs";

const [baseURL, key, wrongKey, prompt, maxTokensArg] = process.argv.slice(2);
const max_tokens = Number(maxTokensArg);
const request = { model: "any-model-name", messages: [{ role: "user", content: prompt }], max_tokens, temperature: 0 };
const options = { baseURL, maxRetries: 0, timeout: 60_000 };

// errorWith is the error client's chat request ends in, null if none.
async function errorWith(client) {
  return (await attempt(() => client.chat.completions.create(request))).error ?? null;
}

const out = {};

const client = new OpenAI({ ...options, apiKey: key });
out.chat_stream = await readChatStream(await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } }));

out.wrong_key = await errorWith(new OpenAI({ ...options, apiKey: wrongKey }));
// The client insists on credentials but lets a header be omitted: this one
// sends no key at all.
out.no_key = await errorWith(new OpenAI({ ...options, apiKey: "never-sent", defaultHeaders: { Authorization: null } }));

console.log(JSON.stringify(out));
