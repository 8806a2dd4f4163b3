// llama.cpp's and ajv's verdicts on texts, for package grammarref. It reads
// one JSON request on stdin:
//
//	{"grammars": [{"grammar": "root ::= ...", "texts": ["...", ...]}, ...],
//	 "schemas":  [{"schema": {...}, "texts": ["...", ...]}, ...]}
//
// and prints one JSON line {"grammars": [...], "schemas": [...]}, one result
// per job in order. A grammar's result is {"accepts": [true, ...]}: whether
// llama.cpp's grammar (node-llama-cpp's prebuilt CPU binary, pinned in
// package.json) accepts each whole text, llama_grammar_accept over its code
// points from the rule "root" (LlamaGrammar._testText); or {"error": "..."}
// when llama.cpp's parser refuses the grammar (its reasons, printed on
// stderr after the line "@@grammarref job N", are added by Run). A schema's result is
// {"valid": [true, ...]}: ajv's verdict on each text (JSON draft 2020-12,
// ajv-formats' formats; a text that is not JSON is invalid), or {"error"}
// when ajv refuses the schema.
import { getLlama } from 'node-llama-cpp';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));

let logged = [];
const logger = (level, message) => {
  if (level === 'error' || level === 'fatal' || level === 'warn') logged.push(message.trim());
};
const result = { grammars: [], schemas: [] };
const marker = '@@grammarref job ';

if ((request.grammars ?? []).length > 0) {
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'warn', logger, progressLogs: false });
  for (const [i, job] of request.grammars.entries()) {
    logged = [];
    // llama.cpp's parser says why it refuses a grammar on stderr (fprintf),
    // not through the logger: a marker before each job lets Run give each
    // error its lines. Writes to a pipe are synchronous on Linux, so they
    // keep their order with the native ones.
    process.stderr.write(`\n${marker}${i}\n`);
    let grammar;
    try {
      grammar = await llama.createGrammar({ grammar: job.grammar });
    } catch (err) {
      result.grammars.push({ error: [String(err?.message ?? err), ...logged].join('\n') });
      continue;
    }
    try {
      result.grammars.push({ accepts: job.texts.map((t) => grammar._testText(t)) });
    } catch (err) {
      result.grammars.push({ error: [String(err?.message ?? err), ...logged].join('\n') });
    }
  }
  await llama.dispose();
}

for (const job of request.schemas ?? []) {
  try {
    const ajv = new Ajv2020({ strict: false, allErrors: false });
    addFormats(ajv);
    const validate = ajv.compile(job.schema);
    result.schemas.push({
      valid: job.texts.map((t) => {
        let data;
        try {
          data = JSON.parse(t);
        } catch {
          return false;
        }
        return validate(data);
      }),
    });
  } catch (err) {
    result.schemas.push({ error: String(err?.message ?? err) });
  }
}
console.log(JSON.stringify(result));
