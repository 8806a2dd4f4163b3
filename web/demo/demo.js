// demo.js: the demo page. It uses only the public API of wasmlm.js. The page
// runs from the built site (make web), where its files sit beside the
// library's, laid out as the npm package lays them out: hence './wasmlm.js'.
import { WasmLM } from './wasmlm.js';
import { DEFAULT_MODEL } from './default-model.js';
import { setupChat } from './chat-demo.js';

const $ = (id) => document.getElementById(id);
const el = {
  status: $('status'), progress: $('progress'), modelInfo: $('model-info'), message: $('message'), device: $('device'),
  modelFile: $('model-file'), tokenizerRow: $('tokenizer-row'), tokenizerFile: $('tokenizer-file'),
  modelURLForm: $('model-url-form'), modelURL: $('model-url'), modelURLLoad: $('model-url-load'),
  prompt: $('prompt'), temperature: $('temperature'), topP: $('top-p'), minP: $('min-p'),
  topK: $('top-k'), maxTokens: $('max-tokens'), seed: $('seed'), json: $('json'),
  generate: $('generate'), stop: $('stop'), output: $('output'),
  ttft: $('ttft'), tps: $('tps'), ntokens: $('ntokens'), finish: $('finish'), usedSeed: $('used-seed'),
  traceTitle: $('trace-title'), traceBody: document.querySelector('#trace tbody'), traceSummary: $('trace-summary'),
  main: document.querySelector('main'), encoderNote: $('encoder-note'),
  query: $('query'), texts: $('texts'), compare: $('compare'), compareStats: $('compare-stats'),
  rankingBody: document.querySelector('#ranking tbody'), scoreHead: $('score-head'),
};

// The page's state, also on globalThis.wasmlmDemo for the console (and tests):
// wasmlmDemo.lm is the loaded model; readyMs is how long its load took, and
// readyAt when it ended (ms since the page started to load); state is
// setState's; running is the generation under way, {mode: 'completion' or
// 'chat', controller} (its AbortController), or null: run sets and clears
// it, and nothing else does.
// loaded is the last load asked for, {source, options, label}: a new device
// choice loads it again.
const demo = { lm: null, readyMs: null, readyAt: null, state: 'loading', running: null, traces: [], pinned: -1, loaded: null, device: 'auto' };
globalThis.wasmlmDemo = demo;

