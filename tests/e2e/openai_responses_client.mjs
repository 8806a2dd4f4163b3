// Drives the official openai npm client (the version pinned in
// package-lock.json), unmodified, through the Responses API against an
// OpenAI-compatible server — responses.create with text, a JSON schema
// (responses.parse) and a function call sent back with its output, and
// responses.stream() to its end — and through logprobs (chat, responses,
// completions), and prints what it got as one JSON
// object, for http_responses_test.go to check.
//
//   node tests/e2e/openai_responses_client.mjs BASE_URL
//
// BASE_URL ends in /v1.
import OpenAI from "openai";
import { attempt } from "./openai_client.mjs";

const [baseURL] = process.argv.slice(2);
const model = "any-model-name";
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 60_000 });
const story = { model, input: "Once upon a time", instructions: "Tell a story.", max_output_tokens: 8, temperature: 0 };
// A tool without parameters: stories260K's 512-token context holds the
// generic tool format's description of it and a call.
const tools = [{ type: "function", name: "get_time", description: "The time now." }];
const question = [{ role: "user", content: "What time is it?" }];
const out = {};

const text = await client.responses.create(story);
out.text = { status: text.status, output_text: text.output_text, types: text.output.map((o) => o.type), item_statuses: text.output.map((o) => o.status), usage: text.usage };

const stream = client.responses.stream(story);
const events = [];
let deltas = "";
const itemsDone = [];
stream.on("response.output_text.delta", (e) => { deltas += e.delta; });
stream.on("response.output_item.done", (e) => { itemsDone.push(e.item.status); });
for await (const e of stream) events.push(e.type);
const final = await stream.finalResponse();
out.stream = { events, deltas, output_text: final.output_text, status: final.status, items_done: itemsDone, item_statuses: final.output.map((o) => o.status) };

const person = {
  type: "object",
  properties: { name: { type: "string", maxLength: 16 }, age: { type: "integer", minimum: 0, maximum: 120 } },
  required: ["name", "age"],
  additionalProperties: false,
};
const parsed = await client.responses.parse({
  model, input: "Who are you?", text: { format: { type: "json_schema", name: "person", schema: person, strict: true } }, seed: 1,
});
out.json_schema = { output_text: parsed.output_text, parsed: parsed.output_parsed, status: parsed.status };

const call = await client.responses.create({ model, input: question, tools, tool_choice: "required", parallel_tool_calls: false, seed: 2 });
const fc = call.output.find((o) => o.type === "function_call");
out.call = { types: call.output.map((o) => o.type), name: fc?.name, call_id: fc?.call_id, arguments: fc?.arguments };
const answer = await client.responses.create({
  model, input: [...question, fc, { type: "function_call_output", call_id: fc.call_id, output: "noon" }],
  tools, tool_choice: "none", max_output_tokens: 4, seed: 3,
});
out.answer = { types: answer.output.map((o) => o.type), output_text: answer.output_text };

const callStream = client.responses.stream({ model, input: question, tools, tool_choice: "required", parallel_tool_calls: false, seed: 2 });
const argsDone = [];
callStream.on("response.function_call_arguments.done", (e) => argsDone.push(e.arguments));
const callEvents = [];
for await (const e of callStream) callEvents.push(e.type);
const callFinal = await callStream.finalResponse();
const sfc = callFinal.output.find((o) => o.type === "function_call");
out.call_stream = { events: callEvents, args_done: argsDone, name: sfc?.name, call_id: sfc?.call_id, arguments: sfc?.arguments };

// Log-probabilities: a chat completion (its instructions as a developer
// message), the same response, and a text completion.
const chatLogprobs = await client.chat.completions.create({
  model, messages: [{ role: "developer", content: story.instructions }, { role: "user", content: story.input }],
  max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 3,
});
out.chat_logprobs = chatLogprobs.choices[0].logprobs;
const responseLogprobs = await client.responses.create({ ...story, max_output_tokens: 4, include: ["message.output_text.logprobs"], top_logprobs: 3 });
out.response_logprobs = responseLogprobs.output[0].content[0].logprobs;
const completionLogprobs = await client.completions.create({ model, prompt: story.input, max_tokens: 4, temperature: 0, logprobs: 3 });
out.completion_logprobs = completionLogprobs.choices[0].logprobs;

out.previous = await attempt(() => client.responses.create({ model, input: "x", previous_response_id: "resp_1" }));
out.store = await attempt(() => client.responses.create({ model, input: "x", store: true }));

console.log(JSON.stringify(out));
