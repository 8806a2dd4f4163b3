//go:build !js

package e2e

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/internal/golden"
)

// A model split across two Web Workers (load option workers: 2) gives
// llama2.c's greedy stream (ids and text) and, for the same seeds, the same
// text as one worker; an abort stops it within a few tokens and the next
// generation still reproduces llama2.c. More workers than the model has
// key/value heads reject readably.
func TestBrowserWorkersMatchOneWorker(t *testing.T) {
	g := golden.RuncStories260K(t)
	empty, once := g.Runs[0], g.Runs[1]
	require.Equal(t, "Once upon a time", once.Prompt)
	tb := newTab(t, blankPage)
	type seeded struct {
		Prompt  string         `json:"prompt"`
		Options map[string]any `json:"options"`
	}
	requests := []seeded{
		{"Once upon a time", map[string]any{"seed": 42, "maxTokens": 120}},
		{"", map[string]any{"seed": 1234567, "temperature": 1.2, "topK": 0, "topP": 1, "minP": 0, "repeatPenalty": 1.15, "maxTokens": 120}},
		{"The little dog", map[string]any{"seed": 7, "temperature": 1, "topK": 10, "topP": 0.9, "presencePenalty": 0.5, "maxTokens": 120}},
	}
	got := eval[struct {
		Workers   []int      `json:"workers"`
		IDs       []int      `json:"ids"`
		Text      string     `json:"text"`
		Greedy    result     `json:"greedy"`
		Seeded    [][]result `json:"seeded"`
		Seen      int        `json:"seen"`
		Aborted   result     `json:"aborted"`
		Next      result     `json:"next"`
		Memory    []float64  `json:"memory"`
		TooMany   jsError    `json:"tooMany"`
		AutoCount int        `json:"autoCount"`
	}](t, tb, apiScript(`
		const requests = `+jsonString(t, requests)+`;
		const seeded = [];
		const workers = [];
		let ids = [], text = '', greedy, seen = 0, aborted, next, memory;
		for (const n of [2, 1]) {
			const lm = await WasmLM.load(undefined, { workers: n });
			workers.push(lm.info.workers);
			seeded.push([]);
			for (const r of requests) seeded[seeded.length - 1].push(await lm.generate(r.prompt, r.options));
			if (n === 2) {
				const s = lm.stream('', { temperature: 0, maxTokens: 200 });
				for await (const c of s) { if (c.token >= 0) ids.push(c.token); text += c.text; }
				greedy = await s.result;
				memory = greedy.wasmMemoryBytesPerWorker;
				const ac = new AbortController();
				const a = lm.stream('', { temperature: 0, maxTokens: 500, signal: ac.signal });
				for await (const c of a) if (++seen === 5) ac.abort();
				aborted = await a.result;
				next = await lm.generate('Once upon a time', { temperature: 0, maxTokens: `+strconv.Itoa(len(once.GeneratedIDs))+` });
			}
			lm.unload();
		}
		let tooMany = null;
		try { (await WasmLM.load(undefined, { workers: 5 })).unload(); } catch (e) { tooMany = { name: e.name, message: e.message, code: e.code }; }
		const auto = await WasmLM.load(undefined, { workers: 'auto' });
		const autoCount = auto.info.workers;
		auto.unload();
		return { workers, ids, text, greedy, seeded, seen, aborted, next, memory, tooMany, autoCount };
	`))
	assert.Equal(t, []int{2, 1}, got.Workers, "lm.info.workers")
	assert.Equal(t, empty.GeneratedIDs, got.IDs, "streamed ids with 2 workers")
	assert.Equal(t, empty.Text, got.Text, "streamed text with 2 workers")
	assert.Equal(t, empty.GeneratedIDs, got.Greedy.Tokens)
	require.Len(t, got.Seeded, 2)
	for i := range requests {
		assert.NotEmpty(t, got.Seeded[1][i].Tokens)
		assert.Equal(t, got.Seeded[1][i].Tokens, got.Seeded[0][i].Tokens, "request %d: tokens, 2 workers vs 1", i)
		assert.Equal(t, got.Seeded[1][i].Text, got.Seeded[0][i].Text, "request %d: text, 2 workers vs 1", i)
	}
	assert.Equal(t, "abort", got.Aborted.FinishReason)
	assert.GreaterOrEqual(t, got.Seen, 5)
	assert.LessOrEqual(t, got.Seen, 5+abortSlack, "tokens after the abort")
	assert.Equal(t, empty.GeneratedIDs[:len(got.Aborted.Tokens)], got.Aborted.Tokens)
	assert.Equal(t, once.GeneratedIDs, got.Next.Tokens, "the generation after the abort")
	assert.Len(t, got.Memory, 2, "every worker's memory")
	assert.Equal(t, "invalid_argument", got.TooMany.Code)
	assert.Contains(t, got.TooMany.Message, "splits at most 4 ways")
	assert.GreaterOrEqual(t, got.AutoCount, 1)
	assert.LessOrEqual(t, got.AutoCount, 4)
	t.Logf("2 workers: %.0f tokens/s (1 worker: see the benchmark); memory per worker %v; workers: 'auto' chose %d",
		got.Greedy.Timings.DecodeTokensPerSecond, got.Memory, got.AutoCount)
}

