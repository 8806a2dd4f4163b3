//go:build !js

package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// Where the SIMD128 kernels cannot run, the page's worker runs the pure-Go
// ones: the model loads, lm.info says why there is no SIMD, and greedy
// generation still reproduces llama2.c. Each case breaks something in a
// fresh tab (the page compiles the kernels once per page) before wasmlm.js
// is imported. TestBrowserGreedyStreamWithAndWithoutSIMD covers simd: false.
func TestBrowserSIMDFallback(t *testing.T) {
	run := golden.RuncStories260K(t).Runs[1]
	require.Equal(t, "Once upon a time", run.Prompt)
	const n = 20
	cases := []struct {
		name   string
		setup  string // JavaScript run in the page first
		reason string // in lm.info.simdReason; {site} stands for the site's URL
	}{
		{"the kernels do not load", `
			const realFetch = globalThis.fetch;
			globalThis.fetch = (input, init) => /\/wasmlm-simd(-relaxed)?\.wasm$/.test(String(input?.url ?? input))
				? Promise.reject(new TypeError('blocked by the test'))
				: realFetch(input, init);`,
			"the SIMD kernels did not load: fetching {site}/wasmlm-simd.wasm failed: blocked by the test"},
		{"the browser has no SIMD128", `WebAssembly.validate = () => false;`,
			"this browser has no WebAssembly SIMD128"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := newTab(t, blankPage)
			got := eval[struct {
				SIMD       bool   `json:"simd"`
				SIMDReason string `json:"simdReason"`
				Tokens     []int  `json:"tokens"`
			}](t, tb, `(async () => {
				`+c.setup+`
				return `+apiScript(`
					const lm = await WasmLM.load();
					const r = await lm.generate('Once upon a time', { temperature: 0, maxTokens: `+strconv.Itoa(n)+` });
					lm.unload();
					return { simd: lm.info.simd, simdReason: lm.info.simdReason, tokens: r.tokens };
				`)+`;
			})()`)
			assert.False(t, got.SIMD)
			assert.Equal(t, strings.ReplaceAll(c.reason, "{site}", tb.site.url), got.SIMDReason)
			assert.Equal(t, run.GeneratedIDs[:n], got.Tokens, "the pure-Go kernels still give llama2.c's tokens")
		})
	}
}

// Chromium has relaxed SIMD, so by default the page runs the relaxed-SIMD
// build of the kernels (lm.info.simdRelaxed); they compute the same bits as
// the SIMD128 ones (simd: 'simd128') and pure Go (simd: false), so greedy
// generation gives the same tokens with all three, on the quantized types
// the relaxed kernels cover: stories260K in Q4_0, Q8_0, Q4_1, Q5_0 and Q5_1, the synthetic
// dim-256 model's real Q4_K and Q6_K tensors (engine/testdata/gguf) and a
// generated dim-256 model in Q5_K. If the relaxed build fails to load, the
// page falls back to the SIMD128 one.
func TestBrowserRelaxedSIMDGivesTheSameTokens(t *testing.T) {
	tb := newTab(t, blankPage)
	q5K, err := modelgen.Build(modelgen.Spec{Shape: modelgen.Shape{Dim: 256, HiddenDim: 768, Layers: 2, Heads: 4, KVHeads: 2,
		VocabSize: modelgen.MinVocabSize, ContextLength: 256}, Type: tensor.Q5_K, Seed: 55})
	require.NoError(t, err)
	q5KPath, _ := serveFile(t, tb.site, "synth-k256-Q5_K.gguf", q5K)
	files := []string{}
	for _, f := range []string{"stories260K-Q4_0.gguf", "stories260K-Q8_0.gguf", "stories260K-Q4_1.gguf", "stories260K-Q5_0.gguf", "stories260K-Q5_1.gguf", "synth-k256-Q4_K_M.gguf", "synth-k256-Q6_K.gguf"} {
		files = append(files, llama2cDir+"gguf/"+f)
	}
	files = append(files, q5KPath)
	type outcome struct {
		SIMD        bool   `json:"simd"`
		SIMDRelaxed bool   `json:"simdRelaxed"`
		Tokens      []int  `json:"tokens"`
		Error       string `json:"error"`
	}
	got := eval[map[string][]outcome](t, tb, apiScript(`
		const out = {};
		for (const file of `+jsonString(t, files)+`) {
			out[file] = [];
			for (const simd of [true, 'simd128', false]) {
				try {
					const lm = await WasmLM.load(file, { simd, cache: false });
					const r = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 48 });
					out[file].push({ simd: lm.info.simd, simdRelaxed: lm.info.simdRelaxed, tokens: r.tokens, error: '' });
					lm.unload();
				} catch (e) {
					out[file].push({ simd: false, simdRelaxed: false, tokens: [], error: String(e) });
				}
			}
		}
		return out;
	`))
	require.Len(t, got, len(files))
	for file, o := range got {
		require.Len(t, o, 3, file)
		for i, mode := range []string{"relaxed", "simd128", "pure Go"} {
			require.Empty(t, o[i].Error, "%s, %s", file, mode)
			assert.Len(t, o[i].Tokens, 48, "%s, %s", file, mode)
			assert.Equal(t, i < 2, o[i].SIMD, "%s, %s: info.simd", file, mode)
			assert.Equal(t, i == 0, o[i].SIMDRelaxed, "%s, %s: info.simdRelaxed", file, mode)
		}
		assert.Equal(t, o[2].Tokens, o[0].Tokens, "%s: relaxed SIMD and pure Go", file)
		assert.Equal(t, o[2].Tokens, o[1].Tokens, "%s: SIMD128 and pure Go", file)
	}

	// The relaxed build blocked: the SIMD128 one, no reason given.
	tb = newTab(t, blankPage)
	fallback := eval[outcome](t, tb, `(async () => {
		const realFetch = globalThis.fetch;
		globalThis.fetch = (input, init) => String(input?.url ?? input).endsWith('/wasmlm-simd-relaxed.wasm')
			? Promise.reject(new TypeError('blocked by the test'))
			: realFetch(input, init);
		return `+apiScript(`
			const lm = await WasmLM.load('`+llama2cDir+`gguf/stories260K-Q4_0.gguf', { cache: false });
			const r = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 48 });
			lm.unload();
			return { simd: lm.info.simd, simdRelaxed: lm.info.simdRelaxed, tokens: r.tokens, error: lm.info.simdReason ?? '' };
		`)+`;
	})()`)
	assert.True(t, fallback.SIMD)
	assert.False(t, fallback.SIMDRelaxed)
	assert.Empty(t, fallback.Error)
	assert.Equal(t, got[files[0]][0].Tokens, fallback.Tokens)
}

// A simd load option that is not a boolean is a TypeError naming it.
func TestBrowserSIMDOptionMustBeBoolean(t *testing.T) {
	tb := newTab(t, blankPage)
	got := eval[jsError](t, tb, apiScript(`
		try {
			(await WasmLM.load(undefined, { simd: 'no' })).unload();
			return { name: '', message: 'loaded', code: '', field: '' };
		} catch (e) {
			return { name: e.name, message: e.message, code: e.code ?? '', field: e.field ?? '' };
		}
	`))
	assert.Equal(t, "TypeError", got.Name)
	assert.Equal(t, `wasmlm: invalid argument: simd must be a boolean or 'simd128', got string "no"`, got.Message)
	assert.Equal(t, "invalid_argument", got.Code)
	assert.Equal(t, "simd", got.Field)
}
