//go:build !js

package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/internal/golden"
)

var theIsolatedSite shared[*site]

// isolatedSite is the site on another origin whose every response has
// COOP and COEP headers, so that its pages are cross-origin isolated
// (crossOriginIsolated, SharedArrayBuffer): a reverse proxy to webSite.
func isolatedSite(t testing.TB) *site {
	t.Helper()
	plain := webSite(t)
	return theIsolatedSite.get(t, func() (*site, error) {
		target, err := url.Parse(plain.url)
		if err != nil {
			return nil, err
		}
		proxy := httputil.NewSingleHostReverseProxy(target)
		proxy.ModifyResponse = func(r *http.Response) error {
			r.Header.Set("Cross-Origin-Opener-Policy", "same-origin")
			r.Header.Set("Cross-Origin-Embedder-Policy", "require-corp")
			return nil
		}
		srv := httptest.NewServer(proxy)
		atShutdown(srv.Close)
		return &site{url: srv.URL, dist: plain.dist, hits: map[string]int{}}, nil
	})
}

// splitRun is what splitScript reports for one load.
type splitRun struct {
	Workers  int      `json:"workers"`
	Exchange string   `json:"exchange"`
	IDs      []int    `json:"ids"`
	Text     string   `json:"text"`
	Seeded   []result `json:"seeded"`
	Timings  struct {
		DecodeTokensPerSecond float64 `json:"decodeTokensPerSecond"`
		ExchangeMs            float64 `json:"exchangeMs"`
		Exchanges             int     `json:"exchanges"`
	} `json:"timings"`
	Seen    int    `json:"seen"`
	Aborted result `json:"aborted"`
	Next    result `json:"next"`
}

// splitScript loads the default model across each of counts workers and
// reports, for each, its greedy stream, three seeded generations, an abort
// after 5 tokens and the greedy generation of next tokens after it.
func splitScript(t *testing.T, counts []int, next int) string {
	return apiScript(`
		const runs = [];
		for (const n of ` + jsonString(t, counts) + `) {
			const lm = await WasmLM.load(undefined, { workers: n });
			const r = { workers: lm.info.workers, exchange: lm.info.exchange ?? '', ids: [], text: '', seeded: [] };
			const s = lm.stream('', { temperature: 0, maxTokens: 200 });
			for await (const c of s) { if (c.token >= 0) r.ids.push(c.token); r.text += c.text; }
			r.timings = (await s.result).timings;
			r.seeded.push(await lm.generate('Once upon a time', { seed: 42, maxTokens: 120 }));
			r.seeded.push(await lm.generate('', { seed: 1234567, temperature: 1.2, topK: 0, topP: 1, minP: 0, repeatPenalty: 1.15, maxTokens: 120 }));
			r.seeded.push(await lm.generate('The little dog', { seed: 7, temperature: 1, topK: 10, topP: 0.9, presencePenalty: 0.5, maxTokens: 120 }));
			const ac = new AbortController();
			const a = lm.stream('', { temperature: 0, maxTokens: 500, signal: ac.signal });
			r.seen = 0;
			for await (const c of a) if (++r.seen === 5) ac.abort();
			r.aborted = await a.result;
			r.next = await lm.generate('Once upon a time', { temperature: 0, maxTokens: ` + strconv.Itoa(next) + ` });
			lm.unload();
			runs.push(r);
		}
		return { isolated: globalThis.crossOriginIsolated === true, runs };
	`)
}

