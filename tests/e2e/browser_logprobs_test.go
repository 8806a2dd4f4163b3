//go:build !js

package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBrowserChatCompletionsLogprobs: the page's chat.completions.create
// answers logprobs and top_logprobs in OpenAI's shape, the streamed chunks
// carrying the same tokens as the whole answer, with the values the HTTP
// API gives for the same request (one engine: the same bits), and takes
// a "developer" message as a system one.
func TestBrowserChatCompletionsLogprobs(t *testing.T) {
	tb := newTab(t, blankPage)
	type logprobs struct {
		Content []struct {
			Token       string  `json:"token"`
			Logprob     float64 `json:"logprob"`
			Bytes       []int   `json:"bytes"`
			TopLogprobs []struct {
				Token   string  `json:"token"`
				Logprob float64 `json:"logprob"`
			} `json:"top_logprobs"`
		} `json:"content"`
	}
	type answer struct {
		Choices []struct {
			Logprobs *logprobs `json:"logprobs"`
		} `json:"choices"`
	}
	request := `{"messages": [{"role": "developer", "content": "Once upon a time"}, {"role": "user", "content": "there was"}], "temperature": 0, "max_tokens": 5, "logprobs": true, "top_logprobs": 2}`
	got := eval[struct {
		Whole   answer   `json:"whole"`
		Chunks  []answer `json:"chunks"`
		Without answer   `json:"without"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load();
		const request = `+request+`;
		const whole = await lm.chat.completions.create(request);
		const chunks = [];
		for await (const c of await lm.chat.completions.create({ ...request, stream: true })) chunks.push(c);
		const without = await lm.chat.completions.create({ ...request, logprobs: undefined, top_logprobs: undefined });
		lm.unload();
		return { whole, chunks, without };
	`))
	whole := got.Whole.Choices[0].Logprobs
	require.NotNil(t, whole)
	require.Len(t, whole.Content, 5)
	for _, e := range whole.Content {
		require.Len(t, e.TopLogprobs, 2)
		assert.Equal(t, e.TopLogprobs[0].Logprob, e.Logprob, "greedy: the most likely")
	}
	var streamed logprobs
	for _, c := range got.Chunks {
		if len(c.Choices) > 0 && c.Choices[0].Logprobs != nil {
			streamed.Content = append(streamed.Content, c.Choices[0].Logprobs.Content...)
		}
	}
	assert.Equal(t, *whole, streamed)
	assert.Nil(t, got.Without.Choices[0].Logprobs)

	resp, err := http.Post(nativeServer(t).URL+"/v1/chat/completions", "application/json", strings.NewReader(request))
	require.NoError(t, err)
	defer resp.Body.Close()
	var native answer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&native))
	assert.Equal(t, native.Choices[0].Logprobs, whole, "the page's log-probabilities are the HTTP API's")
}
