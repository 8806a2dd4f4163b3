// The llama.cpp-1t and llama.cpp-2t hosts of `make bench` (tools/benchrun):
// native llama.cpp through node-llama-cpp (pinned in package.json; its
// prebuilt CPU binary, @node-llama-cpp/linux-x64, never a build or a GPU
// backend), measured as wasmlm bench measures: load, warm up in rounds of 8
// tokens, then one greedy generation of n tokens after a prompt of token ids
// on an empty context, never stopping early.
//
//	node tools/benchrun/llamacpp.mjs '{"model": "m.gguf", "threads": 1, "prompt": 128, "n": 128, "warmupMs": 1000}'
//
// It prints one JSON line (the last line of its output) with what the harness
// reads: the times are the wall clock around node-llama-cpp's evaluate, as
// the engine's Timings are around its own generation.
import { getLlama } from 'node-llama-cpp';

const args = JSON.parse(process.argv[2]);
const ms = () => performance.now();

const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error', maxThreads: args.threads });
const t0 = ms();
const model = await llama.loadModel({ modelPath: args.model, gpuLayers: 0 });
const vocab = model.fileInfo.metadata.tokenizer.ggml.tokens.length;
// The session's context as the engine sizes it: the model's, at most 4096.
const contextSize = Math.min(model.trainContextSize, 4096);
const context = await model.createContext({
  contextSize,
  threads: { ideal: args.threads, min: args.threads },
  batchSize: Math.min(512, contextSize),
});
const loadMs = ms() - t0;
const sequence = context.getSequence();

// benchPrompt in cmd/wasmlm/bench.go: BOS, then ids spread over the
// vocabulary by a fixed stride, skipping the tokens that end a generation.
const special = [model.tokens.bos, model.tokens.eos, model.tokens.eot].filter((t) => t != null);
function benchPrompt(n) {
  const ids = model.tokens.bos != null ? [model.tokens.bos] : [];
  for (let i = 1; ids.length < n; i++) {
    let id = (i * 7919) % vocab;
    for (let k = 0; k < Math.min(special.length, vocab) && special.includes(id); k++) id = (id + 1) % vocab;
    ids.push(id);
  }
  return ids;
}
// generate evaluates prompt and samples n tokens greedily, timing the first
// token and the last. evaluate never stops by itself, so every run generates
// n tokens, whatever they are (wasmlm bench bans BOS, EOS and EOT instead; the
// generated models mute them, so greedy decoding picks them on neither).
async function generate(prompt, n) {
  await sequence.clearHistory();
  const start = ms();
  let first = 0;
  let count = 0;
  for await (const token of sequence.evaluate(prompt, { temperature: 0 })) {
    void token;
    if (count === 0) first = ms();
    if (++count >= n) break;
  }
  return { start, first, end: ms(), count };
}

let warmupTokens = 0;
for (const t = ms(); args.warmupMs > 0; ) {
  warmupTokens += (await generate(benchPrompt(8), 8)).count;
  if (ms() - t >= args.warmupMs) break;
}

const prompt = benchPrompt(args.prompt);
const r = await generate(prompt, args.n);
const ttft = r.first - r.start;
const decodeMs = r.end - r.first;
const kvType = 2; // F16, llama.cpp's default cache type
const c = model.fileInfo.architectureMetadata;
const kvDim = (c.embedding_length / c.attention.head_count) * (c.attention.head_count_kv ?? c.attention.head_count);
console.log(JSON.stringify({
  load_ms: loadMs,
  file_size: model.size,
  context_length: context.contextSize,
  kv_cache_bytes: 2 * c.block_count * context.contextSize * kvDim * kvType,
  warmup_tokens: warmupTokens,
  prompt_tokens: prompt.length,
  generated_tokens: r.count,
  time_to_first_token_ms: ttft,
  prefill_tokens_per_second: prompt.length / (ttft / 1000),
  decode_tokens_per_second: r.count > 1 ? (r.count - 1) / (decodeMs / 1000) : 0,
  // Node's whole process: node-llama-cpp maps the file, so this counts the
  // pages of it that were read, the KV cache and Node itself.
  peak_memory_bytes: process.resourceUsage().maxRSS * 1024,
  threads: context.currentThreads,
}));
await context.dispose();
await model.dispose();
await llama.dispose();