const MB = 1024 * 1024;
const fmtBytes = (n) => (n >= MB ? `${(n / MB).toFixed(1)} MB` : `${Math.ceil(n / 1024)} kB`);
const fmtCount = (n) => (n >= 1e9 ? `${(n / 1e9).toFixed(1)}B` : n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${Math.round(n / 1e3)}K` : `${n}`);
const pct = (p) => (p >= 0.995 ? '100%' : p >= 0.1 ? `${(p * 100).toFixed(0)}%` : p >= 0.001 ? `${(p * 100).toFixed(1)}%` : p > 0 ? '<0.1%' : '0');
// The model file in a few words: "588 kB GGUF (F16)". The weights' type is the
// tensor type that holds the most bytes: the F32 norms and biases beside the
// matrices can outnumber them (a BERT layer has ten to six), never outweigh them.
function fmtFile(info) {
  const [type] = Object.entries(info.tensorBytes ?? {}).reduce((best, e) => (e[1] > best[1] ? e : best), ['', 0]);
  return `${fmtBytes(info.fileSize)} ${info.format === 'gguf' ? 'GGUF' : 'llama2.c'}${type ? ` (${type})` : ''}`;
}
// Whitespace made visible, so a candidate " the" differs from "the".
// Other control characters (a vocabulary's byte tokens <0x00>…<0x1F>) show as
// their Control Pictures (␀, ␁, …), which every font draws.
const visible = (s) => s.replace(/ /g, '␣').replace(/\n/g, '↵').replace(/\t/g, '⇥')
  .replace(/[\x00-\x08\x0b-\x1f]/g, (c) => String.fromCharCode(0x2400 + c.charCodeAt(0))).replace(/\x7f/g, '␡') || '∅';

/**
 * Sets the page's state — 'loading' a model, 'ready', 'error' (no model),
 * 'generating' (demo.running says which mode) or 'comparing' — and the
 * status line; every control of the page, the chat's included, follows
 * from the state and demo.running here, and nowhere else. A generation or
 * a comparison starts only from 'ready', so one thing runs at a time.
 */
function setState(state, text) {
  demo.state = state;
  el.status.dataset.state = state;
  el.status.textContent = text;
  const busy = state === 'generating' || state === 'comparing';
  el.generate.disabled = state !== 'ready' || !generates();
  el.stop.disabled = demo.running?.mode !== 'completion';
  el.compare.disabled = state !== 'ready';
  el.modelFile.disabled = busy;
  el.modelURLLoad.disabled = busy;
  el.device.disabled = busy || state === 'loading';
  chat.sync();
}

/**
 * Runs a generation of mode ('completion' or 'chat'), one at a time
 * whichever mode starts it: while work(signal) runs, demo.running holds
 * its AbortController and the state is 'generating' (text: the status);
 * then running is cleared first, and the state is 'ready' with the status
 * work returned ('Done', 'Stopped'), or 'Failed' with its error's message
 * shown. It returns false, doing nothing, unless the state is 'ready'.
 */
async function run(mode, text, work) {
  if (demo.state !== 'ready' || demo.running) return false;
  const controller = new AbortController();
  demo.running = { mode, controller };
  showMessage('');
  setState('generating', text);
  let status = 'Failed';
  try {
    status = await work(controller.signal);
  } catch (err) {
    showMessage(err.message);
  } finally {
    demo.running = null;
    setState('ready', status);
  }
  return true;
}

/** Whether the loaded model generates text (an embedding model only embeds or ranks it). */
const generates = () => demo.lm?.info.generates === true;

/**
 * Shows what the loaded model does: a model that does not generate (an
 * embedding model, a reranker) gets no playground, only the similarity
 * panel, and a note that says so.
 */
function showCapabilities(lm) {
  const { generates: gen, reranks, architecture } = lm.info;
  el.main.hidden = !gen;
  el.encoderNote.hidden = gen;
  el.encoderNote.textContent = gen ? '' : `${lm.name} is ${reranks ? 'a reranker' : 'an embedding model'} (${architecture}): `
    + `it ${reranks ? 'scores texts against a query' : 'turns text into vectors'} and does not generate text. Compare texts below.`;
  el.scoreHead.textContent = reranks ? 'relevance score' : 'similarity';
  el.rankingBody.replaceChildren();
  el.compareStats.textContent = '';
}

function showMessage(text) {
  el.message.hidden = !text;
  el.message.textContent = text ?? '';
}

/**
 * What the parameter count counts: every value of the file's tensors. A
 * model whose output matrix is the token embedding's (a shared output) has
 * it once; a file that stores the output apart counts its vocabulary ×
 * embedding values twice, as stories260K's GGUF file does: 260,032 in
 * llama2.c's count, 292,800 in the file.
 */
function paramsNote(i) {
  const n = i.parameters.toLocaleString('en');
  if (i.sharedOutput || !i.generates) return `${n}: every value of the file's tensors.`;
  const out = (i.vocabSize * i.embeddingLength).toLocaleString('en');
  return `${n}: every value of the file's tensors, the output matrix (${i.vocabSize} × ${i.embeddingLength} = ${out}) included, `
    + 'which this file stores apart from the token embedding: a count of the model that shares them has it once.';
}

/** Where the model runs, for the info line: the GPU's adapter, or the CPU and why not the GPU. */
function fmtDevice(info) {
  if (info.device !== 'webgpu') return `CPU${info.deviceReason ? ` (not the GPU: ${info.deviceReason})` : ''}`;
  const a = info.adapter ?? {};
  const name = [a.vendor, a.architecture].filter(Boolean).join(' ') || a.description || 'an unnamed adapter';
  return `WebGPU on ${name}${a.fallback ? ' (a software adapter)' : ''}`;
}

