//go:build !js

package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Where the SIMD128 kernels cannot run, the page's worker runs the pure-Go
// ones: the model loads, lm.info says why there is no SIMD, and greedy
// generation still reproduces llama2.c. Each case breaks something in a
// fresh tab (the page compiles the kernels once per page) before wasmlm.js
// is imported. TestBrowserGreedyStreamWithAndWithoutSIMD covers simd: false.
func TestBrowserSIMDFallback(t *testing.T) {
	run := loadRuncGolden(t).Runs[1]
	require.Equal(t, "Once upon a time", run.Prompt)
	const n = 20
	cases := []struct {
		name   string
		setup  string // JavaScript run in the page first
		reason string // in lm.info.simdReason; {site} stands for the site's URL
	}{
		{"the kernels do not load", `
			const realFetch = globalThis.fetch;
			globalThis.fetch = (input, init) => String(input?.url ?? input).endsWith('/wasmlm-simd.wasm')
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
	assert.Equal(t, `wasmlm: invalid argument: simd must be a boolean, got string "no"`, got.Message)
	assert.Equal(t, "invalid_argument", got.Code)
	assert.Equal(t, "simd", got.Field)
}
