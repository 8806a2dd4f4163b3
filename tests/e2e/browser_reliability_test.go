//go:build !js

package e2e

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// The page's part of the reliability suite (web/README.md, "Reliability"):
// every rejection of the JS API carries a documented code, a signal aborted
// before the call generates nothing, and the demo and the module run under a
// strict Content-Security-Policy.

// alreadyAbortedRepeats is how many calls of each kind
// TestBrowserAlreadyAbortedSignalGeneratesNothing makes: the race it guards
// against showed in two calls of three.
const alreadyAbortedRepeats = 30

// A signal that is aborted before the call generates no token, ever: not
// with generate, stream or chat.completions.create (streamed or not), on a
// fresh model or one that has generated, alone or queued behind a running
// generation. Each resolves with finishReason "abort" (OpenAI's
// finish_reason "abort") and no tokens, and the model works afterwards.
func TestBrowserAlreadyAbortedSignalGeneratesNothing(t *testing.T) {
	tb := newTab(t, blankPage)
	type outcome struct {
		Kind   string `json:"kind"`
		Tokens int    `json:"tokens"`
		Chunks int    `json:"chunks"`
		Finish string `json:"finish"`
	}
	got := eval[struct {
		Outcomes []outcome `json:"outcomes"`
		After    result    `json:"after"`
	}](t, tb, apiScript(`
		const repeats = `+strconv.Itoa(alreadyAbortedRepeats)+`;
		const aborted = () => { const ac = new AbortController(); ac.abort(); return ac.signal; };
		const messages = [{ role: 'user', content: 'Once upon a time' }];
		const opts = () => ({ temperature: 0, maxTokens: 50, signal: aborted() });
		const outcomes = [];
		const lm = await WasmLM.load(); // a fresh model: its first call is the first case below
		const kinds = {
			async generate() {
				const r = await lm.generate('Once upon a time', opts());
				return { tokens: r.tokens.length, chunks: 0, finish: r.finishReason };
			},
			async stream() {
				const s = lm.stream('Once upon a time', opts());
				let chunks = 0;
				for await (const c of s) chunks++;
				const r = await s.result;
				return { tokens: r.tokens.length, chunks, finish: r.finishReason };
			},
			async chat() {
				const r = await lm.chat.completions.create({ messages, temperature: 0, max_tokens: 50 }, { signal: aborted() });
				return { tokens: r.usage.completion_tokens, chunks: 0, finish: r.choices[0].finish_reason };
			},
			async chatStream() {
				const s = await lm.chat.completions.create({ messages, temperature: 0, max_tokens: 50, stream: true, signal: aborted() });
				let chunks = 0, finish = null;
				for await (const c of s) {
					if (c.choices[0]?.delta?.content) chunks++;
					finish = c.choices[0]?.finish_reason ?? finish;
				}
				return { tokens: (await s.result).tokens.length, chunks, finish };
			},
		};
		for (let i = 0; i < repeats; i++) {
			for (const [kind, call] of Object.entries(kinds)) outcomes.push({ kind, ...(await call()) });
		}
		// Queued behind a running generation, and made in the same task as it.
		for (let i = 0; i < repeats; i++) {
			const running = lm.generate('Once upon a time', { temperature: 0, maxTokens: 5 });
			const queued = lm.generate('Once upon a time', opts());
			await running;
			const r = await queued;
			outcomes.push({ kind: 'queued', tokens: r.tokens.length, chunks: 0, finish: r.finishReason });
		}
		const after = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 20 });
		lm.unload();
		return { outcomes, after };
	`))
	require.Len(t, got.Outcomes, 5*alreadyAbortedRepeats)
	generated := 0
	var wrong []string
	for i, o := range got.Outcomes {
		generated += o.Tokens
		if o.Tokens != 0 || o.Chunks != 0 || o.Finish != "abort" {
			wrong = append(wrong, fmt.Sprintf("call %d (%s): %d tokens, %d chunks, finish %q", i, o.Kind, o.Tokens, o.Chunks, o.Finish))
		}
	}
	assert.Empty(t, wrong, "calls with an already-aborted signal that generated or did not end with \"abort\"")
	t.Logf("%d calls with an already-aborted signal, %d tokens generated", len(got.Outcomes), generated)
	assert.Contains(t, reliabilitySection(t), fmt.Sprintf("%d calls with an already-aborted signal (%d each of",
		len(got.Outcomes), alreadyAbortedRepeats), "web/README.md's Reliability table")
	run := golden.RuncStories260K(t).Runs[1]
	assert.Equal(t, run.GeneratedIDs[:20], got.After.Tokens, "the model still works")
}

