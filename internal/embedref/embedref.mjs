// llama.cpp's embeddings, reranking scores and embedding speed, through
// node-llama-cpp (pinned in package.json; its prebuilt CPU binary, never a
// build or a GPU backend, one thread unless a time job asks for more), for
// package embedref. It reads one JSON request on stdin:
//
//	{"embed": [{"model": "m.gguf", "inputs": [{"text": "..."}, {"tokens": [101, 7592, 102]}],
//	            "context_size": 0}],
//	 "rank":  [{"model": "r.gguf", "query": "...", "documents": ["...", ...], "context_size": 0}],
//	 "time":  [{"model": "m.gguf", "tokens": 128, "batch": 8, "repeats": 3, "mode": "sequences",
//	            "texts": ["...", ...], "threads": 1, "warmup_ms": 0}]}
//
// and prints one JSON line {"embed": [...], "rank": [...], "time": [...]},
// one result per job in order, each {"error": "..."} when llama.cpp refused
// the model (or failed to run it).
//
// An embed result is {"architecture", "pooling_type", "embeddings": [{"tokens",
// "vector"}, ...]}: the file's general.architecture and pooling_type (-1
// when it has none), and for each input the ids evaluated — a text is
// tokenized as getEmbeddingFor tokenizes it (llama_tokenize without
// special tokens), and, text or ids, [CLS] (the vocabulary's BOS) is put
// before unless it is first and [SEP] after unless it is last
// (LlamaEmbeddingContext's _prepareInput) — and the vector getEmbeddingFor
// returns: llama.cpp's llama_get_embeddings_seq as it is, pooled as the
// file's pooling_type says, not normalized.
//
// A rank result is {"ranks": [{"tokens", "raw", "score", "score_all"}, ...]}:
// for each document the sequence LlamaRankingContext builds ([BOS] query
// [EOS] [SEP] document [EOS], each where the vocabulary has one: for BERT
// [CLS] query [SEP] document, with no closing [SEP]), llama.cpp's n_cls_out
// classifier outputs for it (a context whose pooling is rank, as
// createRankingContext's), and what rank and rankAll return (the sigmoid
// of raw[0], but for qwen3).
//
// A time result is {"seconds": [...], "tokens": N, "threads", "warmup_rounds"}:
// the wall time, measured in Node, of each of repeats rounds (after rounds
// to warm up: at least one, until warmup_ms have passed) that embed batch
// inputs of N tokens each ([CLS], N-2 word pieces, [SEP]; or the job's
// texts, tokenized as getEmbeddingFor tokenizes them, each of which must
// come to N), on the job's threads (1 by default). Mode "sequences"
// evaluates them together, in one context of batch sequences whose batch
// holds them all (one llama.cpp encode); mode "sequential" embeds them one
// after the other with getEmbeddingFor (an embedding context has one
// sequence).
import { getLlama } from 'node-llama-cpp';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));

// llama.cpp says why it refuses a model only in its log: the job's error
// carries the log's errors.
let logged = [];
const logger = (level, message) => {
  if (level === 'error' || level === 'fatal') logged.push(message.trim());
};
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error', logger, progressLogs: false });
const result = { embed: [], rank: [], time: [] };
for (const [kind, run] of [['embed', embed], ['rank', rank], ['time', time]]) {
  for (const job of request[kind] ?? []) {
    logged = [];
    try {
      result[kind].push(await run(job));
    } catch (err) {
      result[kind].push({ error: [String(err?.message ?? err), ...logged].join('\n') });
    }
  }
}
console.log(JSON.stringify(result));
await llama.dispose();

async function load(path) {
  return llama.loadModel({ modelPath: path, gpuLayers: 0, useMmap: false });
}

// contextSize is a context that holds the longest of inputs (and the one
// free cell node-llama-cpp wants), or the job's.
function contextSize(job, lengths, model) {
  if (job.context_size > 0) return job.context_size;
  return Math.min(model.trainContextSize, Math.max(...lengths, 1) + 1);
}

async function embed(job) {
  const model = await load(job.model);
  try {
    const ids = job.inputs.map((input) => (input.tokens ? input.tokens.slice() : Array.from(model.tokenize(input.text, false))));
    // The context must hold the longest input with its [CLS] and [SEP].
    const size = contextSize(job, ids.map((t) => t.length + 2), model);
    const context = await model.createEmbeddingContext({ contextSize: size, batchSize: size, threads: 1 });
    try {
      const embeddings = [];
      for (const [i, input] of job.inputs.entries()) {
        const { vector } = await context.getEmbeddingFor(input.tokens ? input.tokens.slice() : input.text);
        // The ids getEmbeddingFor evaluated: its _prepareInput adds [CLS]
        // and [SEP] where they are missing.
        const tokens = ids[i].slice();
        context._prepareInput(tokens);
        embeddings.push({ tokens, vector: Array.from(vector) });
      }
      const arch = model.fileInfo.metadata?.general?.architecture ?? null;
      return { architecture: arch, pooling_type: model.fileInfo.metadata?.[arch]?.pooling_type ?? -1, embeddings };
    } finally {
      await context.dispose();
    }
  } finally {
    await model.dispose();
  }
}

