// embeddings.js: embeddings and reranking in OpenAI's and llama.cpp's
// shapes, for wasmlm.js (lm.embeddings.create, lm.rerank). The worker's Go
// side embeds or ranks; this module checks what only the page knows of
// (the OpenAI fields), and turns the Go side's results into the shapes the
// HTTP API returns. An ES module.

import { argumentError, checkRequestOptions, checkSendable, describe, invalidCall } from './errors.js';

const EMBED_FIELDS = ['input', 'encoding_format', 'dimensions', 'truncate', 'normalize', 'signal', 'model', 'user'];
const RERANK_FIELDS = ['query', 'documents', 'top_n', 'return_documents', 'truncate', 'signal', 'model'];

/**
 * lm.embeddings.create(body, {signal}): OpenAI's embeddings response
 * {object: 'list', data: [{object: 'embedding', index, embedding, truncated?}], model,
 * usage}, each embedding a number[] (encoding_format 'float', the default)
 * or the base64 of its little-endian float32 bytes ('base64'). lm: {name,
 * info, run(message, signal)}, the model (wasmlm.js).
 */
export async function createEmbeddings(lm, body, requestOptions) {
  checkRequest(body, EMBED_FIELDS, '{input, ...}');
  checkRequestOptions(requestOptions);
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') {
    throw argumentError('encoding_format', `must be 'float' or 'base64', got ${describe(format)}`);
  }
  const { dimensions } = body;
  if (dimensions != null) {
    if (!Number.isInteger(dimensions)) throw argumentError('dimensions', `must be an integer, got ${describe(dimensions)}`);
    const length = lm.info.embeddingLength;
    if (dimensions !== length) {
      throw argumentError('dimensions', `must be the model's embedding length, ${length}, got ${dimensions}: wasmlm does not shorten embeddings`);
    }
  }
  const options = { truncate: body.truncate, normalize: body.normalize };
  checkSendable({ input: body.input, options });
  const r = await lm.run({ type: 'embed', input: body.input, options }, requestOptions?.signal ?? body.signal);
  const width = 4 * r.dimensions;
  const data = r.tokens.map((_, index) => {
    const bytes = r.vectors.subarray(index * width, (index + 1) * width);
    const item = { object: 'embedding', index, embedding: format === 'base64' ? base64(bytes) : floats(bytes) };
    if (r.truncated?.[index]) item.truncated = true; // as the HTTP API says it: a text truncate cut
    return item;
  });
  return { object: 'list', data, model: lm.name, usage: usage(r) };
}

/**
 * lm.rerank(body, {signal}): llama.cpp's rerank response {object: 'list',
 * model, results: [{index, relevance_score, document?}], usage}, the most
 * relevant document first (equal scores in the documents' order), top_n of
 * them. relevance_score is the reranker's raw score, as llama.cpp's server
 * reports it; document ({text}) with return_documents.
 */
export async function rerankDocuments(lm, body, requestOptions) {
  checkRequest(body, RERANK_FIELDS, '{query, documents, ...}');
  checkRequestOptions(requestOptions);
  const { top_n: topN, return_documents: withDocuments = false } = body;
  if (topN != null && !(Number.isInteger(topN) && topN >= 1)) {
    throw argumentError('top_n', `must be an integer >= 1, got ${describe(topN)}`);
  }
  if (typeof withDocuments !== 'boolean') {
    throw argumentError('return_documents', `must be a boolean, got ${describe(withDocuments)}`);
  }
  const { query, documents } = body;
  checkSendable({ query, documents, options: { truncate: body.truncate } });
  const r = await lm.run({ type: 'rerank', query, documents, options: { truncate: body.truncate } }, requestOptions?.signal ?? body.signal);
  const results = r.scores.map((score, index) => ({ index, relevance_score: score }));
  results.sort((a, b) => b.relevance_score - a.relevance_score); // stable: ties keep the documents' order
  if (topN != null) results.length = Math.min(topN, results.length);
  if (withDocuments) for (const x of results) x.document = { text: documents[x.index] };
  return { object: 'list', model: lm.name, results, usage: usage(r) };
}

/** Checks that body is a request object with no field outside known. */
function checkRequest(body, known, shape) {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalidCall(`the request must be an object ${shape}, got ${describe(body)}`);
  }
  for (const k of Object.keys(body)) {
    if (!known.includes(k)) throw invalidCall(`unknown field "${k}" in the request (known: ${known.join(', ')})`);
  }
  // OpenAI's fields the page has no use for, typed as the HTTP API types them.
  for (const k of ['model', 'user']) {
    if (body[k] != null && typeof body[k] !== 'string') throw argumentError(k, `must be a string, got ${describe(body[k])}`);
  }
}

/** The Go side's usage in OpenAI's spelling. */
function usage(r) {
  return { prompt_tokens: r.usage.promptTokens, total_tokens: r.usage.totalTokens };
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** The float32 values of little-endian bytes, as numbers (exactly: every float32 is a number). */
function floats(bytes) {
  const n = bytes.length / 4;
  if (LITTLE_ENDIAN && bytes.byteOffset % 4 === 0) return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, n));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  return Array.from({ length: n }, (_, i) => view.getFloat32(4 * i, true));
}

/** bytes in base64 (Uint8Array.prototype.toBase64 where the browser has it). */
function base64(bytes) {
  if (typeof bytes.toBase64 === 'function') return bytes.toBase64();
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}
