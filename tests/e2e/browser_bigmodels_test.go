//go:build !js

package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/headless"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// A model of 4 key/value heads, large enough (about 60 MB) that a worker
// holding it whole shows in its memory, next to the Go runtime's own.
var shardSpec = modelgen.Spec{
	Shape: modelgen.Shape{Dim: 1024, HiddenDim: 2816, Layers: 5, Heads: 16, KVHeads: 4, VocabSize: 4096, ContextLength: 256},
	Type:  tensor.Q8_0, Seed: 17, MuteSpecial: true, SeparateOutput: true, Std: 0.05,
}

const bigPrompt = "Once upon a time"

// nativeGreedy is what the engine generates natively from data: the
// reference every load path in the page must reproduce.
func nativeGreedy(t testing.TB, data []byte, prompt string, n int) []int {
	t.Helper()
	m, err := engine.LoadGGUF(slices.Clone(data)) // natively the session packs the weights in place: data stays the file
	require.NoError(t, err)
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	r, err := s.Generate(context.Background(), prompt, engine.GenerateOptions{MaxTokens: n}, nil)
	require.NoError(t, err)
	return r.Tokens
}

// rangeBytes is how many bytes a Range header ("bytes=a-b") asks for.
func rangeBytes(t testing.TB, h string) int64 {
	t.Helper()
	a, b, ok := strings.Cut(strings.TrimPrefix(h, "bytes="), "-")
	require.True(t, ok, "range %q", h)
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(b, 10, 64)
	require.NoError(t, err1)
	require.NoError(t, err2)
	return hi - lo + 1
}

// candidate is one of a token's best candidates, as a trace shows it.
type candidate struct {
	ID    int     `json:"id"`
	Logit float32 `json:"logit"`
}

type bigRun struct {
	Workers int       `json:"workers"`
	Tokens  []int     `json:"tokens"`
	Memory  []float64 `json:"memory"`
	Error   *jsError  `json:"error"`
}

// bigLoadScript loads source (a JavaScript expression) with options, runs
// a greedy generation and reports the workers' memory.
func bigLoadScript(source, options, prompt string, n int) string {
	return `
		try {
			const lm = await WasmLM.load(` + source + `, ` + options + `);
			const r = await lm.generate(` + strconv.Quote(prompt) + `, { temperature: 0, maxTokens: ` + strconv.Itoa(n) + ` });
			lm.unload();
			return { workers: lm.info.workers, tokens: r.tokens, memory: r.wasmMemoryBytesPerWorker ?? [r.wasmMemoryBytes] };
		} catch (e) {
			return { error: { name: e.name, message: e.message, code: e.code } };
		}`
}

