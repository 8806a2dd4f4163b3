// Drives the official openai npm client (the version pinned in
// package-lock.json) against a server that requires API keys and limits
// requests, and prints what it got as one JSON object, for the keys tests
// (native and edge) to check.
//
//   node tests/e2e/openai_keys_client.mjs BASE_URL KEY WRONG_KEY REQUESTS_PER_MINUTE
//
// With KEY it streams a chat completion; with WRONG_KEY and with no key at
// all it is refused; then it makes chat requests with KEY until one is
// refused for the rate limit (at most REQUESTS_PER_MINUTE + 1), and makes
// one more with the client's own retries, which wait as Retry-After says.
import OpenAI from "openai";
import { attempt, readChatStream } from "./openai_client.mjs";

const [baseURL, key, wrongKey, rpmArg] = process.argv.slice(2);
const rpm = Number(rpmArg);
const model = "any-model-name";
const messages = [{ role: "user", content: "Once upon a time" }];
const client = (apiKey, options = {}) => new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000, ...options });

const out = {};

out.stream = await readChatStream(await client(key).chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, stream: true }));

out.wrong_key = (await attempt(() => client(wrongKey).chat.completions.create({ model, messages, max_tokens: 1 }))).error ?? null;
// No key at all: the client insists on one, so its Authorization header is
// taken away (null removes a default header).
out.no_key = (await attempt(() => client("unused", { defaultHeaders: { Authorization: null } }).chat.completions.create({ model, messages, max_tokens: 1 }))).error ?? null;

out.allowed = 0;
out.limited = null;
for (let i = 0; i <= rpm && !out.limited; i++) {
  const r = await attempt(() => client(key).chat.completions.create({ model, messages, max_tokens: 1 }));
  if (r.error) out.limited = r.error;
  else out.allowed++;
}
const started = Date.now();
const r = await attempt(() => client(key, { maxRetries: 2 }).chat.completions.create({ model, messages, max_tokens: 1 }));
out.recovered = { ok: !!r.ok, error: r.error ?? null, waited_ms: Date.now() - started };

console.log(JSON.stringify(out));
