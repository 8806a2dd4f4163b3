package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/openai"
)

// goldenRequest is the request that reproduces one golden run: greedy, as
// many tokens as run.c generated.
func goldenRequest(prompt string, maxTokens int, chat, stream bool) map[string]any {
	req := map[string]any{"model": "anything", "temperature": 0, "max_tokens": maxTokens, "stream": stream}
	if stream {
		req["stream_options"] = map[string]any{"include_usage": true}
	}
	if chat {
		req["messages"] = []map[string]string{{"role": "user", "content": prompt}}
	} else {
		req["prompt"] = prompt
	}
	return req
}

// TestGreedyMatchesLlama2C: a greedy completion (temperature 0) of each
// golden prompt returns llama2.c run.c's text and token counts, streamed
// or not, through /v1/completions and, since the default model has no chat
// template ("plain": the message content is the prompt), through
// /v1/chat/completions. Streamed, every token is its own content event.
func TestGreedyMatchesLlama2C(t *testing.T) {
	g := golden.RuncStories260K(t)
	h := newHandler(t, Options{})
	for _, run := range g.Runs {
		wantText := strings.TrimPrefix(run.Text, run.Prompt) // run.c prints the prompt first
		maxTokens := g.Steps + 1 - len(run.PromptIDs)
		wantFinish := "length"
		if run.StoppedAtBOS {
			wantFinish = "stop"
		}
		for _, chat := range []bool{false, true} {
			path := "/v1/completions"
			if chat {
				path = "/v1/chat/completions"
				if run.Prompt == "" {
					continue // an empty message is still a message; covered by /v1/completions
				}
			}
			t.Run(path+"/"+run.Prompt, func(t *testing.T) {
				c := decodeCompletion(t, do(h, "POST", path, mustJSON(t, goldenRequest(run.Prompt, maxTokens, chat, false))))
				assert.Equal(t, wantText, c.text(t))
				assert.Equal(t, len(run.PromptIDs), c.Usage.PromptTokens)
				assert.Equal(t, len(run.GeneratedIDs), c.Usage.CompletionTokens)
				assert.Equal(t, wantFinish, c.Choices[0].FinishReason)
			})
			t.Run(path+"/stream/"+run.Prompt, func(t *testing.T) {
				w := do(h, "POST", path, mustJSON(t, goldenRequest(run.Prompt, maxTokens, chat, true)))
				require.Equal(t, http.StatusOK, w.Code)
				s := readStream(t, w.Body.String(), chat)
				assert.Equal(t, wantText, s.text)
				assert.Equal(t, len(run.GeneratedIDs), s.contentEvents, "one event per token")
				assert.Equal(t, wantFinish, s.finish)
				require.NotNil(t, s.usage)
				assert.Equal(t, len(run.PromptIDs), s.usage.PromptTokens)
				assert.Equal(t, len(run.GeneratedIDs), s.usage.CompletionTokens)
			})
		}
	}
}

// TestStopString: a stop string ends the text just before its first
// occurrence in the greedy golden text, with finish_reason "stop".
func TestStopString(t *testing.T) {
	g := golden.RuncStories260K(t)
	run := g.Runs[1]
	require.Equal(t, "Once upon a time", run.Prompt)
	golden := strings.TrimPrefix(run.Text, run.Prompt)
	h := newHandler(t, Options{})
	for _, stop := range []any{"Lily", []string{"park", "Lily"}, []string{"\n"}} {
		first := len(golden)
		for _, s := range stopStrings(stop) {
			if i := strings.Index(golden, s); i >= 0 && i < first {
				first = i
			}
		}
		require.Less(t, first, len(golden), "the stop string occurs in the golden text")
		for _, stream := range []bool{false, true} {
			req := goldenRequest(run.Prompt, 150, false, stream)
			req["stop"] = stop
			w := do(h, "POST", "/v1/completions", mustJSON(t, req))
			if stream {
				s := readStream(t, w.Body.String(), false)
				assert.Equal(t, golden[:first], s.text, "%v", stop)
				assert.Equal(t, "stop", s.finish)
				continue
			}
			c := decodeCompletion(t, w)
			assert.Equal(t, golden[:first], c.text(t), "%v", stop)
			assert.Equal(t, "stop", c.Choices[0].FinishReason)
		}
	}
}

func stopStrings(stop any) []string {
	if s, ok := stop.(string); ok {
		return []string{s}
	}
	return stop.([]string)
}

// streamResult is what readStream gathers from a completion stream.
type streamResult struct {
	text          string
	contentEvents int
	finish        string
	usage         *openai.Usage
	chunks        []streamChunk
}

// readStream checks a whole completion stream against OpenAI's chunk order
// (role chunk first for chat; content chunks; one finish chunk; an optional
// usage chunk with no choices; data: [DONE] last) and that every chunk has
// the same id, created and model.
func readStream(t testing.TB, body string, chat bool) streamResult {
	t.Helper()
	events := parseSSE(t, body)
	require.NotEmpty(t, events)
	require.Equal(t, "[DONE]", events[len(events)-1].data, "the stream ends with [DONE]")
	var r streamResult
	for i, ev := range events[:len(events)-1] {
		require.Empty(t, ev.name, "event %d: only data events in a good stream", i)
		var c streamChunk
		require.NoError(t, json.Unmarshal([]byte(ev.data), &c), ev.data)
		r.chunks = append(r.chunks, c)
		if i > 0 {
			require.Equal(t, r.chunks[0].ID, c.ID)
			require.Equal(t, r.chunks[0].Created, c.Created)
			require.Equal(t, r.chunks[0].Model, c.Model)
		}
		wantObject := "text_completion"
		if chat {
			wantObject = "chat.completion.chunk"
		}
		require.Equal(t, wantObject, c.Object)
		if len(c.Choices) == 0 {
			require.Empty(t, r.usage, "one usage chunk")
			require.NotEmpty(t, r.finish, "the usage chunk follows the finish chunk")
			require.NoError(t, json.Unmarshal(c.Usage, &r.usage))
			require.NotNil(t, r.usage)
			continue
		}
		require.Len(t, c.Choices, 1)
		require.Empty(t, r.finish, "nothing but usage follows the finish chunk")
		ch := c.Choices[0]
		if chat && i == 0 {
			require.NotNil(t, ch.Delta, "chat chunks carry a delta")
			require.NotNil(t, ch.Delta.Role, "the first chat chunk has the role")
			require.Equal(t, "assistant", *ch.Delta.Role)
			require.Nil(t, ch.FinishReason)
			continue
		}
		var text *string
		if chat {
			require.NotNil(t, ch.Delta)
			require.Nil(t, ch.Delta.Role, "only the first chunk has the role")
			text = ch.Delta.Content
		} else {
			text = ch.Text
		}
		if ch.FinishReason != nil {
			r.finish = *ch.FinishReason
			require.True(t, text == nil || *text == "", "the finish chunk has no text")
			continue
		}
		require.NotNil(t, text)
		require.NotEmpty(t, *text, "a content chunk has text")
		r.text += *text
		r.contentEvents++
	}
	require.NotEmpty(t, r.finish, "a finish chunk")
	return r
}