// TestBrowserShardsReadOnlyTheirRanges: a model split across workers is
// read by each worker a range at a time — from a URL (HTTP Range requests)
// or from a Blob — so no worker holds (or reads) the whole file, and the
// workers generate the engine's tokens.
func TestBrowserShardsReadOnlyTheirRanges(t *testing.T) {
	data, err := modelgen.Build(shardSpec)
	require.NoError(t, err)
	want := nativeGreedy(t, data, bigPrompt, 12)
	tb := newTab(t, blankPage)
	path, served := serveFile(t, tb.site, "shards.gguf", data)
	size := float64(len(data))
	for _, n := range []int{1, 2, 3} {
		before := len(served.requests())
		got := eval[bigRun](t, tb, apiScript(bigLoadScript(`'`+path+`'`, fmt.Sprintf("{ workers: %d, cache: false }", n), bigPrompt, 12)))
		require.Nil(t, got.Error, "%d workers", n)
		assert.Equal(t, n, got.Workers)
		assert.Equal(t, want, got.Tokens, "%d workers from a URL", n)
		reqs := served.requests()[before:]
		var read int64
		for i, r := range reqs {
			require.NotEmpty(t, r, "request %d of %d workers asked for the whole file", i, n)
			if i > 0 { // the first reads the header
				read += rangeBytes(t, r)
				assert.Less(t, float64(rangeBytes(t, r)), size/float64(n)+size*0.15, "request %d (%s) reads more than a shard", i, r)
			}
		}
		// Each worker reads its shard, the tensors every shard holds whole
		// (Wo, the norms) and the gaps of under 256 KiB between its ranges.
		assert.LessOrEqual(t, float64(read), size*(1+0.3*float64(n-1)), "%d workers together read about the file once", n)
		for i, m := range got.Memory {
			assert.Less(t, m, size/float64(n)+size*0.15+48<<20, "worker %d of %d holds about its shard", i, n)
		}
		t.Logf("%d workers: %d requests, %.1f of %.1f MB read, memory per worker %v", n, len(reqs), float64(read)/1e6, size/1e6, mibs(got.Memory))
	}
	// A Blob is read as a stream by one worker, a slice at a time by several.
	for _, source := range []string{
		`await (await fetch('` + path + `')).blob()`,
		`await (await fetch('` + path + `')).arrayBuffer()`,
	} {
		for _, n := range []int{1, 2} {
			got := eval[bigRun](t, tb, apiScript(bigLoadScript(source, fmt.Sprintf("{ workers: %d }", n), bigPrompt, 12)))
			require.Nil(t, got.Error, "%s, %d workers", source, n)
			assert.Equal(t, want, got.Tokens, "%s, %d workers", source, n)
			for i, m := range got.Memory {
				assert.Less(t, m, size/float64(n)+size*0.15+48<<20, "%s: worker %d of %d holds about its shard", source, i, n)
			}
		}
	}
}

// TestBrowserLoadsSplitGGUF: a model in parts as llama-gguf-split writes
// them loads from its first part's URL (the others found by name), or from
// its parts as Blobs, whole or split across workers.
func TestBrowserLoadsSplitGGUF(t *testing.T) {
	sp := shardSpec
	sp.Shape.Layers, sp.Shape.Dim, sp.Shape.HiddenDim = 3, 512, 1024
	whole, err := modelgen.Build(sp)
	require.NoError(t, err)
	want := nativeGreedy(t, whole, bigPrompt, 10)
	parts, err := modelgen.BuildSplit(sp, 3)
	require.NoError(t, err)
	tb := newTab(t, blankPage)
	var first string
	for i, p := range parts {
		path, _ := serveFile(t, tb.site, fmt.Sprintf("tiny-%05d-of-00003.gguf", i+1), p)
		if i == 0 {
			first = path
		}
	}
	blobs := `await Promise.all([1, 2, 3].map(async (i) => (await fetch('` + filesDir + `tiny-0000' + i + '-of-00003.gguf')).blob()))`
	for _, c := range []struct{ source, options string }{
		{`'` + first + `'`, "{ cache: false }"},
		{`'` + first + `'`, "{ workers: 2, cache: false }"},
		{`'` + first + `'`, "{ workers: 1 }"}, // through the cache
		{blobs, "{ workers: 1 }"},
		{blobs, "{ workers: 2 }"},
	} {
		got := eval[bigRun](t, tb, apiScript(bigLoadScript(c.source, c.options, bigPrompt, 10)))
		require.Nil(t, got.Error, "%s %s", c.source, c.options)
		assert.Equal(t, want, got.Tokens, "%s %s", c.source, c.options)
	}
	got := eval[bigRun](t, tb, apiScript(bigLoadScript(`[(`+blobs+`)[0], (`+blobs+`)[2]]`, "{ workers: 1 }", bigPrompt, 4)))
	require.NotNil(t, got.Error, "a part missing")
	assert.Equal(t, "invalid_model", got.Error.Code, got.Error.Message)

	// The parts are cached now. A sha256 (one file's digest) is refused
	// before the cache is touched; inspect takes load's options; deleting
	// the first part's URL deletes every part's entry.
	cached := eval[struct {
		Code        string `json:"code"`
		Field       string `json:"field"`
		Before      int    `json:"before"`
		AfterSHA    int    `json:"afterSHA"`
		Parts       int    `json:"parts"`
		Deleted     bool   `json:"deleted"`
		AfterDelete int    `json:"afterDelete"`
	}](t, tb, apiScript(`
		const first = '`+first+`';
		const count = async () => (await WasmLM.cache.list()).filter((e) => e.url.includes('/tiny-0000')).length;
		const before = await count();
		let code = '', field = '';
		try {
			(await WasmLM.load(first, { sha256: '0'.repeat(64) })).unload();
		} catch (e) {
			code = e.code;
			field = e.field ?? '';
		}
		const afterSHA = await count();
		const options = { workers: 'auto', cache: true, onProgress: () => {}, simd: true };
		const seen = await WasmLM.inspect(first, options);
		const deleted = await WasmLM.cache.delete(first);
		return { code, field, before, afterSHA, parts: seen.parts, deleted, afterDelete: await count() };
	`))
	assert.Equal(t, "invalid_argument", cached.Code)
	assert.Equal(t, "sha256", cached.Field)
	assert.Equal(t, 3, cached.Before, "the three parts cached")
	assert.Equal(t, 3, cached.AfterSHA, "a refused sha256 leaves the cache alone")
	assert.Equal(t, 3, cached.Parts, "inspect with load's options")
	assert.True(t, cached.Deleted)
	assert.Equal(t, 0, cached.AfterDelete, "cache.delete of the first part deletes every part")
}

