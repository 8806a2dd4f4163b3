// Drives the official openai npm client (the version pinned in
// package-lock.json) against a server's /v1/embeddings, and reranks with
// fetch, as a page or a script would; prints what it got as one JSON
// object, for http_embeddings_test.go to check: each call's result as
// {ok} or, when the client threw, {error}.
//
//   node tests/e2e/openai_embeddings_client.mjs BASE_URL QUERY TEXT...
//
// BASE_URL ends in /v1. The client asks for base64 unless told otherwise
// and decodes it (float32s, little-endian); with encoding_format "float"
// it passes the JSON numbers through. Vectors are printed as arrays of the
// float32 values, which JSON writes exactly.
import OpenAI from "openai";
import { attempt } from "./openai_client.mjs";

const [baseURL, query, ...input] = process.argv.slice(2);
const model = "any-model-name";
// wire records what went over the wire for the last request: the
// encoding_format the client asked for, and the JSON type of the first
// embedding the server sent.
let wire = {};
async function recordingFetch(url, init) {
  const resp = await fetch(url, init);
  wire = { encoding_format: JSON.parse(init.body).encoding_format ?? null };
  if (resp.ok) wire.embedding_type = typeof (await resp.clone().json()).data[0].embedding;
  return resp;
}
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 60_000, fetch: recordingFetch });

// list is what a test reads of an embeddings response.
function list(r) {
  return {
    model: r.model, object: r.object, usage: r.usage,
    data: r.data.map((d) => ({
      object: d.object, index: d.index, embedding: Array.from(d.embedding),
    })),
    wire,
  };
}

const out = {};
out.base64 = await attempt(async () => list(await client.embeddings.create({ model, input }))); // the client's default: base64, decoded
out.float = await attempt(async () => list(await client.embeddings.create({ model, input, encoding_format: "float" })));
out.one = await attempt(async () => list(await client.embeddings.create({ model, input: input[0], encoding_format: "float" })));
out.dimensions = await attempt(() => client.embeddings.create({ model, input, dimensions: 3 }));
out.empty = await attempt(() => client.embeddings.create({ model, input: [] }));

// Rerank is not in the openai client: a plain fetch, as llama.cpp's
// clients make it.
const root = baseURL.replace(/\/v1$/, "");
const r = await fetch(`${root}/v1/rerank`, {
  method: "POST", headers: { "Content-Type": "application/json" },
  body: JSON.stringify({ model, query, documents: input, top_n: 2, return_documents: true }),
});
out.rerank = { status: r.status, body: await r.json() };

console.log(JSON.stringify(out));
