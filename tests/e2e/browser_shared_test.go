//go:build !js

package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// sharedRun is what a tab's generation gave, and its model's worker.
type sharedRun struct {
	Text    string
	Chunks  string
	Tokens  []int
	Next    []int
	Prefill int
	// NextPrompt is the second turn's prompt tokens.
	NextPrompt int
	// Progress is the load's last onProgress report.
	Progress sharedProgress
	Shared   bool
	Reason   string
	Workers  int
	Stats    workerStats
}

// sharedProgress is a LoadProgress.
type sharedProgress struct {
	Loaded, Total int
	Cached        bool
}

// workerStats is lm.workerStats().
type workerStats struct {
	Shared bool
	Loads  int
	Tabs   int
	// Connections counts the loads connected (a tab may load twice).
	Connections int
	Sessions    struct{ Open, Allocated int }
	// WasmMemoryBytes is the worker's WebAssembly memory.
	WasmMemoryBytes int
}

// sharedPrompts are the three tabs' prompts.
var sharedPrompts = []string{"Once upon a time", "Lily and Ben went to the park.", "The little dog"}

// sharedSpec is the model the tabs share: random weights, about 14M
// parameters in Q8_0 (a 14.7 MB file), so that the weights, not the Go
// runtime, are most of a worker's memory.
var sharedSpec = modelgen.Spec{
	Shape: modelgen.Shape{Dim: 512, HiddenDim: 1376, Layers: 4, Heads: 8, KVHeads: 4, VocabSize: 4096, ContextLength: 256},
	Type:  tensor.Q8_0,
	Seed:  37,
}

// sharedTurns is a tab's two turns: a stream of its prompt, then the
// prompt and the reply continued, whose prefill says whether the tab's
// own cache held the first turn; then runs after.
func sharedTurns(i int, load, after string) string {
	return load + `
		let chunks = '';
		const s = lm.stream(` + strconv.Quote(sharedPrompts[i]) + `, { temperature: 0, maxTokens: 16 });
		for await (const c of s) chunks += c.text;
		const r = await s.result;
		const next = await lm.generate(` + strconv.Quote(sharedPrompts[i]) + ` + r.text + ' Then', { temperature: 0, maxTokens: 8 });
		const out = { text: r.text, chunks, tokens: r.tokens, next: next.tokens, prefill: next.timings.prefillTokens, nextPrompt: next.promptTokens.length,
			shared: lm.info.shared === true, reason: lm.info.sharedReason ?? '', workers: lm.info.workers, stats: await lm.workerStats() };
		` + after + `
		return out;`
}