// A split model in a cross-origin isolated page (COOP and COEP) exchanges
// through shared memory (lm.info.exchange) and generates, with 2 and 3
// workers, llama2.c's greedy tokens and the same seeded tokens as one worker
// and as the postMessage path of a page that is not isolated; an abort stops
// it within a few tokens and the next generation is whole. A follower that
// fails mid-stream rejects the stream with worker_failed, and the page loads
// and runs the model again.
func TestBrowserWorkersSharedMemory(t *testing.T) {
	g := golden.RuncStories260K(t)
	empty, once := g.Runs[0], g.Runs[1]
	type report struct {
		Isolated bool       `json:"isolated"`
		Runs     []splitRun `json:"runs"`
	}
	iso := openTab(t, isolatedSite(t), blankPage, nil)
	shared := eval[report](t, iso, splitScript(t, []int{1, 2, 3}, len(once.GeneratedIDs)))
	plain := eval[report](t, newTab(t, blankPage), splitScript(t, []int{2}, len(once.GeneratedIDs)))
	require.True(t, shared.Isolated, "the page with COOP and COEP is cross-origin isolated")
	require.False(t, plain.Isolated)
	runs := append(shared.Runs, plain.Runs...)
	require.Len(t, runs, 4)
	one := runs[0]
	for i, want := range []struct {
		workers  int
		exchange string
	}{{1, ""}, {2, "shared-memory"}, {3, "shared-memory"}, {2, "messages"}} {
		r := runs[i]
		assert.Equal(t, want.workers, r.Workers, "run %d: lm.info.workers", i)
		assert.Equal(t, want.exchange, r.Exchange, "run %d: lm.info.exchange", i)
		assert.Equal(t, empty.GeneratedIDs, r.IDs, "run %d: greedy ids", i)
		assert.Equal(t, empty.Text, r.Text, "run %d: greedy text", i)
		require.Len(t, r.Seeded, 3)
		for k := range r.Seeded {
			assert.NotEmpty(t, r.Seeded[k].Tokens)
			assert.Equal(t, one.Seeded[k].Tokens, r.Seeded[k].Tokens, "run %d, request %d: tokens vs one worker", i, k)
			assert.Equal(t, one.Seeded[k].Text, r.Seeded[k].Text, "run %d, request %d: text vs one worker", i, k)
		}
		assert.Equal(t, "abort", r.Aborted.FinishReason, "run %d", i)
		assert.GreaterOrEqual(t, r.Seen, 5)
		assert.LessOrEqual(t, r.Seen, 5+abortSlack, "run %d: tokens after the abort", i)
		assert.Equal(t, empty.GeneratedIDs[:len(r.Aborted.Tokens)], r.Aborted.Tokens, "run %d", i)
		assert.Equal(t, once.GeneratedIDs, r.Next.Tokens, "run %d: the generation after the abort", i)
		per := 0.0
		if r.Timings.Exchanges > 0 {
			per = r.Timings.ExchangeMs / float64(r.Timings.Exchanges)
		}
		t.Logf("%d workers, exchange %q: %.0f decode tokens/s, %.3f ms per exchange (%d exchanges)",
			r.Workers, r.Exchange, r.Timings.DecodeTokensPerSecond, per, r.Timings.Exchanges)
	}

	failed := eval[struct {
		Exchange string  `json:"exchange"`
		Seen     int     `json:"seen"`
		Failure  jsError `json:"failure"`
		Later    jsError `json:"later"`
		After    []int   `json:"after"`
	}](t, iso, apiScript(`
		const W = globalThis.Worker;
		const made = [];
		globalThis.Worker = class extends W {
			constructor(url, options) { super(url, options); this.wasmlmName = options?.name; made.push(this); }
		};
		let lm;
		try { lm = await WasmLM.load(undefined, { workers: 2 }); } finally { globalThis.Worker = W; }
		const follower = made.find((w) => w.wasmlmName === 'wasmlm-1');
		const out = { exchange: lm.info.exchange, seen: 0 };
		const asError = (e) => ({ name: e.name, message: e.message, code: e.code });
		try {
			for await (const c of lm.stream('', { temperature: 0, maxTokens: 500 })) {
				if (++out.seen === 5) {
					follower.terminate();
					follower.dispatchEvent(new ErrorEvent('error', { message: 'worker 1 was terminated' }));
				}
			}
		} catch (e) { out.failure = asError(e); }
		try { await lm.generate('x'); } catch (e) { out.later = asError(e); }
		const again = await WasmLM.load(undefined, { workers: 2 });
		out.after = (await again.generate('Once upon a time', { temperature: 0, maxTokens: `+strconv.Itoa(len(once.GeneratedIDs))+` })).tokens;
		again.unload();
		return out;
	`))
	assert.Equal(t, "shared-memory", failed.Exchange)
	assert.GreaterOrEqual(t, failed.Seen, 5)
	assert.Equal(t, "worker_failed", failed.Failure.Code, "the stream whose follower failed: %s", failed.Failure.Message)
	assert.Contains(t, failed.Failure.Message, "worker 1 of 2 failed: worker 1 was terminated; load the model again")
	assert.Equal(t, "worker_failed", failed.Later.Code)
	assert.Equal(t, once.GeneratedIDs, failed.After, "a model loaded again after the failure")
}
