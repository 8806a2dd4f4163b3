// llama.cpp's greedy continuations and next-token probabilities, through
// node-llama-cpp (pinned in package.json; its prebuilt CPU binary, never a
// build or a GPU backend, one thread), for the parity harness of package
// llamacppref. It reads requests on stdin, one JSON line each:
//
//	{"jobs": [{"model": "m.gguf", "prompts": [[1, 5], [1]], "tokens": 64,
//	           "top_k": 10, "kv_type": "F32"}]}
//
// and answers each with one JSON line, in order, until stdin ends: one
// process serves every check of a test binary, which pays node-llama-cpp's
// start (a second of CPU) once. An answer is {"results": [...]}, one per job in order, each
// {"error": "..."} when llama.cpp refused the model, else
// {"architecture", "tensors", "runs": [{"tokens": [...], "steps": [[[id, p], ...], ...]}]}:
// for each prompt the greedy tokens after it (up to an end-of-generation
// token, which is not listed) and, for each token chosen (the
// end-of-generation one included), the top_k most probable tokens with their
// probabilities (the softmax of all logits, llama.cpp's float32 arithmetic),
// most probable first. Flash attention is off, so the attention is ggml's
// plain CPU path, and the KV cache holds kv_type (F32 or F16).
//
// A job with "texts" instead ({"model": "v.gguf", "texts": ["a", ...]})
// loads the model's vocabulary only and returns {"tokenized": [[...], ...]}:
// each text's token ids as llama_tokenize gives them with add_special false
// and parse_special as "parse_special" says (default false); with
// "detokenize": true also {"detokenized": [...]}, llama_detokenize's text of
// those ids; and {"special": {"bos", "eos", "sep", "add_bos", "add_eos"}},
// node-llama-cpp's view of the special tokens (-1: none).
import { createInterface } from 'node:readline';
import { getLlama } from 'node-llama-cpp';

// llama.cpp says why it refuses a model only in its log: the job's error
// carries the log's errors.
let logged = [];
const logger = (level, message) => {
  if (level === 'error' || level === 'fatal') logged.push(message.trim());
};
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error', logger, progressLogs: false });
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === '') continue;
  const request = JSON.parse(line);
  const results = [];
  for (const job of request.jobs) {
    logged = [];
    try {
      results.push(await run(job));
    } catch (err) {
      results.push({ error: [String(err?.message ?? err), ...logged].join('\n') });
    }
  }
  process.stdout.write(JSON.stringify({ results }) + '\n');
}
await llama.dispose();

async function run(job) {
  if (job.texts) return tokenize(job);
  const model = await llama.loadModel({ modelPath: job.model, gpuLayers: 0, useMmap: false });
  const longest = Math.max(...job.prompts.map((p) => p.length));
  const context = await model.createContext({
    contextSize: Math.min(model.trainContextSize, longest + job.tokens + 1),
    threads: 1,
    flashAttention: false,
    experimentalKvCacheKeyType: job.kv_type,
    experimentalKvCacheValueType: job.kv_type,
  });
  try {
    const sequence = context.getSequence();
    const runs = [];
    for (const prompt of job.prompts) {
      await sequence.clearHistory();
      const tokens = [];
      const steps = [];
      const options = { temperature: 0, yieldEogToken: true };
      for await (const { token, probabilities } of sequence.evaluateWithMetadata(prompt, { probabilities: true }, options)) {
        steps.push(top(probabilities, job.top_k));
        if (model.isEogToken(token)) break;
        tokens.push(token);
        if (tokens.length >= job.tokens) break;
      }
      runs.push({ tokens, steps });
    }
    return {
      architecture: model.fileInfo.metadata?.general?.architecture ?? null,
      tensors: model.fileInfo.fullTensorInfo?.length ?? model.fileInfo.tensorInfo?.length ?? null,
      runs,
    };
  } finally {
    await context.dispose();
    await model.dispose();
  }
}

async function tokenize(job) {
  const model = await llama.loadModel({ modelPath: job.model, vocabOnly: true });
  try {
    const tokenized = job.texts.map((text) => Array.from(model.tokenize(text, Boolean(job.parse_special))));
    const t = model.tokens;
    return {
      tokenized,
      detokenized: job.detokenize ? tokenized.map((ids) => model.detokenize(ids, false)) : undefined,
      special: { bos: t.bos ?? -1, eos: t.eos ?? -1, sep: t.sep ?? -1, add_bos: t.shouldPrependBosToken, add_eos: t.shouldAppendEosToken },
    };
  } finally {
    await model.dispose();
  }
}

// top is the k first entries of a probability map sorted most probable first.
function top(probabilities, k) {
  const out = [];
  for (const [id, p] of probabilities) {
    if (out.length >= k) break;
    out.push([id, p]);
  }
  return out;
}
