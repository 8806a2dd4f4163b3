//go:build !js

package e2e

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// familyPrompts are what TestBrowserEveryFamily asks each model, in order,
// of one loaded model: a prompt, one that extends the conversation so far
// (the session reuses its cache), and one that does not (it starts over).
var familyPrompts = []string{"Once upon a time", "Once upon a time there was a", "The cat sat"}

// familyTokens is how many tokens each prompt continues for.
const familyTokens = 12

// Every decoder architecture generates in the page as natively, token for
// token: the parity model of each (`wasmlm bench -gen DIR -shapes parity`,
// in its quantized test type, so the page's SIMD kernels run it) loaded
// in one page, continuing prompts that reuse the cache and prompts that
// do not, with the tokens of a fresh native session for each prompt.
func TestBrowserEveryFamily(t *testing.T) {
	tb := newTab(t, blankPage)
	for _, pm := range modelgen.ParityModels() {
		if pm.Spec.Type == tensor.F32 {
			continue
		}
		data, err := modelgen.Build(pm.Spec)
		require.NoError(t, err, pm.Name)
		// A session packs a model's quantized matrices in place: the
		// native engine gets a copy, the page the file's bytes.
		m, err := engine.Load(slices.Clone(data), engine.LoadOptions{})
		require.NoError(t, err, pm.Name)
		if !m.Generates() {
			continue // the encoders: TestBrowserEmbeddingModel
		}
		var want [][]int
		for _, p := range familyPrompts {
			s, err := m.NewSession(engine.SessionOptions{})
			require.NoError(t, err, pm.Name)
			res, err := s.Generate(context.Background(), p, engine.GenerateOptions{MaxTokens: familyTokens}, nil)
			require.NoError(t, err, pm.Name)
			want = append(want, res.Tokens)
		}
		path, _ := serveFile(t, tb.site, pm.Name+".gguf", data)
		got := eval[struct {
			Architecture string  `json:"architecture"`
			Device       string  `json:"device"`
			Tokens       [][]int `json:"tokens"`
		}](t, tb, apiScript(`
			const lm = await WasmLM.load('`+path+`', { device: 'cpu' });
			const tokens = [];
			for (const prompt of `+jsonString(t, familyPrompts)+`) {
				const r = await lm.generate(prompt, { temperature: 0, maxTokens: `+strconv.Itoa(familyTokens)+` });
				tokens.push(r.tokens);
			}
			const info = lm.info;
			lm.unload();
			return { architecture: info.architecture, device: info.device, tokens };
		`))
		assert.Equal(t, pm.Spec.Arch, got.Architecture, pm.Name)
		assert.Equal(t, "cpu", got.Device, pm.Name)
		assert.Equal(t, want, got.Tokens, "%s: the page's tokens are the native engine's", pm.Name)
	}
}