// rejection is how the page saw a rejection; null when the call did not
// reject.
type rejection struct {
	IsError bool   `json:"isError"`
	Name    string `json:"name"`
	Message string `json:"message"`
	Code    string `json:"code"`
	Field   string `json:"field"`
	Status  int    `json:"status"`
}

// errorPath is one way to make the JS API reject, the code it must carry,
// and the field it must name ("" for none).
type errorPath struct {
	Name  string     `json:"name"`
	Code  string     `json:"code"`
	Field string     `json:"field"`
	Got   *rejection `json:"got"`
}

// errorPathsScript makes the JS API reject in every way we know of, one
// call at a time (some replace Worker or fetch while they run), and returns
// []errorPath. Tried: bad arguments and options made in the page and in Go,
// bad model bytes, missing files, the network, aborted loads, callbacks and
// getters that throw, a worker that cannot start or dies, a split model's
// worker that dies, and every method after unload().
const errorPathsScript = `
	const paths = [];
	const add = (name, code, field, run) => paths.push({ name, code, field, run });
	const drain = async (iterable) => { for await (const _ of iterable) {} };
	const aborted = () => { const ac = new AbortController(); ac.abort(new Error('the reason')); return ac.signal; };
	const RealWorker = globalThis.Worker, realFetch = globalThis.fetch;
	// Runs load with Worker replaced by make(RealWorker); returns the model and the workers made.
	const withWorker = async (make, load) => {
		const made = [];
		globalThis.Worker = make(RealWorker, made);
		try { return { lm: await load(), made }; } finally { globalThis.Worker = RealWorker; }
	};
	const tracking = (W, made) => class extends W { constructor(url, opts) { super(url, opts); this.wasmlmName = opts?.name; made.push(this); } };
	const withFetch = async (fake, run) => {
		globalThis.fetch = (url, opts) => fake(String(url)) ?? realFetch(url, opts);
		try { return await run(); } finally { globalThis.fetch = realFetch; }
	};
	const messages = [{ role: 'user', content: 'Once upon a time' }];
	const defaultBytes = new Uint8Array(await (await fetch(DEFAULT_MODEL.model)).arrayBuffer());
	const v4 = defaultBytes.slice(); v4[4] = 4; // GGUF version 4: well formed, not supported
	const gguf = new Uint8Array(64); gguf.set([71, 71, 85, 70, 3]); // "GGUF", version 3, then zeros

	// Loads.
	add('load(42)', 'invalid_argument', 'source', () => WasmLM.load(42));
	add('load({})', 'invalid_argument', 'source', () => WasmLM.load({ url: 'x' }));
	add('load of a malformed URL', 'invalid_argument', 'source', () => WasmLM.load('http://['));
	add('load of a 404 URL', 'fetch_failed', '', () => WasmLM.load('/no/such/model.gguf'));
	add('load with the network down', 'fetch_failed', '', () =>
		withFetch((u) => (u.endsWith('/offline.gguf') ? Promise.reject(new TypeError('Failed to fetch')) : null),
			() => WasmLM.load('/offline.gguf', { cache: false })));
	add('load with options 5', 'invalid_argument', 'options', () => WasmLM.load(undefined, 5));
	add('load with an unknown option', 'invalid_argument', '', () => WasmLM.load(undefined, { tokeniser: 1 }));
	add("load with workers: 'lots'", 'invalid_argument', 'workers', () => WasmLM.load(undefined, { workers: 'lots' }));
	add('load with workers: 0', 'invalid_argument', 'workers', () => WasmLM.load(undefined, { workers: 0 }));
	add('load with more workers than key/value heads', 'invalid_argument', 'workers', () => WasmLM.load(undefined, { workers: 5 }));
	add('load with signal: {}', 'invalid_argument', 'signal', () => WasmLM.load(undefined, { signal: {} }));
	add('load with an aborted signal', 'aborted', '', () => WasmLM.load(undefined, { signal: aborted() }));
	add('load aborted while it downloads', 'aborted', '', () => {
		const ac = new AbortController();
		return WasmLM.load(undefined, { cache: false, signal: ac.signal, onProgress: () => ac.abort() });
	});
	add('load with onProgress: 5', 'invalid_argument', 'onProgress', () => WasmLM.load(undefined, { onProgress: 5 }));
	add('load whose onProgress throws', 'js_exception', '', () =>
		WasmLM.load(undefined, { onProgress: () => { throw new Error('progress says no'); } }));
	add("load with simd: 'yes'", 'invalid_argument', 'simd', () => WasmLM.load(undefined, { simd: 'yes' }));
	add("load with cache: 'no'", 'invalid_argument', 'cache', () => WasmLM.load(undefined, { cache: 'no' }));
	add('load with name: 7', 'invalid_argument', 'name', () => WasmLM.load(undefined, { name: 7 }));
	add('load with tokenizer: 42', 'invalid_argument', 'tokenizer', () => WasmLM.load(undefined, { tokenizer: 42 }));
	add('load with contextLength: -1', 'invalid_argument', 'contextLength', () => WasmLM.load(undefined, { contextLength: -1 }));
	add('load with contextLength: a function', 'invalid_argument', 'contextLength', () => WasmLM.load(undefined, { contextLength: () => 1 }));
	add('load of three bytes', 'invalid_model', '', () => WasmLM.load(new Uint8Array([1, 2, 3])));
	add('load of a GGUF header and zeros', 'invalid_model', '', () => WasmLM.load(gguf));
	add('load of a truncated model', 'invalid_model', '', () => WasmLM.load(defaultBytes.slice(0, 5000)));
	add('load of a GGUF version 4 file', 'unsupported_model', '', () => WasmLM.load(v4));
	add('load of a model too large for the workers asked', 'model_too_large', '', () => WasmLM.load('/__e2e__/files/huge.gguf', { workers: 1 }));
	add('load of bytes whose SHA-256 is not the one given', 'integrity_failed', '', () => WasmLM.load(defaultBytes, { sha256: '0'.repeat(64) }));
	add('load of a URL whose SHA-256 is not the one given', 'integrity_failed', '', () => WasmLM.load(DEFAULT_MODEL.model, { cache: false, sha256: 'f'.repeat(64) }));
	add("load with sha256: 'abc'", 'invalid_argument', 'sha256', () => WasmLM.load(undefined, { sha256: 'abc' }));
	add("load with kvType: 'q8_0'", 'invalid_argument', 'kvType', () => WasmLM.load(undefined, { kvType: 'q8_0' }));
	add("load with serve: 'yes'", 'invalid_argument', 'serve', () => WasmLM.load(undefined, { serve: 'yes' }));
	add("load with device: 'gpu'", 'invalid_argument', 'device', () => WasmLM.load(undefined, { device: 'gpu' }));
	add("load with device: 'webgpu' and workers: 2", 'invalid_argument', 'workers', () => WasmLM.load(undefined, { device: 'webgpu', workers: 2 }));
	add("load with device: 'webgpu' where navigator.gpu has no adapter", 'device_unsupported', '', () => WasmLM.load(undefined, { device: 'webgpu' }));
	add('load of an empty array of parts', 'invalid_argument', 'source', () => WasmLM.load([]));
	add('load of two whole models as the parts of one', 'invalid_model', '', () => WasmLM.load([new Blob([defaultBytes]), new Blob([defaultBytes])]));
	add('inspect of a llama2.c checkpoint', 'invalid_model', '', () => WasmLM.inspect('` + llama2cDir + `stories260K.bin'));
	add("inspect with workers: 'two'", 'invalid_argument', 'workers', () => WasmLM.inspect(undefined, { workers: 'two' }));
	add('load where the browser refuses the worker', 'worker_failed', '', () =>
		withWorker(() => function () { throw new DOMException('refused by a policy', 'SecurityError'); }, () => WasmLM.load()));
	add('load whose worker script is missing', 'worker_failed', '', () =>
		withWorker((W) => class extends W { constructor(url, opts) { super('/no/such/wasmlm.worker.js', opts); } }, () => WasmLM.load()));
	add('load whose wasmlm.wasm is missing', 'fetch_failed', '', () =>
		withFetch((u) => (u.endsWith('/wasmlm.wasm') ? Promise.resolve(new Response('no', { status: 404, statusText: 'Not Found' })) : null),
			async () => (await import('/wasmlm.js?wasm=missing')).WasmLM.load()));
	add('load whose wasmlm.wasm does not compile', 'worker_failed', '', () =>
		withFetch((u) => (u.endsWith('/wasmlm.wasm') ? Promise.resolve(new Response(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 99]), { headers: { 'content-type': 'application/wasm' } })) : null),
			async () => (await import('/wasmlm.js?wasm=broken')).WasmLM.load()));
	add('load with serve: true whose wasmlm-serve.wasm is missing', 'fetch_failed', '', () =>
		withFetch((u) => (u.endsWith('/wasmlm-serve.wasm') ? Promise.resolve(new Response('no', { status: 404, statusText: 'Not Found' })) : null),
			async () => (await import('/wasmlm.js?wasm=serve-missing')).WasmLM.load(undefined, { serve: true })));

	// Calls on a loaded model.
	const lm = await WasmLM.load();
	add('generate(42)', 'invalid_argument', 'prompt', () => lm.generate(42));
	add("generate('x', 5)", 'invalid_argument', 'options', () => lm.generate('x', 5));
	add('generate with topK: -1', 'invalid_argument', 'topK', () => lm.generate('x', { topK: -1 }));
	add("generate with temperature: 'hot'", 'invalid_argument', 'temperature', () => lm.generate('x', { temperature: 'hot' }));
	add('generate with an unknown option', 'invalid_argument', '', () => lm.generate('x', { temprature: 1 }));
	add('generate with signal: {}', 'invalid_argument', 'signal', () => lm.generate('x', { signal: {} }));
	add('generate with a function in the options', 'invalid_argument', 'stop', () => lm.generate('x', { stop: () => '.' }));
	add('generate with a getter that throws', 'js_exception', '', () =>
		lm.generate('x', { get topK() { throw new Error('getter says no'); } }));
	add('generate with a prompt longer than the context', 'prompt_too_long', '', () => lm.generate('Once upon a time '.repeat(200)));
	add('stream with topK: -1 (iterating)', 'invalid_argument', 'topK', () => drain(lm.stream('x', { topK: -1 })));
	add('stream with topK: -1 (result)', 'invalid_argument', 'topK', () => lm.stream('x', { topK: -1 }).result);
	add('stream with signal: {}', 'invalid_argument', 'signal', () => drain(lm.stream('x', { signal: {} })));
	add('tokenize(42)', 'invalid_argument', 'text', () => lm.tokenize(42));
	add('tokenize with addBos: 1', 'invalid_argument', 'addBos', () => lm.tokenize('x', { addBos: 1 }));
	add("detokenize('x')", 'invalid_argument', 'ids', () => lm.detokenize('x'));
	add('detokenize of an id outside the vocabulary', 'invalid_argument', 'ids[1]', () => lm.detokenize([1, 99999]));
	add('chat create(null)', 'invalid_argument', '', () => lm.chat.completions.create(null));
	add('chat with n: 2', 'invalid_argument', 'n', () => lm.chat.completions.create({ messages, n: 2 }));
	add('chat with no messages', 'invalid_argument', 'messages', () => lm.chat.completions.create({ messages: [] }));
	add('chat with content 5', 'invalid_argument', 'messages[0].content', () =>
		lm.chat.completions.create({ messages: [{ role: 'user', content: 5 }] }));
	add('chat with top_p: 7', 'invalid_argument', 'top_p', () => lm.chat.completions.create({ messages, top_p: 7 }));
	add('chat with signal: {}', 'invalid_argument', 'signal', () => lm.chat.completions.create({ messages }, { signal: {} }));
	add('chat stream with top_k: -1', 'invalid_argument', 'top_k', async () =>
		drain(await lm.chat.completions.create({ messages, stream: true, top_k: -1 })));
	add('chat stream with n: 2', 'invalid_argument', 'n', () => lm.chat.completions.create({ messages, stream: true, n: 2 }));
	add('chat with a BigInt seed', 'invalid_argument', 'seed', () => lm.chat.completions.create({ messages, seed: 1n }));
	add('chat with temperature: NaN', 'invalid_argument', 'temperature', () => lm.chat.completions.create({ messages, temperature: NaN }));
	add('chat with a function for a content', 'invalid_argument', 'messages[0].content', () =>
		lm.chat.completions.create({ messages: [{ role: 'user', content: () => 'x' }] }));
	add('chat with a body that contains itself', 'invalid_argument', 'metadata.self', () => {
		const metadata = {};
		metadata.self = metadata;
		return lm.chat.completions.create({ messages, metadata });
	});
	add('chat with a prompt longer than the context', 'prompt_too_long', 'messages', () =>
		lm.chat.completions.create({ messages: [{ role: 'user', content: 'Once upon a time '.repeat(200) }] }));
	add('serve of a model loaded without { serve: true }', 'serve_failed', '', () => lm.serve());

	// A BigInt (which no argument or option takes: the Go side reads
	// numbers), a symbol or function (which a worker cannot receive) or a
	// value of the wrong type in every argument and option of every method:
	// invalid_argument naming the field, its path when nested.
	const big = 7n;
	const schema = (s) => ({ responseFormat: { type: 'json_schema', json_schema: { name: 'n', schema: s } } });
	const chat = (fields, opts) => lm.chat.completions.create({ messages, max_tokens: 2, ...fields }, opts);
	const chatStream = async (fields) => drain(await chat({ stream: true, ...fields }));
	const typed = [
		['WasmLM.load', 'source', () => WasmLM.load(big)],
		['WasmLM.load', 'options', () => WasmLM.load(undefined, big)],
		['WasmLM.load', 'source.name', () => WasmLM.load({ model: DEFAULT_MODEL.model, name: big })],
		...['contextLength', 'workers', 'name', 'sha256', 'kvType', 'cache', 'simd', 'serve', 'device', 'onProgress', 'signal', 'tokenizer']
			.map((k) => ['WasmLM.load', k, () => WasmLM.load(undefined, { [k]: big })]),
		['WasmLM.inspect', 'source', () => WasmLM.inspect(big)],
		['WasmLM.inspect', 'options', () => WasmLM.inspect(undefined, big)],
		...['contextLength', 'workers', 'kvType', 'device', 'signal'].map((k) => ['WasmLM.inspect', k, () => WasmLM.inspect(undefined, { [k]: big })]),
		['WasmLM.serve', 'options', () => WasmLM.serve(big)],
		['WasmLM.serve', 'model', () => WasmLM.serve({ model: big })],
		['WasmLM.cache.delete', 'url', () => WasmLM.cache.delete(big)],
		['lm.serve', 'options', () => lm.serve(big)],
		...['scope', 'workerScope', 'serviceWorker'].map((k) => ['lm.serve', k, () => lm.serve({ [k]: big })]),
		['generate', 'prompt', () => lm.generate(big)],
		['generate', 'options', () => lm.generate('x', big)],
		...['maxTokens', 'temperature', 'topK', 'topP', 'minP', 'repeatPenalty', 'presencePenalty', 'frequencyPenalty', 'seed',
			'stop', 'trace', 'signal', 'onPromptProgress', 'grammar', 'responseFormat'].map((k) => ['generate', k, () => lm.generate('x', { [k]: big })]),
		['generate', 'stop[1]', () => lm.generate('x', { stop: ['a', big] })],
		['generate', 'stop[0]', () => lm.generate('x', { stop: [() => '.'] })],
		['generate', 'seed', () => lm.generate('x', { seed: Symbol('seed') })],
		['generate', 'responseFormat.type', () => lm.generate('x', { responseFormat: { type: 5 } })],
		['generate', 'responseFormat.json_schema.schema.maxLength', () => lm.generate('x', schema({ type: 'string', maxLength: big }))],
		['stream', 'prompt', () => drain(lm.stream(big))],
		['stream', 'topK', () => drain(lm.stream('x', { topK: big }))],
		['stream', 'stop[0]', () => lm.stream('x', { stop: [big] }).result],
		['tokenize', 'text', () => lm.tokenize(big)],
		['tokenize', 'options', () => lm.tokenize('x', big)],
		['tokenize', 'addBos', () => lm.tokenize('x', { addBos: big })],
		['tokenize', 'special', () => lm.tokenize('x', { special: big })],
		['tokenize', 'special', () => lm.tokenize('x', { special: () => true })],
		['detokenize', 'ids', () => lm.detokenize(big)],
		['detokenize', 'ids[1]', () => lm.detokenize([1, big])],
		['chat.completions.create', 'options', () => chat({}, big)],
		['chat.completions.create', 'stream', () => chat({ stream: 'yes' })],
		['chat.completions.create', 'stream', () => chat({ stream: big })],
		['chat.completions.create', 'stream_options', () => chatStream({ stream_options: 5 })],
		['chat.completions.create', 'stream_options.include_usage', () => chatStream({ stream_options: { include_usage: 'yes' } })],
		['chat.completions.create', 'max_tokens', () => chat({ max_tokens: big })],
		['chat.completions.create', 'max_tokens', () => chat({ max_tokens: 'ten' })],
		['chat.completions.create', 'seed', () => chat({ seed: '42' })],
		['chat.completions.create', 'n', () => chat({ n: big })],
		['chat.completions.create', 'temperature', () => chatStream({ temperature: big })],
		['chat.completions.create', 'logit_bias.1', () => chat({ logit_bias: { 1: big } })],
		['chat.completions.create', 'logit_bias', () => chat({ logit_bias: [1] })],
		['chat.completions.create', 'response_format', () => chat({ response_format: 'json' })],
		['chat.completions.create', 'response_format.type', () => chat({ response_format: { type: big } })],
		['chat.completions.create', 'tools', () => chat({ tools: big })],
		['chat.completions.create', 'tools[0].function.name', () => chat({ tools: [{ type: 'function', function: { name: 5 } }] })],
		['chat.completions.create', 'tool_choice', () => chat({ tool_choice: big })],
		['chat.completions.create', 'messages', () => chat({ messages: big })],
		['chat.completions.create', 'messages[1].role', () => chat({ messages: [...messages, { role: 5, content: 'x' }] })],
		['chat.completions.create', 'messages[0].content', () => chatStream({ messages: [{ role: 'user', content: big }] })],
		['embeddings.create', 'input', () => lm.embeddings.create({ input: big })],
		['embeddings.create', 'input[1]', () => lm.embeddings.create({ input: ['a', big] })],
		...['dimensions', 'encoding_format', 'truncate', 'normalize', 'model', 'user'].map((k) => ['embeddings.create', k, () => lm.embeddings.create({ input: 'a', [k]: big })]),
		['embeddings.create', 'options', () => lm.embeddings.create({ input: 'a' }, big)],
		['rerank', 'query', () => lm.rerank({ query: big, documents: ['a'] })],
		['rerank', 'documents[1]', () => lm.rerank({ query: 'q', documents: ['a', big] })],
		...['top_n', 'return_documents', 'truncate', 'model'].map((k) => ['rerank', k, () => lm.rerank({ query: 'q', documents: ['a'], [k]: big })]),
		['rerank', 'options', () => lm.rerank({ query: 'q', documents: ['a'] }, big)],
	];
	for (const [method, field, run] of typed) add(method + ': ' + String(run).replace(/^\(\) => /, ''), 'invalid_argument', field, run);

	// After unload(): the calls it cut short, and every later one.
	const gone = await WasmLM.load();
	const cut = gone.generate('', { maxTokens: 0, temperature: 0 });
	cut.catch(() => {});
	const cutStream = gone.stream('', { maxTokens: 0 });
	gone.unload();
	add('a generation unload() cut short', 'no_model', '', () => cut);
	add('a stream unload() cut short', 'no_model', '', () => drain(cutStream));
	add('generate after unload()', 'no_model', '', () => gone.generate('x'));
	add('stream after unload() (iterating)', 'no_model', '', () => drain(gone.stream('x')));
	add('stream after unload() (result)', 'no_model', '', () => gone.stream('x').result);
	add('tokenize after unload()', 'no_model', '', () => gone.tokenize('x'));
	add('detokenize after unload()', 'no_model', '', () => gone.detokenize([1]));
	add('chat after unload()', 'no_model', '', () => gone.chat.completions.create({ messages }));
	add('chat stream after unload()', 'no_model', '', async () => drain(await gone.chat.completions.create({ messages, stream: true })));

	// A worker that dies: an uncaught error in it (the error event), the Go
	// program exiting (its fatal message), a split model's other worker.
	add('a generation whose worker fails', 'worker_failed', '', async () => {
		const { lm, made } = await withWorker(tracking, () => WasmLM.load());
		const pending = lm.generate('', { maxTokens: 0, temperature: 0 });
		made[0].dispatchEvent(new ErrorEvent('error', { message: 'the worker crashed' }));
		return pending;
	});
	add('a call after the worker failed', 'worker_failed', '', async () => {
		const { lm, made } = await withWorker(tracking, () => WasmLM.load());
		made[0].dispatchEvent(new ErrorEvent('error', { message: 'the worker crashed' }));
		return lm.tokenize('x');
	});
	add('a call after the Go program exited', 'worker_failed', '', async () => {
		const { lm, made } = await withWorker(tracking, () => WasmLM.load());
		made[0].dispatchEvent(new MessageEvent('message', { data: { type: 'fatal', message: 'the Go program exited (code 2)' } }));
		return lm.generate('x');
	});
	add('a call after a split model lost a worker', 'worker_failed', '', async () => {
		const { lm, made } = await withWorker(tracking, () => WasmLM.load(undefined, { workers: 2 }));
		made.find((w) => w.wasmlmName === 'wasmlm-1').dispatchEvent(new ErrorEvent('error', { message: 'worker 1 crashed' }));
		return lm.generate('x');
	});

	const out = [];
	for (const p of paths) {
		let got = null;
		try {
			const value = await p.run();
			if (value && typeof value.unload === 'function') value.unload(); // a load that should have failed
		} catch (e) {
			got = { isError: e instanceof Error, name: String(e?.name ?? ''), message: String(e?.message ?? e),
				code: typeof e?.code === 'string' ? e.code : '', field: typeof e?.field === 'string' ? e.field : '',
				status: typeof e?.status === 'number' ? e.status : 0 };
		}
		out.push({ name: p.name, code: p.code, field: p.field, got });
	}
	lm.unload();
	const after = await WasmLM.load();
	const { tokens } = await after.generate('Once upon a time', { temperature: 0, maxTokens: 10 });
	after.unload();
	return { paths: out, after: tokens };
`