async function rank(job) {
  const model = await load(job.model);
  try {
    const query = model.tokenize(job.query, false, 'trimLeadingSpace');
    const documents = job.documents.map((d) => model.tokenize(d, false, 'trimLeadingSpace'));
    // The sequences node-llama-cpp builds; a throwaway context to ask it.
    const probe = await model.createRankingContext({ contextSize: 8, batchSize: 8, threads: 1 });
    const sequences = documents.map((d) => probe._getEvaluationInput(query, d));
    await probe.dispose();
    const size = contextSize(job, sequences.map((s) => s.length), model);
    const context = await model.createRankingContext({ contextSize: size, batchSize: size, threads: 1 });
    try {
      const raws = [];
      for (const seq of sequences) raws.push(await rawScores(context, seq));
      const scores = [];
      for (const d of job.documents) scores.push(await context.rank(job.query, d));
      const all = await context.rankAll(job.query, job.documents);
      return {
        ranks: sequences.map((tokens, i) => ({ tokens, raw: raws[i], score: scores[i], score_all: all[i] })),
      };
    } finally {
      await context.dispose();
    }
  } finally {
    await model.dispose();
  }
}

// rawScores evaluates seq as LlamaRankingContext._evaluateRankingForInput
// does and returns all of llama.cpp's classifier outputs, before the
// sigmoid it applies to the first.
async function rawScores(context, seq) {
  const sequence = context._sequence;
  await sequence.eraseContextTokenRanges([{ start: 0, end: sequence.nextTokenIndex }]);
  for await (const _ of sequence.evaluate(seq, { _noSampling: true })) break;
  return Array.from(context._llamaContext._ctx.getEmbedding(seq.length));
}

// batchInputs are batch inputs of n tokens: the vocabulary's BOS ([CLS]),
// n-2 ids of BERT's word pieces (1000 to 29999), each input its own, and
// its SEP ([SEP]).
function batchInputs(model, n, batch) {
  const out = [];
  for (let b = 0; b < batch; b++) {
    const ids = [model.tokens.bos];
    for (let i = 0; i < n - 2; i++) ids.push(1000 + ((b * 7919 + i * 104729) % 29000));
    ids.push(model.tokens.sep);
    out.push(ids);
  }
  return out;
}

// textInputs are the ids of texts as getEmbeddingFor evaluates them: each
// tokenized without special tokens, [CLS] put before it and [SEP] after
// (LlamaEmbeddingContext's _prepareInput), each n ids long.
function textInputs(model, texts, n) {
  return texts.map((text, i) => {
    const ids = Array.from(model.tokenize(text, false));
    if (ids[0] !== model.tokens.bos) ids.unshift(model.tokens.bos);
    if (ids[ids.length - 1] !== model.tokens.sep) ids.push(model.tokens.sep);
    if (ids.length !== n) throw new Error(`texts[${i}] is ${ids.length} tokens with [CLS] and [SEP], not ${n}`);
    return ids;
  });
}

// rounds runs round to warm up (at least once, until warmupMs have passed),
// then repeats times, and returns the measured rounds' seconds.
async function rounds(round, repeats, warmupMs) {
  let warmupRounds = 0;
  for (const start = performance.now(); warmupRounds === 0 || performance.now() - start < warmupMs; warmupRounds++) await round();
  const seconds = [];
  for (let r = 0; r < repeats; r++) {
    const start = performance.now();
    await round();
    seconds.push((performance.now() - start) / 1000);
  }
  return { seconds, warmupRounds };
}

async function time(job) {
  const model = await load(job.model);
  try {
    const inputs = job.texts ? textInputs(model, job.texts, job.tokens) : batchInputs(model, job.tokens, job.batch);
    const n = job.threads || 1;
    const threads = { ideal: n, min: n };
    let measured, currentThreads;
    if (job.mode === 'sequential') {
      const size = job.tokens + 1;
      const context = await model.createEmbeddingContext({ contextSize: size, batchSize: size, threads: n });
      try {
        measured = await rounds(async () => {
          for (const ids of inputs) await context.getEmbeddingFor(ids.slice());
        }, job.repeats, job.warmup_ms ?? 0);
        currentThreads = context._llamaContext.currentThreads;
      } finally {
        await context.dispose();
      }
    } else {
      // One context of batch sequences, all of them in one batch: a
      // non-causal model's batch must hold every sequence whole.
      const context = await model.createContext({
        contextSize: job.tokens + 1,
        sequences: job.batch,
        batchSize: job.batch * (job.tokens + 1),
        threads,
        _embeddings: true,
      });
      try {
        const sequences = inputs.map(() => context.getSequence());
        measured = await rounds(() => Promise.all(sequences.map(async (sequence, i) => {
          await sequence.eraseContextTokenRanges([{ start: 0, end: sequence.nextTokenIndex }]);
          for await (const _ of sequence.evaluate(inputs[i], { _noSampling: true })) break;
        })), job.repeats, job.warmup_ms ?? 0);
        currentThreads = context.currentThreads;
      } finally {
        await context.dispose();
      }
    }
    return { seconds: measured.seconds, tokens: inputs[0].length, threads: currentThreads, warmup_rounds: measured.warmupRounds };
  } finally {
    await model.dispose();
  }
}
