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

const [baseURL, key, wrongKey, rpmArg] = process.argv.slice(2);
const rpm = Number(rpmArg);
const model = "any-model-name";
const messages = [{ role: "user", content: "Once upon a time" }];
const client = (apiKey, options = {}) => new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000, ...options });

// errorOf keeps what the client made of an error response.
function errorOf(e) {
  return {
    name: e.constructor.name, status: e.status ?? null, type: e.type ?? null, param: e.param ?? null, code: e.code ?? null,
    retry_after: e.headers?.get?.("retry-after") ?? null, retry_after_ms: e.headers?.get?.("retry-after-ms") ?? null,
  };
}

async function attempt(fn) {
  try {
    return { ok: await fn() };
  } catch (e) {
    return { error: errorOf(e) };
  }
}

const out = {};

let text = "", chunks = 0, finish = null;
for await (const chunk of await client(key).chat.completions.create({ model, messages, max_tokens: 8, temperature: 0, stream: true })) {
  chunks++;
  text += chunk.choices[0]?.delta?.content ?? "";
  finish = chunk.choices[0]?.finish_reason ?? finish;
}
out.stream = { text, chunks, finish_reason: finish };

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
