//go:build !js

package e2e

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// llamacppRuns reads engine/testdata's llama.cpp greedy runs of the
// stories260K GGUF files with a KV cache of the given type ("f16", "f32").
func llamacppRuns(t *testing.T, kv string) map[string][]struct {
	Prompt       string `json:"prompt"`
	GeneratedIDs []int  `json:"generated_ids"`
} {
	t.Helper()
	data, err := os.ReadFile("../../engine/testdata/llamacpp_stories260K_kv" + kv + ".json")
	require.NoError(t, err)
	var g struct {
		Results map[string][]struct {
			Prompt       string `json:"prompt"`
			GeneratedIDs []int  `json:"generated_ids"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(data, &g))
	return g.Results
}

// In the page, load's kvType sets the session's KV cache: with 'f16' the
// stories260K GGUF files generate llama.cpp's tokens from its run with an
// F16 cache, with 'f32' those of its run with an F32 cache (F32 and Q8_0,
// the files whose greedy runs agree with llama.cpp's with either cache; see
// engine's TestGGUFKVF16MatchesLlamaCpp); info.kvType and
// inspect name the type, and 'auto' keeps this small model's cache in F32.
func TestBrowserKVTypeMatchesLlamaCpp(t *testing.T) {
	tb := newTab(t, blankPage)
	type run struct {
		KVType  string  `json:"kvType"`
		Inspect string  `json:"inspect"`
		KVCache float64 `json:"kvCache"`
		Tokens  [][]int `json:"tokens"`
		Error   string  `json:"error"`
	}
	for _, file := range []string{"Q8_0", "F32"} {
		golden := map[string][]struct {
			Prompt       string `json:"prompt"`
			GeneratedIDs []int  `json:"generated_ids"`
		}{"f16": llamacppRuns(t, "f16")[file], "f32": llamacppRuns(t, "f32")[file]}
		prompts, err := json.Marshal(func() (p []string) {
			for _, r := range golden["f16"] {
				p = append(p, r.Prompt)
			}
			return p
		}())
		require.NoError(t, err)
		got := eval[map[string]run](t, tb, apiScript(`
			const url = '`+llama2cDir+`gguf/stories260K-`+file+`.gguf';
			const out = {};
			for (const kvType of ['f16', 'f32', 'auto']) {
				try {
					const seen = await WasmLM.inspect(url, { kvType });
					const lm = await WasmLM.load(url, { kvType, cache: false });
					const tokens = [];
					for (const prompt of `+string(prompts)+`) {
						tokens.push((await lm.generate(prompt, { temperature: 0, maxTokens: 64 })).tokens);
					}
					out[kvType] = { kvType: lm.info.kvType, inspect: seen.kvType, kvCache: seen.memory.kvCache, tokens, error: '' };
					lm.unload();
				} catch (e) {
					out[kvType] = { kvType: '', inspect: '', kvCache: 0, tokens: [], error: String(e) };
				}
			}
			return out;
		`))
		for _, kv := range []string{"f16", "f32", "auto"} {
			r := got[kv]
			require.Empty(t, r.Error, "%s, kvType %s", file, kv)
			want := kv
			if kv == "auto" {
				want = "f32"
			}
			assert.Equal(t, want, r.KVType, "%s, kvType %s: info.kvType", file, kv)
			assert.Equal(t, want, r.Inspect, "%s, kvType %s: inspect's kvType", file, kv)
			require.Len(t, r.Tokens, len(golden[want]), file)
			for i, g := range golden[want] {
				assert.Equal(t, g.GeneratedIDs, r.Tokens[i], "%s, kvType %s, prompt %q: llama.cpp's tokens with an %s cache", file, kv, g.Prompt, want)
			}
		}
		assert.Equal(t, got["f32"].KVCache, 2*got["f16"].KVCache, "%s: an F16 cache is half an F32 one", file)
	}
}
