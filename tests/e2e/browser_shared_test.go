//go:build !js

package e2e

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sharedRun is what a tab's generation gave, and its model's worker.
type sharedRun struct {
	Text    string
	Chunks  string
	Tokens  []int
	Shared  bool
	Reason  string
	Workers int
	Stats   workerStats
}

// workerStats is lm.workerStats().
type workerStats struct {
	Shared   bool
	Loads    int
	Tabs     int
	Sessions struct{ Open, Allocated int }
	// WasmMemoryBytes is the worker's WebAssembly memory.
	WasmMemoryBytes int
}

// sharedPrompts are the three tabs' prompts.
var sharedPrompts = []string{"Once upon a time", "Lily and Ben went to the park.", "The little dog"}

// TestBrowserSharedModel: three tabs of one origin that load the default
// model with shared: true use one SharedWorker — one load, one model in
// memory, a session per tab — and their streams, run at once, each give the
// tokens the same prompt gives in a tab of its own; closing a tab frees its
// session, and shared with workers: 2 is refused.
func TestBrowserSharedModel(t *testing.T) {
	first := newTab(t, blankPage, chromedp.WithNewBrowserContext())
	tabs := []*tab{first, openTabIn(t, first.ctx, first.site, blankPage, nil), openTabIn(t, first.ctx, first.site, blankPage, nil)}
	const greedy = `{ temperature: 0, maxTokens: 24 }`

	// Each tab alone, in a dedicated worker: the reference tokens, and the
	// memory three copies of the model take.
	alone := make([]sharedRun, len(tabs))
	dedicatedBytes := 0
	for i, tb := range tabs {
		alone[i] = eval[sharedRun](t, tb, apiScript(`
			const lm = await WasmLM.load(DEFAULT_MODEL);
			const r = await lm.generate(`+strconv.Quote(sharedPrompts[i])+`, `+greedy+`);
			const stats = await lm.workerStats();
			lm.unload();
			return { text: r.text, tokens: r.tokens, shared: lm.info.shared === true, stats };`))
		require.NotEmpty(t, alone[i].Tokens)
		assert.False(t, alone[i].Stats.Shared)
		dedicatedBytes += alone[i].Stats.WasmMemoryBytes
	}

	// The three tabs load shared at once, then stream at once.
	runAll := func(script func(i int) string) []sharedRun {
		out := make([]sharedRun, len(tabs))
		var wg sync.WaitGroup
		for i, tb := range tabs {
			wg.Go(func() { out[i] = eval[sharedRun](t, tb, apiScript(script(i))) })
		}
		wg.Wait()
		return out
	}
	loaded := runAll(func(int) string {
		return `globalThis.lm = await WasmLM.load(DEFAULT_MODEL, { shared: true });
			return { shared: lm.info.shared, reason: lm.info.sharedReason ?? '', workers: lm.info.workers };`
	})
	for i, l := range loaded {
		require.True(t, l.Shared, "tab %d: %s", i, l.Reason)
		assert.Equal(t, 1, l.Workers)
	}
	streams := runAll(func(i int) string {
		return `let chunks = '';
			const s = lm.stream(` + strconv.Quote(sharedPrompts[i]) + `, ` + greedy + `);
			for await (const c of s) chunks += c.text;
			const r = await s.result;
			return { text: r.text, chunks, tokens: r.tokens, stats: await lm.workerStats() };`
	})
	for i, s := range streams {
		assert.Equal(t, alone[i].Tokens, s.Tokens, "tab %d's stream gives its tokens alone", i)
		assert.Equal(t, alone[i].Text, s.Chunks, "tab %d's chunks", i)
	}
	stats := eval[workerStats](t, first, `lm.workerStats()`)
	assert.True(t, stats.Shared)
	assert.Equal(t, 1, stats.Loads, "the model was loaded once")
	assert.Equal(t, 3, stats.Tabs)
	assert.Equal(t, 3, stats.Sessions.Open)
	assert.Equal(t, 3, stats.Sessions.Allocated)
	t.Logf("WebAssembly memory: one SharedWorker for three tabs %d bytes; three dedicated workers %d bytes", stats.WasmMemoryBytes, dedicatedBytes)
	assert.Less(t, stats.WasmMemoryBytes, dedicatedBytes/2, "one copy of the model, not three")

	// A tab closed frees its session: the worker's lock for it is granted.
	require.NoError(t, chromedp.Do(tabs[2].ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, page.Close, cdp.Empty{})
		return err
	})))
	after := eval[workerStats](t, first, `(async () => {
		for (let i = 0; i < 500; i++) {
			const s = await lm.workerStats();
			if (s.tabs === 2) return s;
			await new Promise((r) => setTimeout(r, 10));
		}
		return lm.workerStats();
	})()`)
	assert.Equal(t, 2, after.Tabs)
	assert.Equal(t, 2, after.Sessions.Open, "the closed tab's session is freed")
	assert.Equal(t, 1, after.Loads)

	// A tab that unloads frees its session; the model stays for the other.
	eval[bool](t, tabs[1], `(lm.unload(), true)`)
	after = eval[workerStats](t, first, `(async () => {
		for (let i = 0; i < 500; i++) {
			const s = await lm.workerStats();
			if (s.tabs === 1) return s;
			await new Promise((r) => setTimeout(r, 10));
		}
		return lm.workerStats();
	})()`)
	assert.Equal(t, 1, after.Sessions.Open, "the unloaded tab's session is freed")
	r := eval[sharedRun](t, first, `lm.generate(`+strconv.Quote(sharedPrompts[0])+`, `+greedy+`)`)
	assert.Equal(t, alone[0].Tokens, r.Tokens, "the model still serves the tab left")

	refused := eval[map[string]string](t, first, apiScript(`
		return WasmLM.load(DEFAULT_MODEL, { shared: true, workers: 2 }).then(() => ({}), (e) => ({ code: e.code, field: e.field, message: e.message }));`))
	assert.Equal(t, "invalid_argument", refused["code"])
	assert.Equal(t, "workers", refused["field"])
	assert.Contains(t, refused["message"], "SharedWorker")
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
