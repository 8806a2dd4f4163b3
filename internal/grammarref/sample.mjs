// llama.cpp sampling under a GBNF grammar, for package grammarref's Sample.
// It reads one JSON request on stdin:
//
//	{"model": "/path/model.gguf", "jobs": [{"grammar": "root ::= ...",
//	  "prompt": "...", "seeds": [0, 1], "maxTokens": 200, "temperature": 1}]}
//
// and prints one JSON line {"jobs": [{"texts": [...], "ended": [...]}]}: the
// completion llama.cpp (node-llama-cpp's prebuilt CPU binary) samples for
// each seed under the grammar, and whether it ended by itself (an
// end-of-generation token) rather than at maxTokens.
import { getLlama, LlamaCompletion } from 'node-llama-cpp';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error', progressLogs: false });
const model = await llama.loadModel({ modelPath: request.model });
const context = await model.createContext({ contextSize: 512, sequences: 1, threads: 1 });
const sequence = context.getSequence();
const result = { jobs: [] };
for (const job of request.jobs) {
  const grammar = await llama.createGrammar({ grammar: job.grammar });
  const texts = [];
  const ended = [];
  for (const seed of job.seeds) {
    await sequence.clearHistory();
    const completion = new LlamaCompletion({ contextSequence: sequence });
    const res = await completion.generateCompletionWithMeta(job.prompt, {
      grammar, seed, temperature: job.temperature, maxTokens: job.maxTokens,
    });
    texts.push(res.response);
    ended.push(res.metadata.stopReason === 'eogToken');
  }
  result.jobs.push({ texts, ended });
}
await context.dispose();
await model.dispose();
await llama.dispose();
console.log(JSON.stringify(result));
