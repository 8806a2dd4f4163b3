// Greedy generation with native llama.cpp through node-llama-cpp (pinned in
// package.json; its prebuilt CPU binary, never a build or a GPU backend), for
// cmd/wasmlm's split-model test: llama.cpp loads a split model from its
// first part, finding the other parts by name.
//
//	node llamacpp_generate.mjs '{"model": "m-00001-of-00003.gguf", "prompt_tokens": [1, 2], "n": 16}'
//
// It prints one JSON line: {"tokens": [...], "tensors": N}, the n tokens
// generated after the prompt's token ids (evaluate never stops early) and
// the tensor count node-llama-cpp read from the file's parts.
import { getLlama } from 'node-llama-cpp';

const args = JSON.parse(process.argv[2]);
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const model = await llama.loadModel({ modelPath: args.model, gpuLayers: 0 });
const context = await model.createContext({ contextSize: model.trainContextSize, threads: 1 });
const sequence = context.getSequence();
const tokens = [];
for await (const token of sequence.evaluate(args.prompt_tokens, { temperature: 0 })) {
  tokens.push(token);
  if (tokens.length >= args.n) break;
}
console.log(JSON.stringify({ tokens, tensors: model.fileInfo.fullTensorInfo?.length ?? model.fileInfo.tensorInfo?.length ?? null }));
await context.dispose();
await model.dispose();
await llama.dispose();