// Every way we know to make the JS API reject gives an Error with a code
// from the documented list (wasmlm.d.ts's ErrorCode, which web/README.md
// lists): the right code and, for an invalid argument or option, the right
// field; the page can load and generate afterwards.
func TestBrowserEveryRejectionHasACode(t *testing.T) {
	codes := documentedErrorCodes(t)
	tb := newTab(t, blankPage)
	tb.expect("404") // the missing model and worker script
	// An 8B-shape model's header and zeros: 4.1 GB that no load reads past the header.
	big, err := modelgen.Header(modelgen.Spec{Shape: modelgen.Llama8B(), Type: tensor.Q4_0})
	require.NoError(t, err)
	serveReader(t, tb.site, "huge.gguf", int64(big.Size), func() io.ReadSeeker { return &zeroTail{header: big.Header, size: int64(big.Size)} })
	got := eval[struct {
		Paths []errorPath `json:"paths"`
		After []int       `json:"after"`
	}](t, tb, apiScript(errorPathsScript))
	require.NotEmpty(t, got.Paths)
	seen, wanted := map[string]int{}, map[string]int{}
	bigInts := 0 // the calls of the table of mistyped fields that pass a BigInt
	for _, p := range got.Paths {
		wanted[p.Code]++
		if strings.Contains(p.Name, "big") {
			bigInts++
		}
		e := p.Got
		if !assert.NotNil(t, e, "%s: did not reject", p.Name) {
			continue
		}
		seen[e.Code]++
		assert.True(t, e.IsError, "%s: rejected with a %s, not an Error", p.Name, e.Name)
		assert.Contains(t, codes, e.Code, "%s: code %q is not documented (%s)", p.Name, e.Code, e.Message)
		assert.Equal(t, p.Code, e.Code, "%s: %s", p.Name, e.Message)
		assert.Equal(t, p.Field, e.Field, "%s: field (%s)", p.Name, e.Message)
		assert.NotEmpty(t, e.Message, p.Name)
		if p.Name == "load of a 404 URL" {
			assert.Equal(t, 404, e.Status, "the status of a fetch_failed")
		}
		if e.Code == "aborted" {
			assert.Equal(t, "AbortError", e.Name, p.Name)
		}
	}
	assert.Equal(t, golden.RuncStories260K(t).Runs[1].GeneratedIDs[:10], got.After, "the page loads and generates after them all")
	t.Logf("%d error paths, codes: %v", len(got.Paths), seen)
	assert.Contains(t, reliabilitySection(t), errorPathsSummary(len(got.Paths), wanted), "web/README.md's Reliability table")
	assert.Contains(t, reliabilitySection(t), fmt.Sprintf("a `BigInt` (%d calls)", bigInts), "web/README.md's Reliability table")
}

