//go:build !js

package e2e

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
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
func nativeGreedy(t testing.TB, data []byte, n int) []int {
	t.Helper()
	m, err := engine.LoadGGUF(data)
	require.NoError(t, err)
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	r, err := s.Generate(context.Background(), bigPrompt, engine.GenerateOptions{MaxTokens: n}, nil)
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

type bigRun struct {
	Workers int       `json:"workers"`
	Tokens  []int     `json:"tokens"`
	Memory  []float64 `json:"memory"`
	Error   *jsError  `json:"error"`
}

// bigLoadScript loads source (a JavaScript expression) with options, runs
// a greedy generation and reports the workers' memory.
func bigLoadScript(source, options string, n int) string {
	return `
		try {
			const lm = await WasmLM.load(` + source + `, ` + options + `);
			const r = await lm.generate('` + bigPrompt + `', { temperature: 0, maxTokens: ` + strconv.Itoa(n) + ` });
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
	want := nativeGreedy(t, data, 12)
	tb := newTab(t, blankPage)
	path, served := serveFile(t, tb.site, "shards.gguf", data)
	size := float64(len(data))
	for _, n := range []int{1, 2, 3} {
		before := len(served.requests())
		got := eval[bigRun](t, tb, apiScript(bigLoadScript(`'`+path+`'`, fmt.Sprintf("{ workers: %d, cache: false }", n), 12)))
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
	for _, source := range []string{
		`await (await fetch('` + path + `')).blob()`,
		`await (await fetch('` + path + `')).arrayBuffer()`,
	} {
		got := eval[bigRun](t, tb, apiScript(bigLoadScript(source, "{ workers: 2 }", 12)))
		require.Nil(t, got.Error, source)
		assert.Equal(t, want, got.Tokens, source)
		for i, m := range got.Memory {
			assert.Less(t, m, size/2+size*0.15+48<<20, "%s: worker %d holds about its shard", source, i)
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
	want := nativeGreedy(t, whole, 10)
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
		got := eval[bigRun](t, tb, apiScript(bigLoadScript(c.source, c.options, 10)))
		require.Nil(t, got.Error, "%s %s", c.source, c.options)
		assert.Equal(t, want, got.Tokens, "%s %s", c.source, c.options)
	}
	got := eval[bigRun](t, tb, apiScript(bigLoadScript(`[(`+blobs+`)[0], (`+blobs+`)[2]]`, "{ workers: 1 }", 4)))
	require.NotNil(t, got.Error, "a part missing")
	assert.Equal(t, "invalid_model", got.Error.Code, got.Error.Message)
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
