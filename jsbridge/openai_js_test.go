package jsbridge

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/openai"
	"github.com/wasmlm/wasmlm/policy"
)

// TestChatAsOverHTTP: the same chat request with the same seed gives the
// same tokens in the page (the bridge's chat) as over HTTP — OpenAI's
// defaults (no temperature: 1), the grammar of a response_format or a
// forced tool call, stop strings — and the same reply: the bridge's tokens
// are those of httpapi's job (openai.API.ChatJob over the same model and
// context, generated natively), and its choice (message, finish_reason)
// and usage are those of httpapi's handler's response.
func TestChatAsOverHTTP(t *testing.T) {
	reqTools, _ := testTools()
	weather := map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}
	cases := []struct {
		name   string
		fields map[string]any
	}{
		{"greedy", map[string]any{"temperature": 0, "max_tokens": 30}},
		{"OpenAI's defaults", map[string]any{"seed": 7, "max_tokens": 40}},
		{"sampling fields", map[string]any{"seed": 3, "temperature": 0.7, "top_p": 0.9, "top_k": 20, "min_p": 0.05, "presence_penalty": 0.5, "max_completion_tokens": 40, "stop": []string{"."}}},
		{"json_object", map[string]any{"seed": 5, "max_tokens": 60, "response_format": map[string]any{"type": "json_object"}}},
		{"forced tool call", map[string]any{"seed": 2, "max_tokens": 200, "tools": reqTools, "tool_choice": weather}},
		{"tools auto", map[string]any{"seed": 4, "max_tokens": 40, "tools": reqTools}},
	}
	data := toolModels(t)[0].data // the default model with a context that holds the tools
	model, err := engine.Load(data, engine.LoadOptions{})
	require.NoError(t, err)
	handler, err := httpapi.New(model, httpapi.Options{})
	require.NoError(t, err)
	b := newLoadedFile(t, data)
	contextLength := mustCall(t, b, "info").Get("sessionContextLength").Int()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fields["messages"] = userSays("What is the weather in Paris? Once upon a time")
			raw, err := json.Marshal(c.fields)
			require.NoError(t, err)

			res := mustCall(t, b, "chat", js.ValueOf(string(raw)))
			assert.Equal(t, nativeJobTokens(t, model, contextLength, raw), ints(res.Get("tokens")), "the tokens of httpapi's job")

			r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(string(raw)))
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			handler.ServeHTTP(w, r)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			var resp struct {
				Choices []struct {
					Message      json.RawMessage `json:"message"`
					FinishReason string          `json:"finish_reason"`
				} `json:"choices"`
				Usage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
			require.Len(t, resp.Choices, 1)
			page := js.Global().Get("JSON").Call("stringify", res.Get("choice").Get("message")).String()
			assert.JSONEq(t, string(resp.Choices[0].Message), page, "the message")
			assert.Equal(t, resp.Choices[0].FinishReason, res.Get("choice").Get("finish_reason").String())
			assert.Equal(t, resp.Usage.PromptTokens, res.Get("usage").Get("promptTokens").Int())
			assert.Equal(t, resp.Usage.CompletionTokens, res.Get("usage").Get("completionTokens").Int())
			assert.Positive(t, resp.Usage.CompletionTokens)
		})
	}
}

// nativeJobTokens generates body's job as httpapi makes it (openai's API
// over model with a session of contextLength tokens, the most a request
// may ask for as many) and returns its tokens.
func nativeJobTokens(t *testing.T, model *engine.Model, contextLength int, body []byte) []int {
	t.Helper()
	api := openai.API{Model: model, Grammars: policy.NewGrammars(model), Context: contextLength, MaxTokens: contextLength}
	req := openai.ChatRequest{SamplingRequest: api.NewSamplingRequest()}
	require.Nil(t, openai.Decode(body, &req))
	job, e := api.ChatJob(&req)
	require.Nil(t, e)
	s, err := model.NewSession(engine.SessionOptions{ContextLength: contextLength})
	require.NoError(t, err)
	res, err := s.GeneratePrompt(context.Background(), job.Prompt, job.Options, nil)
	require.NoError(t, err)
	return res.Tokens
}