// errorPathsSummary is how web/README.md's Reliability table counts the
// error paths: "66 error paths (38 invalid_argument, 9 no_model, ...)", the
// most frequent code first.
func errorPathsSummary(n int, byCode map[string]int) string {
	codes := slices.Collect(maps.Keys(byCode))
	slices.SortFunc(codes, func(a, b string) int {
		return cmp.Or(cmp.Compare(byCode[b], byCode[a]), strings.Compare(a, b))
	})
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d %s", byCode[c], c)
	}
	return fmt.Sprintf("%d error paths (%s)", n, strings.Join(parts, ", "))
}

// reliabilitySection is the "Reliability" sections of web/README.md and
// docs/reliability.md, whose tables the page's tests keep true
// (docs/reliability.md has the page's rows among the server's and the model
// files').
func reliabilitySection(t *testing.T) string {
	t.Helper()
	var sections []string
	for _, doc := range []string{filepath.Join("web", "README.md"), filepath.Join("docs", "reliability.md")} {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), doc))
		require.NoError(t, err)
		_, section, ok := strings.Cut("\n"+string(b), "\n"+reliabilityHeading(doc)+"\n")
		require.True(t, ok, "%s has no Reliability section", doc)
		section, _, _ = strings.Cut(section, "\n## ")
		sections = append(sections, section)
	}
	// A phrase must be in both: Contains on their join would accept one.
	return commonText(sections[0], sections[1])
}

