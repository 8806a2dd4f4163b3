package httpapi

import (
	"cmp"
	"encoding/json"
	"maps"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/openai"
)

// llamacppLogprobs is the log-softmax, in float64, of llama.cpp's logits
// after "Once upon a time" for the default model's file (stories260K in
// F16: engine/testdata's golden), and the bound our logprobs keep to it:
// twice the logits' (a shift of every logit by d moves a log-probability by
// at most 2d), the engine's for an F16 file (half its quantization error,
// as TestGGUFQuantizedLogits bounds it).
func llamacppLogprobs(t *testing.T) ([]float64, float64) {
	raw, err := os.ReadFile("../engine/testdata/llamacpp_stories260K_kvf32.json")
	require.NoError(t, err)
	var g struct {
		Results map[string][]struct {
			Prompt string    `json:"prompt"`
			Logits []float32 `json:"logits_after_prompt"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(raw, &g))
	const run = 1
	require.Equal(t, "Once upon a time", g.Results["F16"][run].Prompt)
	logits, f32 := g.Results["F16"][run].Logits, g.Results["F32"][run].Logits
	worst, peak, sum := 0.0, math.Inf(-1), 0.0
	for i, x := range logits {
		worst = math.Max(worst, math.Abs(float64(x-f32[i])))
		peak = math.Max(peak, float64(x))
	}
	for _, x := range logits {
		sum += math.Exp(float64(x) - peak)
	}
	out := make([]float64, len(logits))
	for i, x := range logits {
		out[i] = float64(x) - peak - math.Log(sum)
	}
	return out, 2 * math.Max(1e-4, worst/2)
}

// TestLogprobsOverHTTP: logprobs (completions) and logprobs with
// top_logprobs (chat), whole and streamed, in OpenAI's shapes; the first
// token's are llama.cpp's to the parity bound, whatever the temperature;
// a stream carries the tokens of the whole answer, and bad values are
// refused naming the field.
func TestLogprobsOverHTTP(t *testing.T) {
	want, tol := llamacppLogprobs(t)
	h := newHandler(t, Options{})

	var text struct {
		Choices []struct {
			Text     string              `json:"text"`
			Logprobs openai.TextLogprobs `json:"logprobs"`
		} `json:"choices"`
	}
	w := do(h, "POST", "/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 4, "logprobs": 5, "temperature": 1.5, "seed": 1}`)
	require.Equal(t, 200, w.Code, w.Body.String())
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &text))
	lp := text.Choices[0].Logprobs
	require.Len(t, lp.Tokens, 4)
	require.Len(t, lp.TopLogprobs[0], 5)
	joined, offset := "", 0
	for i, tok := range lp.Tokens {
		assert.Equal(t, offset, lp.TextOffset[i])
		joined += tok
		offset += len(tok)
	}
	assert.Equal(t, text.Choices[0].Text, joined)
	// The alternatives are llama.cpp's five most likely, in its order.
	best := slices.Clone(want)
	slices.SortFunc(best, func(a, b float64) int { return cmp.Compare(b, a) })
	got := slices.Collect(maps.Values(lp.TopLogprobs[0]))
	slices.SortFunc(got, func(a, b float64) int { return cmp.Compare(b, a) })
	for i, v := range got {
		assert.InDelta(t, best[i], v, tol, "rank %d", i)
	}
	if v, ok := lp.TopLogprobs[0][lp.Tokens[0]]; ok {
		assert.Equal(t, v, lp.TokenLogprobs[0], "the drawn token's among its alternatives")
	}

	chatBody := `{"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 6, "logprobs": true, "top_logprobs": 3, "seed": 2`
	var whole struct {
		Choices []struct {
			Logprobs openai.ChatLogprobs `json:"logprobs"`
		} `json:"choices"`
	}
	w = do(h, "POST", "/v1/chat/completions", chatBody+`}`)
	require.Equal(t, 200, w.Code, w.Body.String())
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &whole))
	content := whole.Choices[0].Logprobs.Content
	require.Len(t, content, 6)
	for _, e := range content {
		require.Len(t, e.TopLogprobs, 3)
		assert.GreaterOrEqual(t, e.TopLogprobs[0].Logprob, e.TopLogprobs[1].Logprob)
		assert.Equal(t, []byte(e.Token), bytesOf(e.Bytes))
	}
	var streamed []openai.ChatLogprob
	for _, ev := range parseSSE(t, do(h, "POST", "/v1/chat/completions", chatBody+`, "stream": true}`).Body.String()) {
		if ev.data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Logprobs *openai.ChatLogprobs `json:"logprobs"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &c))
		if len(c.Choices) > 0 && c.Choices[0].Logprobs != nil {
			streamed = append(streamed, c.Choices[0].Logprobs.Content...)
		}
	}
	assert.Equal(t, content, streamed)

	for _, tc := range []struct{ path, body, param string }{
		{"/v1/completions", `{"prompt": "x", "logprobs": 21}`, "logprobs"},
		{"/v1/completions", `{"prompt": "x", "logprobs": -1}`, "logprobs"},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2}`, "top_logprobs"},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21}`, "top_logprobs"},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}], "logprobs": 3}`, "logprobs"},
	} {
		w := do(h, "POST", tc.path, tc.body)
		require.Equal(t, 400, w.Code, tc.body)
		assert.Equal(t, &tc.param, apiErrorOf(t, w.Body.Bytes()).Param, tc.body)
	}
}

// bytesOf is b's values as bytes.
func bytesOf(b []int) []byte {
	out := make([]byte, len(b))
	for i, v := range b {
		out[i] = byte(v)
	}
	return out
}