/** Loads a model with the device chosen, replacing the current one only once the new one works. */
async function loadModel(source, options, label) {
  const before = { loaded: demo.loaded, device: demo.device };
  demo.loaded = { source, options, label };
  const started = performance.now();
  const previous = demo.lm;
  setState('loading', `Loading ${label}…`);
  showMessage('');
  el.progress.hidden = false;
  el.progress.removeAttribute('value');
  let cached = false;
  try {
    const lm = await WasmLM.load(source, {
      ...options,
      device: el.device.value,
      // The chat's conversations go on past the context (chat-demo.js), for
      // the models that can shift it; the others end there, as without it.
      contextShift: true,
      onProgress({ loaded, total, cached: fromCache }) {
        cached = fromCache;
        if (total) {
          el.progress.max = total;
          el.progress.value = loaded;
          el.status.textContent = `Loading ${label}… ${fmtBytes(loaded)} / ${fmtBytes(total)}`;
        }
      },
    });
    previous?.unload();
    demo.lm = lm;
    demo.device = el.device.value;
    demo.readyAt = performance.now();
    demo.readyMs = demo.readyAt - started;
    const i = lm.info;
    const params = Object.assign(document.createElement('span'), {
      className: 'explained', textContent: `${fmtCount(i.parameters)} parameters`, title: paramsNote(i),
    });
    el.modelInfo.replaceChildren(Object.assign(document.createElement('strong'), { id: 'model-name', textContent: lm.name }), ' · ',
      `${i.architecture} · `, params, ' · ', [
      `vocabulary ${i.vocabSize}`,
      `context ${i.sessionContextLength}`, fmtFile(i),
      ...(i.generates ? [`chat template: ${i.chatTemplate ?? 'unknown'}`] : []),
      `${i.simd ? 'SIMD' : 'pure-Go'} kernels`, `${i.workers} worker${i.workers === 1 ? '' : 's'}`, fmtDevice(i),
      i.reranks ? 'reranker' : `embeddings of ${i.embeddingLength} (${i.pooling} pooling)`,
    ].join(' · '));
    showCapabilities(lm);
    chat.modelChanged(lm);
    setState('ready', `${lm.name} ready in ${Math.round(demo.readyMs)} ms${cached ? ' (from cache)' : ''}`);
  } catch (err) {
    if (previous) {
      // The model that still runs, and the device it was loaded for, stay chosen.
      demo.loaded = before.loaded;
      el.device.value = before.device;
    }
    setState(previous ? 'ready' : 'error', previous ? `${previous.name} ready` : 'No model loaded');
    showMessage(`Could not load ${label}: ${err.message}`);
  } finally {
    el.progress.hidden = true;
  }
}

/** The generation options from the controls. */
function options() {
  const num = (input) => Number(input.value);
  const o = {
    temperature: num(el.temperature), topP: num(el.topP), minP: num(el.minP),
    topK: Math.max(0, Math.trunc(num(el.topK))), maxTokens: Math.max(1, Math.trunc(num(el.maxTokens)) || 1), trace: true,
  };
  if (el.seed.value !== '') o.seed = Math.max(0, Math.trunc(num(el.seed)));
  if (el.json.checked) o.responseFormat = { type: 'json_object' };
  return o;
}

/** Generates from the prompt with the controls' options, drawing the text and each token's sampling as they come. */
function generate() {
  return run('completion', 'Generating…', async (signal) => {
    demo.traces = [];
    demo.pinned = -1;
    el.output.replaceChildren(Object.assign(document.createElement('span'), { className: 'prompt', textContent: el.prompt.value }));
    el.output.classList.add('running');
    for (const e of [el.ttft, el.tps, el.finish, el.usedSeed]) e.textContent = '–';
    el.ntokens.textContent = '0';
    const live = { started: performance.now(), first: 0, n: 0 };
    try {
      const stream = demo.lm.stream(el.prompt.value, { ...options(), signal });
      for await (const chunk of stream) {
        if (chunk.token >= 0 && !live.first) live.first = performance.now();
        if (chunk.token >= 0) live.n++;
        queueChunk(chunk, live);
      }
      flush(true);
      const r = await stream.result;
      el.ttft.textContent = `${r.timings.timeToFirstTokenMs.toFixed(1)} ms`;
      el.tps.textContent = r.timings.decodeTokens > 0 ? r.timings.decodeTokensPerSecond.toFixed(0) : '–';
      el.ntokens.textContent = String(r.usage.completionTokens);
      el.finish.textContent = r.finishReason;
      el.usedSeed.textContent = String(r.seed);
      return r.finishReason === 'abort' ? 'Stopped' : 'Done';
    } finally {
      flush(true);
      el.output.classList.remove('running');
    }
  });
}