// workers: 'auto' (the default) splits a model only where two workers were
// measured faster than one. The shapes are the benchmark's random models
// (tied classifier), the file sizes those internal/modelgen wrote; want is,
// with 3 cores (2 workers at most) unless a case says otherwise, what two
// workers did against one in headless Chromium on this 2-core machine when it
// was quiet (docs/kernels.md's quiet-machine table, and web/README.md): faster for
// prompts and decoding on the 110M shape in Q8_0 and F32, faster for prompts
// and within 6% for decoding in Q4_0 and Q4_K by messages (faster for both
// through shared memory), slower on the 15M shape with SIMD; faster on the
// 15M and 110M models on pure Go, slower on stories260K.
func TestBrowserAutoWorkers(t *testing.T) {
	type shape struct{ dim, hidden, layers, heads, kvHeads, vocab int }
	s260K := shape{64, 172, 5, 8, 4, 512}
	s15M := shape{288, 768, 6, 6, 6, 32000}
	s110M := shape{768, 2048, 12, 12, 12, 32000}
	tinyllama := shape{2048, 5632, 22, 32, 4, 32000}
	tests := []struct {
		name     string
		shape    shape
		fileSize int
		simd     bool
		shared   bool
		cores    int
		want     int
	}{
		{"stories260K F16, SIMD", s260K, 601248, true, false, 3, 1},
		{"stories260K F16, pure Go", s260K, 601248, false, false, 3, 1},
		{"stories260K F16, SIMD, shared memory", s260K, 601248, true, true, 3, 1},
		{"15M F32, SIMD", s15M, 61559616, true, false, 3, 1},
		{"15M Q8_0, SIMD", s15M, 16944960, true, false, 3, 1},
		{"15M Q8_0, SIMD, shared memory", s15M, 16944960, true, true, 3, 1},
		{"15M F32, SIMD, shared memory: F32 counts as Q8_0", s15M, 61559616, true, true, 3, 1},
		{"15M Q4_0, SIMD", s15M, 9350976, true, false, 3, 1},
		{"15M F32, pure Go", s15M, 61559616, false, false, 3, 2},
		{"15M Q8_0, pure Go", s15M, 16944960, false, false, 3, 2},
		{"15M Q4_0, pure Go", s15M, 9350976, false, false, 3, 2},
		{"15M Q4_K, pure Go", s15M, 11083584, false, false, 3, 2},
		{"110M F32, SIMD", s110M, 438915392, true, false, 3, 2},
		{"110M Q8_0, SIMD", s110M, 117227840, true, false, 3, 2},
		{"110M Q4_0, SIMD", s110M, 62472512, true, false, 3, 2},
		{"110M Q4_K, SIMD", s110M, 62472512, true, false, 3, 2},
		{"110M Q8_0, pure Go", s110M, 117227840, false, false, 3, 2},
		// 2.9 MiB a layer: under two shares by messages, over two through shared memory.
		{"110M at 3.4 bits a weight, SIMD", s110M, 47000000, true, false, 3, 1},
		{"110M at 3.4 bits a weight, SIMD, shared memory", s110M, 47000000, true, true, 3, 2},
		// The caps.
		{"110M Q8_0, SIMD, 2 cores: both compute", s110M, 117227840, true, false, 2, 2},
		{"TinyLlama Q4_0, SIMD, 2 cores", tinyllama, 637394976, true, false, 2, 2},
		{"110M F32, SIMD, 16 cores: MAX_AUTO_WORKERS", s110M, 438915392, true, false, 16, 4},
		{"110M F32, SIMD, 4 cores: one for the page", s110M, 438915392, true, false, 4, 3},
		{"110M Q8_0, SIMD, one core", s110M, 117227840, true, false, 1, 1},
		{"110M Q8_0, pure Go, unknown cores", s110M, 117227840, false, false, 0, 1},
		{"TinyLlama-shaped F32, 3 kv heads", shape{2048, 5632, 22, 32, 3, 32000}, 4 << 30, true, false, 16, 3},
		{"110M-shaped F32, 2 kv heads", shape{768, 2048, 12, 12, 2, 32000}, 1 << 30, true, false, 16, 2},
	}
	type info struct {
		Format            string `json:"format"`
		FileSize          int    `json:"fileSize"`
		Parameters        int    `json:"parameters"`
		BlockCount        int    `json:"blockCount"`
		EmbeddingLength   int    `json:"embeddingLength"`
		FeedForwardLength int    `json:"feedForwardLength"`
		HeadCount         int    `json:"headCount"`
		HeadCountKv       int    `json:"headCountKv"`
		SIMD              bool   `json:"simd"`
	}
	type call struct {
		Info   info `json:"info"`
		Cores  int  `json:"cores"`
		Shared bool `json:"shared"`
	}
	calls := make([]call, len(tests))
	for i, tt := range tests {
		sh := tt.shape
		kvDim := sh.dim * sh.kvHeads / sh.heads
		params := sh.layers*(2*sh.dim*sh.dim+2*sh.dim*kvDim+3*sh.dim*sh.hidden+2*sh.dim) + sh.vocab*sh.dim + sh.dim
		calls[i] = call{Info: info{"gguf", tt.fileSize, params, sh.layers, sh.dim, sh.hidden, sh.heads, sh.kvHeads, tt.simd}, Cores: tt.cores, Shared: tt.shared}
	}
	tb := newTab(t, blankPage)
	got := eval[struct {
		Counts     []int  `json:"counts"`
		Checkpoint int    `json:"checkpoint"`
		Unsplit    int    `json:"unsplit"`
		Inspected  int    `json:"inspected"`
		Default    int    `json:"default"`
		NoInfo     string `json:"noInfo"`
	}](t, tb, `(async () => {
		const { WasmLM, autoWorkers } = await import('/wasmlm.js');
		const calls = `+jsonString(t, calls)+`;
		const counts = calls.map((c) => autoWorkers(c.info, c.cores, c.shared));
		const checkpoint = autoWorkers({ ...calls[calls.length - 2].info, format: 'llama2c' }, 16);
		const unsplit = autoWorkers({ ...calls[calls.length - 2].info, splitError: 'olmo2 normalises all the queries at once' }, 16);
		// WasmLM.inspect's result has no simd: the SIMD kernels count, as load's default.
		const { simd, ...inspected } = calls[4].info;
		const lm = await WasmLM.load(); // workers: 'auto' by default
		const def = lm.info.workers;
		lm.unload();
		let noInfo = 'no error';
		try {
			autoWorkers(undefined, 8);
		} catch (e) {
			noInfo = e.code + ' ' + e.name + ': ' + e.message;
		}
		return { counts, checkpoint, unsplit, inspected: autoWorkers(inspected, 8), default: def, noInfo };
	})()`)
	require.Len(t, got.Counts, len(tests))
	for i, tt := range tests {
		assert.Equal(t, tt.want, got.Counts[i], tt.name)
	}
	assert.Equal(t, 1, got.Checkpoint, "a llama2.c checkpoint runs in one worker")
	assert.Equal(t, 1, got.Unsplit, "so does a model whose family cannot be split")
	require.Equal(t, "15M Q8_0, SIMD", tests[4].name)
	assert.Equal(t, 1, got.Inspected, "info without simd: the SIMD kernels' threshold (pure Go's would give 4)")
	assert.Equal(t, 1, got.Default, "the default model is too small to split")
	assert.Equal(t, "invalid_argument TypeError: wasmlm: invalid argument: info must be lm.info or WasmLM.inspect's result, got undefined", got.NoInfo)
}