// TestBrowserSharedModel: three tabs of one origin that load a model with
// shared: true use one SharedWorker — one load, one copy of the model in
// memory, a session per tab — and their turns, run at once, each give the
// tokens the tab gets alone in a dedicated worker, and a tab's second turn
// evaluates as many prompt tokens as alone (its own cache held its first,
// whatever the others ran); closing a tab frees its session, unloading one too, and
// shared with workers: 2 is refused.
func TestBrowserSharedModel(t *testing.T) {
	data, err := modelgen.Build(sharedSpec)
	require.NoError(t, err)
	first := newTab(t, blankPage, chromedp.WithNewBrowserContext())
	path, _ := serveFile(t, first.site, "shared.gguf", data)
	tabs := []*tab{first, openTabIn(t, first.ctx, first.site, blankPage, nil), openTabIn(t, first.ctx, first.site, blankPage, nil)}

	// Each tab alone, in a dedicated worker: the reference, and the memory
	// three copies of the model take.
	alone := make([]sharedRun, len(tabs))
	dedicatedBytes := 0
	for i, tb := range tabs {
		alone[i] = eval[sharedRun](t, tb, apiScript(sharedTurns(i, `const lm = await WasmLM.load('`+path+`');`, `lm.unload();`)))
		require.NotEmpty(t, alone[i].Tokens)
		assert.False(t, alone[i].Stats.Shared)
		// A dedicated worker counts its page's session, which ran the turns.
		assert.Equal(t, struct{ Open, Allocated int }{1, 1}, alone[i].Stats.Sessions)
		dedicatedBytes += alone[i].Stats.WasmMemoryBytes
	}

	// The three tabs load shared and take their turns, all at once.
	shared := make([]sharedRun, len(tabs))
	var wg sync.WaitGroup
	for i, tb := range tabs {
		wg.Go(func() {
			shared[i] = eval[sharedRun](t, tb, apiScript(sharedTurns(i, `const reports = [];
				globalThis.lm = await WasmLM.load('`+path+`', { shared: true, onProgress: (p) => reports.push(p) });`,
				`out.progress = reports.at(-1);`)))
		})
	}
	wg.Wait()
	for i, s := range shared {
		require.True(t, s.Shared, "tab %d: %s", i, s.Reason)
		assert.Equal(t, 1, s.Workers)
		assert.Equal(t, alone[i].Tokens, s.Tokens, "tab %d's stream gives its tokens alone", i)
		assert.Equal(t, alone[i].Text, s.Chunks, "tab %d's chunks", i)
		assert.Equal(t, alone[i].Next, s.Next, "tab %d's second turn", i)
		assert.Equal(t, sharedProgress{Loaded: len(data), Total: len(data), Cached: true}, s.Progress, "tab %d's last progress", i)
		assert.Equal(t, alone[i].Prefill, s.Prefill, "tab %d's second turn evaluates what it does alone: its own cache held its first", i)
	}
	stats := eval[workerStats](t, first, `lm.workerStats()`)
	assert.True(t, stats.Shared)
	assert.Equal(t, 1, stats.Loads, "the model was loaded once")
	assert.Equal(t, 3, stats.Tabs)
	assert.Equal(t, 3, stats.Sessions.Open)
	assert.Equal(t, 3, stats.Sessions.Allocated)
	t.Logf("WebAssembly memory, a %d-byte model: one SharedWorker for three tabs %d bytes; three dedicated workers %d bytes (%d, %d, %d)",
		len(data), stats.WasmMemoryBytes, dedicatedBytes, alone[0].Stats.WasmMemoryBytes, alone[1].Stats.WasmMemoryBytes, alone[2].Stats.WasmMemoryBytes)
	assert.Less(t, stats.WasmMemoryBytes, dedicatedBytes/2, "one copy of the model, not three")
	assert.Equal(t, 3, stats.Connections)

	// A second load in one tab is a second connection and session, not a tab.
	twice := eval[workerStats](t, first, apiScript(`globalThis.lm2 = await WasmLM.load('`+path+`', { shared: true });
		return lm2.workerStats();`))
	assert.Equal(t, workerStats{Shared: true, Loads: 1, Tabs: 3, Connections: 4, WasmMemoryBytes: twice.WasmMemoryBytes,
		Sessions: struct{ Open, Allocated int }{4, 3}}, twice)
	eval[bool](t, first, `(lm2.unload(), true)`)

	// The worker's name holds wasmlm's version: a page of another version never attaches to it.
	version, err := os.ReadFile(filepath.Join(repoRoot(t), "VERSION"))
	require.NoError(t, err)
	infos, err := chromedp.Targets(first.ctx)
	require.NoError(t, err)
	var names []string
	for _, info := range infos {
		if info.Type == "shared_worker" {
			names = append(names, info.Title)
		}
	}
	require.Len(t, names, 1, "one SharedWorker for the three tabs")
	assert.True(t, strings.HasPrefix(names[0], "wasmlm@"+strings.TrimSpace(string(version))+" "), "the SharedWorker's name %q", names[0])

	// A tab's saved session is its own conversation, which another tab restores.
	type savedSession struct{ Tokens int }
	saved := eval[savedSession](t, tabs[1], `lm.saveSession('tab1')`)
	restored := eval[savedSession](t, first, `lm.restoreSession('tab1')`)
	assert.Equal(t, shared[1].NextPrompt+len(shared[1].Next)-1, saved.Tokens, "tab 1 saved its own conversation")
	assert.Equal(t, saved.Tokens, restored.Tokens)

	// A tab closed mid-generation frees its session: the worker's lock for
	// it is granted, its generation aborts, and the queue goes on.
	eval[bool](t, tabs[2], `(lm.generate('Once upon a time', { maxTokens: 200 }), true)`)
	require.NoError(t, chromedp.Do(tabs[2].ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, page.Close, cdp.Empty{})
		return err
	})))
	after := statsWithTabs(t, first, 2)
	assert.Equal(t, 2, after.Tabs)
	assert.Equal(t, 2, after.Sessions.Open, "the closed tab's session is freed")
	assert.Equal(t, 1, after.Loads)

	// A tab that unloads frees its session; the model stays for the other.
	eval[bool](t, tabs[1], `(lm.unload(), true)`)
	after = statsWithTabs(t, first, 1)
	assert.Equal(t, 1, after.Sessions.Open, "the unloaded tab's session is freed")
	r := eval[sharedRun](t, first, `lm.generate(`+strconv.Quote(sharedPrompts[0])+`, { temperature: 0, maxTokens: 16 })`)
	assert.Equal(t, alone[0].Tokens, r.Tokens, "the model still serves the tab left")

	refused := eval[map[string]string](t, first, apiScript(`
		return WasmLM.load('`+path+`', { shared: true, workers: 2 }).then(() => ({}), (e) => ({ code: e.code, field: e.field, message: e.message }));`))
	assert.Equal(t, "invalid_argument", refused["code"])
	assert.Equal(t, "workers", refused["field"])
	assert.Contains(t, refused["message"], "SharedWorker")
}