/**
 * Ranks the texts (one per line) by how close each is to the query: the
 * cosine of their embeddings (unit vectors: their dot product), or with a
 * reranker its relevance score.
 */
async function compare() {
  const lm = demo.lm;
  const texts = el.texts.value.split('\n').map((t) => t.trim()).filter((t) => t !== '');
  if (!lm || demo.state !== 'ready' || texts.length === 0) return;
  showMessage('');
  el.rankingBody.replaceChildren(); // no earlier results beside a new query's error
  el.compareStats.textContent = '';
  if (el.query.value.trim() === '') {
    showMessage('Write a query to compare the texts with.');
    return;
  }
  setState('comparing', 'Comparing…');
  const started = performance.now();
  try {
    let rows;
    let tokens;
    if (lm.info.reranks) {
      const r = await lm.rerank({ query: el.query.value, documents: texts });
      rows = r.results.map((x) => ({ text: texts[x.index], score: x.relevance_score, bar: 1 / (1 + Math.exp(-x.relevance_score)) }));
      tokens = r.usage.prompt_tokens;
    } else {
      const r = await lm.embeddings.create({ input: [el.query.value, ...texts] });
      const [query, ...vectors] = r.data.map((d) => d.embedding);
      const cosine = (v) => v.reduce((sum, x, i) => sum + x * query[i], 0);
      rows = vectors.map((v, i) => ({ text: texts[i], score: cosine(v), bar: Math.max(0, cosine(v)) }));
      rows.sort((a, b) => b.score - a.score);
      tokens = r.usage.prompt_tokens;
    }
    el.rankingBody.replaceChildren(...rows.map(({ text, score, bar }) => {
      const tr = document.createElement('tr');
      const name = document.createElement('td');
      name.textContent = text;
      const cell = document.createElement('td');
      cell.className = 'score';
      const b = document.createElement('div');
      b.className = 'bar';
      const fill = document.createElement('i');
      fill.style.width = `${Math.min(100, bar * 100)}%`;
      const label = document.createElement('span');
      label.textContent = score.toFixed(3);
      b.append(fill, label);
      cell.append(b);
      tr.append(name, cell);
      return tr;
    }));
    el.compareStats.textContent = `${tokens} tokens in ${Math.round(performance.now() - started)} ms`;
    setState('ready', 'Done');
  } catch (err) {
    showMessage(err.message);
    setState('ready', 'Failed');
  }
}

// Chunks are drawn once per animation frame, not once per token: the page
// then costs the same at 50 or 5000 tokens/s, and leaves the CPU to the model.
let pending = [];
let frame = 0;
let liveStats = null;
let lastDrawn = 0;

function queueChunk(chunk, live) {
  pending.push(chunk);
  liveStats = live;
  frame ||= requestAnimationFrame(() => flush(false));
}

// flush draws the queued chunks; the table and the stats only when force is
// true or 100 ms have passed.
function flush(force) {
  cancelAnimationFrame(frame);
  frame = 0;
  const spans = document.createDocumentFragment();
  for (const chunk of pending) {
    if (chunk.text === '' && !chunk.trace) continue;
    const span = document.createElement('span');
    span.textContent = chunk.text;
    if (chunk.trace) {
      span.className = 'tok';
      span.dataset.index = String(demo.traces.length);
      demo.traces.push({ text: chunk.text, trace: chunk.trace });
    }
    spans.append(span);
  }
  pending = [];
  el.output.append(spans);
  const live = liveStats;
  // The table and the stats change ten times a second at most: redrawing them
  // every frame would take CPU from the model for no visible gain.
  const now = performance.now();
  if (!force && now - lastDrawn < 100) return;
  lastDrawn = now;
  if (demo.pinned < 0 && demo.traces.length > 0) showTrace(demo.traces.length - 1);
  if (live?.first) {
    el.ttft.textContent = `${Math.round(live.first - live.started)} ms`;
    el.ntokens.textContent = String(live.n);
    if (live.n > 1) el.tps.textContent = ((live.n - 1) / ((performance.now() - live.first) / 1000)).toFixed(0);
  }
}