// TestBrowserModelTooLarge: a model's header says what it takes, so inspect
// and load judge an 8B-parameter model (a header claiming 4.4 GB of
// weights, served as zeros after it) from its first bytes: inspect reports
// the memory, load rejects a split that does not fit with model_too_large,
// naming the numbers and the workers count that would fit — and neither
// reads past the header.
func TestBrowserModelTooLarge(t *testing.T) {
	big := modelgen.Spec{Shape: modelgen.Shape{Dim: 4096, HiddenDim: 14336, Layers: 32, Heads: 32, KVHeads: 8, VocabSize: 32000, ContextLength: 8192}, Type: tensor.Q4_0}
	l, err := modelgen.Header(big)
	require.NoError(t, err)
	tb := newTab(t, blankPage)
	path, served := serveReader(t, tb.site, "big-8b.gguf", int64(l.Size), func() io.ReadSeeker {
		return &zeroTail{header: l.Header, size: int64(l.Size)}
	})
	type result struct {
		Inspection struct {
			Architecture string  `json:"architecture"`
			Parameters   float64 `json:"parameters"`
			FileSize     float64 `json:"fileSize"`
			KVType       string  `json:"kvType"`
			Memory       struct {
				Weights       float64 `json:"weights"`
				KVCache       float64 `json:"kvCache"`
				Total         float64 `json:"total"`
				Workers       int     `json:"workers"`
				WorkersNeeded *int    `json:"workersNeeded"`
				Fits          bool    `json:"fits"`
				PerWorker     struct {
					Total float64 `json:"total"`
				} `json:"perWorker"`
			} `json:"memory"`
		} `json:"inspection"`
		OneWorker   jsError `json:"oneWorker"`
		SmallDevice jsError `json:"smallDevice"`
		Needed      any     `json:"needed"`
	}
	got := eval[result](t, tb, apiScript(`
		const url = '`+path+`';
		const inspection = await WasmLM.inspect(url);
		const fail = async (options) => {
			try { (await WasmLM.load(url, options)).unload(); return null; } catch (e) { return { name: e.name, message: e.message, code: e.code, needed: e.workersNeeded }; }
		};
		const oneWorker = await fail({ workers: 1 });
		Object.defineProperty(navigator, 'deviceMemory', { value: 4, configurable: true });
		const smallDevice = await fail({});
		delete navigator.deviceMemory;
		return { inspection, oneWorker, smallDevice, needed: oneWorker?.needed };
	`))
	in := got.Inspection
	assert.Equal(t, "llama", in.Architecture)
	assert.InDelta(t, 7.1e9, in.Parameters, 0.2e9)
	assert.Equal(t, float64(l.Size), in.FileSize)
	assert.Equal(t, "f16", in.KVType)
	assert.Equal(t, float64(l.Size), in.Memory.Weights)
	require.NotNil(t, in.Memory.WorkersNeeded)
	assert.Equal(t, 2, *in.Memory.WorkersNeeded, "4.4 GB needs two workers")
	assert.True(t, in.Memory.Fits)
	assert.Less(t, in.Memory.PerWorker.Total, in.Memory.Total*0.6)
	assert.Equal(t, "model_too_large", got.OneWorker.Code, got.OneWorker.Message)
	assert.Contains(t, got.OneWorker.Message, "workers: 2")
	assert.Equal(t, float64(2), got.Needed)
	assert.Equal(t, "model_too_large", got.SmallDevice.Code, got.SmallDevice.Message)
	assert.Contains(t, got.SmallDevice.Message, "no split fits")
	for _, r := range served.requests() {
		assert.True(t, strings.HasPrefix(r, "bytes=0-"), "only the header is read, not %q", r)
		assert.LessOrEqual(t, rangeBytes(t, r), int64(4<<20), "only the header is read, not %q", r)
	}
}

