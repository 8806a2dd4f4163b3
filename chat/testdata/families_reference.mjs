// Regenerates families_reference.json: the chat templates of the 2026
// families rendered by @huggingface/jinja (the Jinja engine of
// transformers.js), the reference for package chat's qwen35, gpt-oss,
// gemma4, lfm2 and granite-4.0 formats.
//
// Run from the repository root after `npm ci` (Node 18 or later):
//
//   node chat/testdata/families_reference.mjs
//
// The templates are chat/testdata/templates/*.jinja (see README.md); each is
// recorded with its SHA-256, which the Go test checks. gpt-oss's template
// writes today's date (strftime_now, which @huggingface/jinja provides):
// each case records the date its rendering wrote, which the Go test passes
// as chat.Options.Date.

import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Template } from "@huggingface/jinja";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const jinjaVersion = JSON.parse(readFileSync(join(root, "node_modules/@huggingface/jinja/package.json"))).version;

// name → the template file, the family package chat gives it, the BOS its
// model's template writes, and the enable_thinking values to render with
// (undefined: unset).
const templates = {
  "qwen3.5": { file: "Qwen3.5-4B.jinja", family: "qwen35", bos_token: "", thinking: [undefined, true, false] },
  "gpt-oss": { file: "openai-gpt-oss-120b.jinja", family: "gpt-oss", bos_token: "<|startoftext|>", thinking: [undefined] },
  gemma4: { file: "google-gemma-4-31B-it.jinja", family: "gemma4", bos_token: "<bos>", thinking: [true, false] },
  "lfm2.5": { file: "LFM2.5-Instruct.jinja", family: "lfm2", bos_token: "<|startoftext|>", thinking: [undefined] },
  lfm2: { file: "LFM2-8B-A1B.jinja", family: "chatml", bos_token: "<|startoftext|>", thinking: [undefined] },
  "granite4.0": { file: "ibm-granite-granite-4.0.jinja", family: "granite-4.0", bos_token: "", thinking: [undefined] },
};
for (const t of Object.values(templates)) t.text = readFileSync(join(here, "templates", t.file), "utf8");

// llama.cpp's tests/test-chat-template.cpp conversation.
const reference = [
  { role: "system", content: "You are a helpful assistant" },
  { role: "user", content: "Hello" },
  { role: "assistant", content: "Hi there" },
  { role: "user", content: "Who are you" },
  { role: "assistant", content: "   I am an assistant   " },
  { role: "user", content: "Another question" },
];

const conversations = {
  reference,
  "one user message": [{ role: "user", content: "What is 2+2?" }],
  "no system, spaces": [
    { role: "user", content: "  Hi \n" },
    { role: "assistant", content: "\nHello!  " },
    { role: "user", content: "Bye" },
  ],
  "assistant last": [
    { role: "user", content: "q" },
    { role: "assistant", content: "a" },
  ],
};
// Reasoning in the history, as each family's replies carry it.
const thinkHistory = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "Hi" },
  { role: "assistant", content: "<think>\nThe user greets me.\n</think>\n\nHello!" },
  { role: "user", content: "2+2?" },
  { role: "assistant", content: "<think>add</think>4" },
  { role: "user", content: "And 3+3?" },
];
const extra = {
  "qwen3.5": {
    "reasoning in the history": thinkHistory,
    "turns after the last query": [
      { role: "user", content: "q" },
      { role: "assistant", content: "<think>x</think>a" },
      { role: "assistant", content: "b" },
    ],
  },
  "lfm2.5": { "reasoning in the history": thinkHistory },
  gemma4: {
    "thought in the history": [
      { role: "user", content: "Hi" },
      { role: "assistant", content: "<|channel>thought\nThe user greets me.<channel|>Hello!" },
      { role: "user", content: "Again" },
    ],
    "developer first": [
      { role: "developer", content: " Be brief. " },
      { role: "user", content: "Hi" },
    ],
    "two model turns": [
      { role: "user", content: "Hi" },
      { role: "assistant", content: "One." },
      { role: "assistant", content: "Two." },
      { role: "user", content: "Go on" },
    ],
  },
  "gpt-oss": {
    "developer first": [
      { role: "developer", content: "Answer in French." },
      { role: "user", content: "Hi" },
    ],
    "system later": [
      { role: "user", content: "Hi" },
      { role: "system", content: "ignored" },
      { role: "assistant", content: "Hello" },
      { role: "user", content: "Bye" },
    ],
  },
  "granite4.0": {
    "system later": [
      { role: "user", content: "Hi" },
      { role: "system", content: "Be brief." },
      { role: "user", content: "Bye" },
    ],
    "empty system": [
      { role: "system", content: "" },
      { role: "user", content: "Hi" },
    ],
  },
};

const cases = [];
for (const [name, t] of Object.entries(templates)) {
  const convs = { ...conversations, ...(extra[name] ?? {}) };
  for (const [conv, messages] of Object.entries(convs)) {
    for (const add of [true, false]) {
      for (const thinking of t.thinking) {
        const ctx = { messages, add_generation_prompt: add, bos_token: t.bos_token, eos_token: "" };
        if (thinking !== undefined) ctx.enable_thinking = thinking;
        const c = { template: name, family: t.family, name: conv, messages, add_generation_prompt: add };
        if (thinking !== undefined) c.enable_thinking = thinking;
        c.output = new Template(t.text).render(ctx);
        const date = /Current date: (\d{4}-\d{2}-\d{2})/.exec(c.output);
        if (date) c.date = date[1];
        cases.push(c);
      }
    }
  }
}

const out = {
  generator: "chat/testdata/families_reference.mjs",
  jinja: `@huggingface/jinja@${jinjaVersion}`,
  templates: Object.fromEntries(Object.entries(templates).map(([k, t]) => [k, {
    source: `templates/${t.file}`,
    sha256: createHash("sha256").update(t.text).digest("hex"),
    family: t.family,
    bos_token: t.bos_token,
  }])),
  cases,
};
writeFileSync(join(here, "families_reference.json"), JSON.stringify(out, null, 1) + "\n");
console.log(`wrote ${cases.length} renderings to chat/testdata/families_reference.json`);