/** Draws the sampling picture of generated token i. */
function showTrace(i) {
  const step = demo.traces[i];
  if (!step) return;
  for (const s of el.output.querySelectorAll('.tok.selected')) s.classList.remove('selected');
  el.output.querySelector(`.tok[data-index="${i}"]`)?.classList.add('selected');
  const { trace } = step;
  const chosen = trace.top.find((c) => c.id === trace.chosen);
  el.traceTitle.replaceChildren(`Token ${i + 1}: `, code(visible(chosen?.text ?? step.text)),
    trace.greedy ? ' — greedy: the most likely token' : ` — drawn from ${trace.kept} candidate${trace.kept === 1 ? '' : 's'}`);
  // A grammar (JSON mode) masks the tokens that cannot continue the text:
  // their logit is -Infinity and they were never candidates, so they are not
  // shown among them.
  const allowed = trace.top.filter((c) => Number.isFinite(c.logit));
  const masked = trace.top.length - allowed.length;
  const rows = allowed.map((c) => {
    const tr = document.createElement('tr');
    if (c.id === trace.chosen) tr.className = 'chosen';
    else if (c.probFinal === 0) tr.className = 'cut';
    const name = document.createElement('td');
    name.className = 'token';
    name.append(code(visible(c.text)));
    name.title = `id ${c.id}, logit ${c.logit.toFixed(2)}`;
    tr.append(name, bar('model', c.prob), bar('temp', c.probTemp), bar('final', c.probFinal));
    return tr;
  });
  el.traceBody.replaceChildren(...rows);
  const shown = trace.top.reduce((s, c) => s + c.probFinal, 0);
  const grammar = masked > 0
    ? ` The JSON grammar allowed only ${allowed.length} token${allowed.length === 1 ? '' : 's'} here: it masks every token that cannot continue the JSON.`
    : '';
  el.traceSummary.textContent = (trace.greedy
    ? 'Temperature 0: no randomness, the top token always wins.'
    : `${trace.kept} candidate${trace.kept === 1 ? '' : 's'} survived the cuts; the ${allowed.length === 10 ? 'ten' : allowed.length} shown hold ${pct(shown)} of what was drawn from.`) + grammar;
}

function code(text) {
  const c = document.createElement('code');
  c.textContent = text;
  return c;
}

function bar(kind, p) {
  const td = document.createElement('td');
  td.className = kind;
  const b = document.createElement('div');
  b.className = 'bar';
  const fill = document.createElement('i');
  fill.style.width = `${Math.min(100, p * 100)}%`;
  const label = document.createElement('span');
  label.textContent = pct(p);
  b.append(fill, label);
  td.append(b);
  return td;
}

// --- wiring ---------------------------------------------------------------

for (const [input, out] of [[el.temperature, 'temperature-value'], [el.topP, 'top-p-value'], [el.minP, 'min-p-value']]) {
  input.addEventListener('input', () => { $(out).textContent = input.value; });
}
el.generate.addEventListener('click', generate);
el.compare.addEventListener('click', compare);
el.stop.addEventListener('click', () => { if (demo.running?.mode === 'completion') demo.running.controller.abort(); });
el.prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    generate();
  }
});
el.output.addEventListener('mouseover', (e) => {
  const t = e.target.closest('.tok');
  if (t && demo.pinned < 0) showTrace(Number(t.dataset.index));
});
el.output.addEventListener('click', (e) => {
  const t = e.target.closest('.tok');
  for (const s of el.output.querySelectorAll('.tok.pinned')) s.classList.remove('pinned');
  if (!t || Number(t.dataset.index) === demo.pinned) {
    demo.pinned = -1;
    return;
  }
  demo.pinned = Number(t.dataset.index);
  t.classList.add('pinned');
  showTrace(demo.pinned);
});