// statsWithTabs is tb's lm.workerStats() once the worker has n tabs and n
// open sessions (or after five seconds): a tab's session is freed after its
// tab leaves, once the call running has stopped.
func statsWithTabs(t *testing.T, tb *tab, n int) workerStats {
	return eval[workerStats](t, tb, `(async () => {
		for (let i = 0; i < 500; i++) {
			const s = await lm.workerStats();
			if (s.tabs === `+strconv.Itoa(n)+` && s.sessions.open === `+strconv.Itoa(n)+`) return s;
			await new Promise((r) => setTimeout(r, 10));
		}
		return lm.workerStats();
	})()`)
}

// TestBrowserSharedFallsBack: where the page has no SharedWorker, a shared
// load runs in a dedicated worker, and info says so and why.
func TestBrowserSharedFallsBack(t *testing.T) {
	tb := newTab(t, blankPage)
	got := eval[sharedRun](t, tb, apiScript(`
		delete globalThis.SharedWorker;
		const lm = await WasmLM.load(DEFAULT_MODEL, { shared: true });
		const r = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 4 });
		const out = { shared: lm.info.shared, reason: lm.info.sharedReason, tokens: r.tokens, stats: await lm.workerStats() };
		lm.unload();
		return out;`))
	assert.False(t, got.Shared)
	assert.Contains(t, got.Reason, "SharedWorker")
	assert.NotEmpty(t, got.Tokens)
	assert.False(t, got.Stats.Shared)
}

// heldReader reads data, but no byte at or past at until release closes:
// a download that stalls halfway.
type heldReader struct {
	*bytes.Reader
	at      int64
	release <-chan struct{}
}

func (h *heldReader) Read(p []byte) (int, error) {
	if pos, _ := h.Seek(0, io.SeekCurrent); pos+int64(len(p)) > h.at {
		<-h.release
	}
	return h.Reader.Read(p)
}