// TestBrowserSplits8BAcrossWorkers: a model larger than one WebAssembly
// memory (Llama-3-8B's shape, 32000-token vocabulary, Q4_0: 4.1 GB,
// written by the test) loads across workers in Chromium — each reading only
// its shard's ranges over HTTP, none holding 3 GB — and computes what the
// native engine does: each greedy token's ten best candidates and their
// logits, bit for bit (random weights make greedy decoding repeat a token,
// so the tokens alone would prove little).
func TestBrowserSplits8BAcrossWorkers(t *testing.T) {
	sp := modelgen.Spec{Shape: modelgen.Llama8B(), Type: tensor.Q4_0, Fast: true, Seed: 8, MuteSpecial: true, SeparateOutput: true}
	file := filepath.Join(t.TempDir(), "llama8b-Q4_0.gguf")
	start := time.Now()
	f, err := os.Create(file)
	require.NoError(t, err)
	size, err := modelgen.Write(f, sp)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	t.Logf("wrote %s: %.2f GB in %.1f s", file, float64(size)/1e9, time.Since(start).Seconds())

	start = time.Now()
	want := func() [][]candidate {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		defer debug.FreeOSMemory() // before Chromium takes as much again
		m, err := engine.LoadGGUF(data)
		require.NoError(t, err)
		s, err := m.NewSession(engine.SessionOptions{})
		require.NoError(t, err)
		var out [][]candidate
		_, err = s.Generate(context.Background(), "Hi", engine.GenerateOptions{MaxTokens: 4, Trace: true}, func(tok engine.Token) error {
			var top []candidate
			for _, e := range tok.Trace.Top[:tok.Trace.N] {
				top = append(top, candidate{ID: e.ID, Logit: e.Logit})
			}
			out = append(out, top)
			return nil
		})
		require.NoError(t, err)
		return out
	}()
	t.Logf("native: %v in %.1f s", want, time.Since(start).Seconds())

	tb := newTab(t, blankPage)
	path, served := serveReader(t, tb.site, "llama8b.gguf", size, func() io.ReadSeeker {
		f, err := os.Open(file)
		if err != nil {
			return &zeroTail{} // the request fails short, and the test with it
		}
		t.Cleanup(func() { f.Close() })
		return f
	})
	require.NoError(t, headless.ResetPeaks(tb.ctx))
	start = time.Now()
	got := eval[struct {
		bigRun
		Top [][]candidate `json:"top"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load('`+path+`', { cache: false });
		const top = [];
		const s = lm.stream('Hi', { temperature: 0, maxTokens: 4, trace: true });
		for await (const c of s) top.push(c.trace.top.map((e) => ({ id: e.id, logit: e.logit })));
		const r = await s.result;
		lm.unload();
		return { workers: lm.info.workers, tokens: r.tokens, memory: r.wasmMemoryBytesPerWorker, top };
	`))
	require.Nil(t, got.Error)
	assert.Equal(t, want, got.Top, "each token's ten best candidates and their logits are the engine's, bit for bit")
	assert.GreaterOrEqual(t, got.Workers, 2, "a 4.1 GB model needs two workers")
	assert.LessOrEqual(t, got.Workers, 3)
	for i, m := range got.Memory {
		assert.Less(t, m, float64(3<<30), "worker %d's memory", i)
	}
	var read int64
	for _, r := range served.requests() {
		require.NotEmpty(t, r, "a request for the whole file")
		read += rangeBytes(t, r)
	}
	assert.Less(t, float64(read), float64(size)*1.2, "the workers read about the file once between them")
	rs, err := headless.Renderers(tb.ctx)
	require.NoError(t, err)
	var peak uint64
	for _, r := range rs {
		peak = max(peak, r.PeakRSS)
	}
	t.Logf("Chromium: %d workers, %v, %.1f s; renderer peak %d MiB (the page's workers share its process)",
		got.Workers, mibs(got.Memory), time.Since(start).Seconds(), peak>>20)
}