// Another model from a URL: a GGUF file, or the first part of a split one;
// hf:owner/repo/file.gguf for a file on Hugging Face (the page's
// ?hfEndpoint= names another server, a mirror).
const hfEndpoint = new URLSearchParams(location.search).get('hfEndpoint') ?? undefined;
async function loadURL(url) {
  if (url === '' || el.modelURLLoad.disabled) return;
  await loadModel(url, { hfEndpoint }, url.split(/[?#@]/)[0].split('/').pop() || url);
}
el.modelURLForm.addEventListener('submit', (e) => {
  e.preventDefault();
  loadURL(el.modelURL.value.trim());
});

// Try a model: real GGUF files, each loaded by its hf: name at a click.
// Sizes are approximate; memory is what WasmLM.inspect predicts for the
// file (docs/try-a-model.md says how it was computed).
const TRY_MODELS = [
  { name: 'Qwen3-0.6B', what: 'chat, reasoning, tools', source: 'hf:Qwen/Qwen3-0.6B-GGUF/Qwen3-0.6B-Q8_0.gguf', size: '639 MB', memory: '1.17 GB' },
  { name: 'Llama-3.2-1B-Instruct', what: 'chat, tools', source: 'hf:bartowski/Llama-3.2-1B-Instruct-GGUF/Llama-3.2-1B-Instruct-Q4_K_M.gguf', size: '808 MB', memory: '1.00 GB' },
  { name: 'Gemma-3-1B-it', what: 'chat', source: 'hf:unsloth/gemma-3-1b-it-GGUF/gemma-3-1b-it-Q8_0.gguf', size: '1.07 GB', memory: '1.19 GB' },
  { name: 'SmolLM2-360M-Instruct', what: 'chat, small and fast', source: 'hf:HuggingFaceTB/SmolLM2-360M-Instruct-GGUF/smollm2-360m-instruct-q8_0.gguf', size: '386 MB', memory: '593 MB' },
  { name: 'all-MiniLM-L6-v2', what: 'embeddings (384)', source: 'hf:second-state/All-MiniLM-L6-v2-Embedding-GGUF/all-MiniLM-L6-v2-ggml-model-f16.gguf', size: '46 MB', memory: '89 MB' },
  { name: 'bge-small-en-v1.5', what: 'embeddings (384)', source: 'hf:CompendiumLabs/bge-small-en-v1.5-gguf/bge-small-en-v1.5-q8_0.gguf', size: '37 MB', memory: '80 MB' },
];
$('try-list').replaceChildren(...TRY_MODELS.map((m) => {
  const li = document.createElement('li');
  const b = Object.assign(document.createElement('button'), { type: 'button', className: 'try', textContent: m.name, title: m.source });
  b.dataset.source = m.source;
  b.addEventListener('click', () => {
    el.modelURL.value = m.source;
    loadURL(m.source);
  });
  li.append(b, ` ${m.what} · ${m.size} download · ${m.memory} in memory`);
  return li;
}));

// Another model: a GGUF file loads at once; a llama2.c checkpoint waits for its tokenizer.bin.
el.modelFile.addEventListener('change', async () => {
  const file = el.modelFile.files[0];
  el.tokenizerRow.hidden = true;
  if (!file) return;
  const magic = new TextDecoder().decode(await file.slice(0, 4).arrayBuffer());
  if (magic === 'GGUF') {
    await loadModel(file, {}, file.name);
  } else {
    el.tokenizerRow.hidden = false;
    el.tokenizerFile.value = '';
  }
});
el.tokenizerFile.addEventListener('change', async () => {
  const model = el.modelFile.files[0];
  const tokenizer = el.tokenizerFile.files[0];
  if (!model || !tokenizer) return;
  el.tokenizerRow.hidden = true;
  await loadModel(model, { tokenizer }, model.name);
});

// Another device: the model loads again there.
el.device.addEventListener('change', async () => {
  if (demo.loaded && demo.state !== 'loading') await loadModel(demo.loaded.source, demo.loaded.options, demo.loaded.label);
});

const chat = setupChat({ demo, run, showMessage });
loadModel(undefined, {}, DEFAULT_MODEL.name);