// TestBrowserSharedLoadPassesOn: when the tab loading a shared model gives
// up (its load aborted mid-download), a tab waiting for that load loads the
// model itself, once, and the tab that gave up is gone from the worker.
func TestBrowserSharedLoadPassesOn(t *testing.T) {
	data, err := modelgen.Build(sharedSpec)
	require.NoError(t, err)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	first := newTab(t, blankPage, chromedp.WithNewBrowserContext())
	path, _ := serveReader(t, first.site, "held.gguf", int64(len(data)), func() io.ReadSeeker {
		return &heldReader{Reader: bytes.NewReader(data), at: int64(len(data)) / 2, release: release}
	})
	second := openTabIn(t, first.ctx, first.site, blankPage, nil)
	options := `{ shared: true, cache: false, contextLength: 128 }`
	eval[bool](t, first, apiScript(`
		globalThis.ac = new AbortController();
		globalThis.reading = new Promise((resolve) => {
			globalThis.result = WasmLM.load('`+path+`', { ...`+options+`, signal: ac.signal, onProgress: resolve })
				.then(() => 'loaded', (e) => e.code);
		});
		await reading;
		return true;`))
	eval[bool](t, second, apiScript(`
		globalThis.result = WasmLM.load('`+path+`', `+options+`).then(async (lm) => {
			const r = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 4 });
			return { tokens: r.tokens, shared: lm.info.shared, stats: await lm.workerStats() };
		});
		await new Promise((r) => setTimeout(r, 300)); // its claim waits for the first tab's load
		return true;`))
	assert.Equal(t, "aborted", eval[string](t, first, `(ac.abort(), result)`))
	free()
	got := eval[sharedRun](t, second, `result`)
	assert.True(t, got.Shared)
	assert.NotEmpty(t, got.Tokens)
	assert.Equal(t, 1, got.Stats.Loads, "the tab that gave up loaded nothing")
	assert.Equal(t, 1, got.Stats.Tabs, "the tab that gave up is gone")
	assert.Equal(t, 1, got.Stats.Sessions.Open)
}

// TestBrowserSharedOnWebGPU: a SharedWorker runs a model on the GPU (with
// SwiftShader's adapter) for two tabs, each with its own session on the
// device, and each tab's tokens, generated at once, are those of a
// dedicated worker on the GPU.
func TestBrowserSharedOnWebGPU(t *testing.T) {
	first := openTabIn(t, gpuBrowser(t), webSite(t), blankPage, nil, chromedp.WithNewBrowserContext())
	tabs := []*tab{first, openTabIn(t, first.ctx, first.site, blankPage, nil)}
	run := func(i int, options string) string {
		return apiScript(`
			const lm = await WasmLM.load(DEFAULT_MODEL, ` + options + `);
			const r = await lm.generate(` + strconv.Quote(sharedPrompts[i]) + `, { temperature: 0, maxTokens: 8 });
			const out = { tokens: r.tokens, shared: lm.info.shared === true, reason: lm.info.deviceReason ?? lm.info.sharedReason ?? '',
				device: lm.info.device, stats: await lm.workerStats() };
			globalThis.lm = lm;
			return out;`)
	}
	type gpuRun struct {
		sharedRun
		Device string
	}
	// The reference: one dedicated worker on the GPU, each prompt in turn.
	alone := make([]gpuRun, len(tabs))
	alone[0] = eval[gpuRun](t, first, run(0, `{ device: 'webgpu' }`))
	require.Equal(t, "webgpu", alone[0].Device, alone[0].Reason)
	alone[1] = eval[gpuRun](t, first, `lm.generate(`+strconv.Quote(sharedPrompts[1])+`, { temperature: 0, maxTokens: 8 })`)
	eval[bool](t, first, `(lm.unload(), true)`)
	shared := make([]gpuRun, len(tabs))
	var wg sync.WaitGroup
	for i, tb := range tabs {
		wg.Go(func() { shared[i] = eval[gpuRun](t, tb, run(i, `{ device: 'webgpu', shared: true }`)) })
	}
	wg.Wait()
	for i, s := range shared {
		require.True(t, s.Shared, s.Reason)
		assert.Equal(t, "webgpu", s.Device, s.Reason)
		assert.Equal(t, alone[i].Tokens, s.Tokens, "tab %d", i)
	}
	stats := eval[workerStats](t, first, `lm.workerStats()`)
	assert.Equal(t, 1, stats.Loads)
	assert.Equal(t, 2, stats.Sessions.Allocated)
}