// TestBrowserLoadResumesAnInterruptedDownload: a load whose download is cut
// off halfway rejects with fetch_failed and keeps what arrived; the next
// load asks for the rest (Range from where it stopped, If-Range) and runs
// the model, giving the engine's tokens.
func TestBrowserLoadResumesAnInterruptedDownload(t *testing.T) {
	sp := shardSpec
	sp.Shape.Layers, sp.Shape.Dim, sp.Shape.HiddenDim = 2, 512, 1024
	data, err := modelgen.Build(sp)
	require.NoError(t, err)
	want := nativeGreedy(t, data, bigPrompt, 8)
	tb, m := newCacheSite(t)
	tb.expect("ERR_CONTENT_LENGTH_MISMATCH")
	etag := m.put("model.gguf", data)
	half := len(data)/2 + 7
	m.dropDownloadAfter(half)
	type attempt struct {
		Code   string `json:"code"`
		Tokens []int  `json:"tokens"`
		Cached bool   `json:"cached"`
	}
	load := func() attempt {
		return eval[attempt](t, tb, `(async () => {
			const { WasmLM } = await import('/wasmlm.js');
			let cached = false, released = false;
			const onProgress = (p) => {
				cached = p.cached;
				if (p.phase === 'download' && p.loaded >= `+strconv.Itoa(half)+` && !released) {
					released = true;
					fetch('`+releasePath+`', { method: 'POST' });
				}
			};
			try {
				const lm = await WasmLM.load('`+modelsPath+`model.gguf', { onProgress });
				const r = await lm.generate('`+bigPrompt+`', { temperature: 0, maxTokens: 8 });
				lm.unload();
				return { tokens: r.tokens, cached };
			} catch (e) {
				return { code: e.code ?? String(e) };
			}
		})()`)
	}
	first := load()
	require.Equal(t, "fetch_failed", first.Code, "a download cut off halfway")
	second := load()
	require.Empty(t, second.Code)
	assert.Equal(t, want, second.Tokens, "the resumed model is the file")
	third := load()
	assert.Equal(t, want, third.Tokens)
	assert.True(t, third.Cached, "the third load reads the cache")
	var downloads []modelRequest
	for _, r := range m.log() {
		if !strings.HasPrefix(r.Range, "bytes=0-") { // not a read of the header
			downloads = append(downloads, r)
		}
	}
	require.Len(t, downloads, 2, "%+v", m.log())
	assert.True(t, downloads[0].Dropped)
	assert.Equal(t, fmt.Sprintf("bytes=%d-", half), downloads[1].Range, "the second load resumes where the first stopped")
	assert.Equal(t, etag, downloads[1].IfRange)
	assert.Equal(t, 206, downloads[1].Status)
}
