package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// TestForcedToolCallCutByMaxTokens: a forced call that max_tokens cuts
// short, streamed or not, finishes with "length", and neither its markup
// nor a piece of it reaches the content (nor a streamed content delta): the
// content is empty, the unfinished call dropped. Run for the default model
// (the generic format's JSON) and with a Hermes template (<tool_call>
// tags), at every max_tokens until the call fits.
func TestForcedToolCallCutByMaxTokens(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    *Handler
	}{
		{"default model", newHandler(t, Options{})},
		{"hermes", func() *Handler {
			h, err := New(hermesModel(t), Options{})
			require.NoError(t, err)
			return h
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut := 0
			for maxTokens := 1; maxTokens <= 64; maxTokens++ {
				body := `{"messages": [{"role": "user", "content": "What time is it?"}], ` + clockTools +
					`, "tool_choice": {"type": "function", "function": {"name": "get_time"}}, "seed": 3, "max_tokens": ` + strconv.Itoa(maxTokens)
				content, calls, finish := chatReplyOf(t, tc.h, body+"}")
				sContent, _, sCalls, sFinish := streamedReply(t, tc.h, body+`, "stream": true}`)
				assert.Equal(t, finish, sFinish, body)
				assert.Equal(t, calls, sCalls, body)
				if finish != "length" {
					assert.Equal(t, "tool_calls", finish, body)
					require.Len(t, calls, 1, body)
					assert.Nil(t, content)
					break
				}
				cut++
				if len(calls) == 0 {
					require.NotNil(t, content, "content is there without calls: %s", body)
					assert.Empty(t, *content, "a cut call's markup is no content: %s", body)
				}
				assert.Nil(t, sContent, "no content streamed: %s", body)
				for _, c := range calls {
					assert.JSONEq(t, `{}`, c.Function.Arguments, "only a whole call stays: %s", body)
				}
			}
			assert.Greater(t, cut, 3, "the call took a few tokens")
		})
	}
}

// TestForcedToolCallsNearMaxTokensAreTheModels: a forced call is not
// closed early to fit max_tokens. With a seed, a reply under a lower
// max_tokens is the start of the reply under none: its calls are the first
// of that reply's, each with the arguments the model wrote there, and it
// says "tool_calls" only if it holds them all; a reply max_tokens cut
// says "length" at the limit and drops the call it cut (the generic
// format's calls are one JSON object: a cut anywhere in it drops them
// all), streamed or not. Run for the
// default model (the generic format) and qwen3's random-weight parity
// model (<tool_call> tags), at the limits near where their calls end.
func TestForcedToolCallsNearMaxTokensAreTheModels(t *testing.T) {
	var qwen3 modelgen.Spec
	for _, pm := range modelgen.ParityModels() {
		if pm.Name == "qwen3-Q8_0" {
			qwen3 = pm.Spec
		}
	}
	require.NotEmpty(t, qwen3.Arch, "the qwen3 parity model")
	qm, err := engine.Load(testmodel.GGUF(t, qwen3), engine.LoadOptions{})
	require.NoError(t, err)
	qh, err := New(qm, Options{})
	require.NoError(t, err)
	const weather = `{"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": [{"type": "function", "function": {"name": "get_weather", ` +
		`"parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]}}}], "tool_choice": "required", "seed": 3`
	for _, tc := range []struct {
		name   string
		h      *Handler
		limits []int
	}{
		{"default model", newHandler(t, Options{ContextLength: 2048}), []int{69, 70, 100, 200, 300, 400, 1000}},
		{"qwen3 parity", qh, []int{40, 60, 63, 64, 65, 66, 70, 74, 75, 77, 400}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := toolReplyOf(t, tc.h, weather+"}")
			require.Equal(t, "tool_calls", full.finish, "the reply under no max_tokens ends on its own")
			require.NotEmpty(t, full.calls)
			cut := 0
			for _, limit := range tc.limits {
				body := weather + `, "max_tokens": ` + strconv.Itoa(limit) + "}"
				r := toolReplyOf(t, tc.h, body)
				_, _, sCalls, sFinish := streamedReply(t, tc.h, strings.TrimSuffix(body, "}")+`, "stream": true}`)
				assert.Equal(t, r.finish, sFinish, "streamed: %s", body)
				assert.Equal(t, r.calls, sCalls, "streamed: %s", body)
				require.LessOrEqual(t, len(r.calls), len(full.calls), body)
				for i, c := range r.calls {
					assert.Equal(t, full.calls[i].Function, c.Function, "call %d is the model's: %s", i, body)
				}
				if limit > full.tokens { // at full.tokens the limit, not the model, ends it
					assert.Equal(t, full.finish, r.finish, body)
					assert.Equal(t, full.tokens, r.tokens, body)
					assert.Len(t, r.calls, len(full.calls), body)
					continue
				}
				cut++
				assert.Equal(t, "length", r.finish, body)
				assert.Equal(t, limit, r.tokens, body)
			}
			assert.Greater(t, cut, 2, "some limits cut the reply")
		})
	}
}

// toolReply is a chat reply's calls, finish reason and completion tokens.
type toolReply struct {
	calls  []callJSON
	finish string
	tokens int
}

// toolReplyOf sends a non-streamed chat request and reads its toolReply.
func toolReplyOf(t *testing.T, h http.Handler, body string) toolReply {
	t.Helper()
	w := do(h, "POST", "/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, w.Code, "%s: %s", body, w.Body.String())
	var r struct {
		Choices []struct {
			Message struct {
				ToolCalls []callJSON `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &r))
	require.Len(t, r.Choices, 1)
	return toolReply{r.Choices[0].Message.ToolCalls, r.Choices[0].FinishReason, r.Usage.CompletionTokens}
}
