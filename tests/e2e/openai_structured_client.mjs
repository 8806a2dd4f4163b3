// Drives the official openai npm client (the version pinned in
// package-lock.json), unmodified, through structured output and tool
// calling against an OpenAI-compatible server, and prints what it got as one
// JSON object, for http_structured_test.go to check.
//
//   node tests/e2e/openai_structured_client.mjs BASE_URL
//
// BASE_URL ends in /v1. Every request has a seed, so the same server model
// gives the same output (ids included) natively and at the edge.
import OpenAI from "openai";
import { attempt } from "./openai_client.mjs";

const [baseURL] = process.argv.slice(2);
const model = "any-model-name";
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 60_000 });
const messages = [{ role: "user", content: "What time is it?" }];
// Tools without parameters: stories260K's 512-token context holds the
// generic tool format's description of them and a call.
const tools = [
  { type: "function", function: { name: "get_time", description: "The time now." } },
  { type: "function", function: { name: "get_date" } },
];
const person = {
  type: "object",
  properties: { name: { type: "string", maxLength: 16 }, age: { type: "integer", minimum: 0, maximum: 120 } },
  required: ["name", "age"],
  additionalProperties: false,
};

function callsOf(message) {
  return (message.tool_calls ?? []).map((c) => ({ id: c.id, type: c.type, name: c.function.name, arguments: c.function.arguments }));
}

const out = {};

// A named function, not streamed.
const named = await client.chat.completions.create({
  model, messages, tools, tool_choice: { type: "function", function: { name: "get_date" } }, parallel_tool_calls: false, seed: 1,
});
out.named = { content: named.choices[0].message.content, finish_reason: named.choices[0].finish_reason, calls: callsOf(named.choices[0].message) };

// One call each (the default model, with the tools, has about 70 tokens of
// its context left: parallel calls would run into it, and a call the
// context cuts is dropped, never shortened to fit).
// "required", streamed through the client's ChatCompletionStream, which
// reassembles the calls from the deltas; and the same request not streamed.
const events = [];
const stream = client.chat.completions.stream({ model, messages, tools, tool_choice: "required", parallel_tool_calls: false, seed: 2 });
stream.on("tool_calls.function.arguments.done", (e) => events.push({ name: e.name, index: e.index, arguments: e.arguments }));
let chunks = 0;
for await (const _ of stream) chunks++;
const final = await stream.finalChatCompletion();
out.required_stream = {
  content: final.choices[0].message.content, finish_reason: final.choices[0].finish_reason,
  calls: callsOf(final.choices[0].message), done_events: events, chunks,
};
const required = await client.chat.completions.create({ model, messages, tools, tool_choice: "required", parallel_tool_calls: false, seed: 2 });
out.required = { content: required.choices[0].message.content, finish_reason: required.choices[0].finish_reason, calls: callsOf(required.choices[0].message) };

// runTools with a named function: the runner calls it with the model's
// arguments and adds the tool message.
const called = [];
const runner = client.chat.completions.runTools({
  model, messages, seed: 3, parallel_tool_calls: false,
  tool_choice: { type: "function", function: { name: "get_time" } },
  tools: [{ type: "function", function: { name: "get_time", parameters: { type: "object", properties: {} }, function: (args) => { called.push(args); return "noon"; } } }],
});
await runner.done();
out.run_tools = { called, messages: runner.messages.map((m) => ({ role: m.role, tool_call_id: m.tool_call_id ?? null, content: m.content ?? null })) };

// The round trip: the assistant's calls as the client returned them and
// the tool's result, answered in text (tool_choice "none").
const call = named.choices[0].message.tool_calls[0];
const followUp = await client.chat.completions.create({
  model, tools, tool_choice: "none", seed: 4, max_tokens: 24,
  messages: [...messages, named.choices[0].message, { role: "tool", tool_call_id: call.id, content: "Tuesday" }],
});
out.round_trip = { content: followUp.choices[0].message.content, finish_reason: followUp.choices[0].finish_reason, calls: callsOf(followUp.choices[0].message), prompt_tokens: followUp.usage.prompt_tokens };

// response_format json_object, and json_schema through the client's
// parse helper (which JSON-parses the content), streamed and not.
const obj = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Once upon a time" }], response_format: { type: "json_object" }, seed: 5 });
out.json_object = { content: obj.choices[0].message.content, finish_reason: obj.choices[0].finish_reason };
const response_format = { type: "json_schema", json_schema: { name: "person", strict: true, schema: person } };
const parsed = await client.chat.completions.parse({ model, messages: [{ role: "user", content: "Once upon a time" }], response_format, seed: 6 });
out.json_schema = { content: parsed.choices[0].message.content, parsed: parsed.choices[0].message.parsed, finish_reason: parsed.choices[0].finish_reason };
const schemaStream = client.chat.completions.stream({ model, messages: [{ role: "user", content: "Once upon a time" }], response_format, seed: 7 });
const streamed = await schemaStream.finalChatCompletion();
out.json_schema_stream = { content: streamed.choices[0].message.content, parsed: streamed.choices[0].message.parsed, finish_reason: streamed.choices[0].finish_reason };
const completion = await client.completions.create({ model, prompt: "Once upon a time", response_format: { type: "json_object" }, max_tokens: 64, seed: 8 });
out.completion_json = { text: completion.choices[0].text, finish_reason: completion.choices[0].finish_reason };

// A bad request: the client raises the server's error object.
out.error = (await attempt(() => client.chat.completions.create({
  model, messages, response_format: { type: "json_schema", json_schema: { name: "no spaces allowed", schema: person } },
}))).error ?? null;

console.log(JSON.stringify(out));