// reliabilityHeading is the heading of a document's Reliability table: a
// section of web/README.md, the title of docs/reliability.md.
func reliabilityHeading(doc string) string {
	if filepath.Base(doc) == "reliability.md" {
		return "# Reliability"
	}
	return "## Reliability"
}

// commonText keeps the lines of a that b also holds, word for word.
func commonText(a, b string) string {
	var kept []string
	for _, line := range strings.Split(a, "\n") {
		for _, cell := range strings.Split(line, "|") {
			if cell = strings.TrimSpace(cell); cell != "" && strings.Contains(b, cell) {
				kept = append(kept, cell)
			}
		}
	}
	return strings.Join(kept, "\n")
}

// documentedErrorCodes are the codes of wasmlm.d.ts's ErrorCode type; a
// test fails if web/README.md, the JS API's reference, leaves one out.
func documentedErrorCodes(t *testing.T) []string {
	t.Helper()
	root := repoRoot(t)
	dts, err := os.ReadFile(filepath.Join(root, "web", "wasmlm.d.ts"))
	require.NoError(t, err)
	block := regexp.MustCompile(`(?s)export type ErrorCode =(.*?)\n\n`).FindSubmatch(dts)
	require.NotNil(t, block, "wasmlm.d.ts has no ErrorCode type")
	var codes []string
	for _, m := range regexp.MustCompile(`(?m)^\s*\| '([a-z_]+)'`).FindAllSubmatch(block[1], -1) {
		codes = append(codes, string(m[1]))
	}
	require.NotEmpty(t, codes)
	b, err := os.ReadFile(filepath.Join(root, "web", "README.md"))
	require.NoError(t, err)
	for _, c := range codes {
		assert.Contains(t, string(b), "`"+c+"`", "web/README.md does not list the error code %s", c)
	}
	return codes
}
