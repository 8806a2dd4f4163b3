package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/policy"
)

// qwen3Template is enough of Qwen3's chat template for the engine to use the
// qwen3 format (chat.Detect).
const qwen3Template = `<|im_start|>{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\n\n</think>\n\n' }}{%- endif %}`

// qwen3Model is the default model carrying qwen3Template.
func qwen3Model(t *testing.T) *engine.Model {
	t.Helper()
	return editedModel(t, models.Default(), "tokenizer.chat_template", gguf.ValueOf(qwen3Template), "", 0)
}

// scripted is a generation that sends pieces as its tokens' texts and
// records the prompt it was given.
func scripted(pieces []string, prompt *engine.Prompt) generateFunc {
	return func(_ context.Context, _ *engine.Session, p engine.Prompt, _ engine.GenerateOptions, onToken engine.TokenFunc) (engine.Result, error) {
		if prompt != nil {
			*prompt = p
		}
		res := engine.Result{PromptTokens: p.Tokens, FinishReason: engine.FinishStop}
		for i, piece := range pieces {
			res.Text += piece
			res.Tokens = append(res.Tokens, i)
			if onToken != nil {
				if err := onToken(engine.Token{ID: i, Text: piece}); err != nil {
					return res, err
				}
			}
		}
		return res, nil
	}
}

// A Qwen3 reply whose tags arrive split across tokens (and a token holding
// the end of the reasoning and the start of the content).
var splitReply = []string{"<th", "ink>\nI", " should", " greet. ", "</thi", "nk>\n\nHel", "lo", "!"}

// TestReasoningContent: a chat reply's reasoning is returned apart, as
// llama.cpp's server returns it, in message.reasoning_content and not in
// content; without reasoning the field is absent.
func TestReasoningContent(t *testing.T) {
	h := newHandler(t, Options{})
	body := `{"messages": [{"role": "user", "content": "hi"}]}`

	h.generate = scripted(splitReply, nil)
	w := do(h, "POST", "/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var resp struct {
		Choices []struct {
			Message map[string]any `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
	require.Len(t, resp.Choices, 1)
	assert.Equal(t, map[string]any{"role": "assistant", "content": "Hello!", "reasoning_content": "I should greet."}, resp.Choices[0].Message)

	h.generate = scripted([]string{"Once", " upon <think>"}, nil)
	w = do(h, "POST", "/v1/chat/completions", body)
	resp.Choices = nil
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
	assert.Equal(t, map[string]any{"role": "assistant", "content": "Once upon <think>"}, resp.Choices[0].Message,
		"no reasoning at the start: all content, no reasoning_content")

	h.generate = scripted(splitReply, nil)
	c := decodeCompletion(t, do(h, "POST", "/v1/completions", `{"prompt": "x"}`))
	assert.Equal(t, strings.Join(splitReply, ""), c.text(t), "text completions are left whole")
}

// TestReasoningContentStream: streamed, the reasoning comes in
// delta.reasoning_content chunks and the rest in delta.content chunks, each
// as soon as it is known, though the tags arrive split across tokens; no tag
// reaches the client.
func TestReasoningContentStream(t *testing.T) {
	h := newHandler(t, Options{})
	h.generate = scripted(splitReply, nil)
	w := do(h, "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "stream": true}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	events := parseSSE(t, w.Body.String())
	require.Equal(t, "[DONE]", events[len(events)-1].data)

	type delta struct {
		Role             *string `json:"role"`
		Content          *string `json:"content"`
		ReasoningContent *string `json:"reasoning_content"`
	}
	var deltas []delta
	for _, e := range events[:len(events)-1] {
		var c struct {
			Choices []struct {
				Delta        delta   `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(e.data), &c), e.data)
		require.Len(t, c.Choices, 1)
		deltas = append(deltas, c.Choices[0].Delta)
	}
	require.NotNil(t, deltas[0].Role, "the role chunk first")
	var reasoning, content []string
	for _, d := range deltas[1 : len(deltas)-1] {
		require.True(t, (d.Content == nil) != (d.ReasoningContent == nil), "one kind of text a chunk")
		if d.ReasoningContent != nil {
			require.Empty(t, content, "the reasoning comes first")
			reasoning = append(reasoning, *d.ReasoningContent)
		} else {
			content = append(content, *d.Content)
		}
	}
	last := deltas[len(deltas)-1]
	assert.Nil(t, last.Content)
	assert.Nil(t, last.ReasoningContent)
	// As chat.ReasoningParser releases them: trailing whitespace of the
	// reasoning waits for the text after it, and goes when the block closes.
	assert.Equal(t, []string{"I", " should", " greet."}, reasoning)
	assert.Equal(t, []string{"Hel", "lo", "!"}, content)
}

// TestEnableThinking: enable_thinking false (or llama.cpp's
// chat_template_kwargs.enable_thinking false) gives a thinking template's
// prompt the empty think block; true, or nothing, the template's default; a
// template without the switch ignores it.
func TestEnableThinking(t *testing.T) {
	m := qwen3Model(t)
	h, err := New(m, Options{})
	require.NoError(t, err)
	msgs := []chat.Message{{Role: "user", Content: "hi"}}
	on, err := policy.NewChatPrompt(m, msgs, chat.Options{})
	require.NoError(t, err)
	off, err := policy.NewChatPrompt(m, msgs, chat.Options{DisableThinking: true})
	require.NoError(t, err)
	require.NotEqual(t, on.Tokens, off.Tokens)

	for _, tc := range []struct {
		fields string
		want   engine.Prompt
	}{
		{``, on.Prompt},
		{`, "enable_thinking": true`, on.Prompt},
		{`, "enable_thinking": null`, on.Prompt},
		{`, "enable_thinking": false`, off.Prompt},
		{`, "chat_template_kwargs": {"enable_thinking": false}`, off.Prompt},
		{`, "chat_template_kwargs": {"enable_thinking": true, "other": [1]}`, on.Prompt},
		{`, "chat_template_kwargs": null`, on.Prompt},
		{`, "enable_thinking": false, "chat_template_kwargs": {"enable_thinking": false}`, off.Prompt},
	} {
		var got engine.Prompt
		h.generate = scripted([]string{"ok"}, &got)
		w := do(h, "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]`+tc.fields+`}`)
		require.Equal(t, http.StatusOK, w.Code, "%s: %s", tc.fields, w.Body.String())
		assert.Equal(t, tc.want.Tokens, got.Tokens, tc.fields)
	}

	// The real generation, prompt and all: the prompt is the one counted.
	h.generate = runSession
	c := decodeCompletion(t, do(h, "POST", "/v1/chat/completions",
		`{"messages": [{"role": "user", "content": "hi"}], "enable_thinking": false, "max_tokens": 3, "temperature": 0}`))
	assert.Equal(t, len(off.Tokens), c.Usage.PromptTokens)

	// The default model has no template ("plain"): the option changes nothing.
	plain := newHandler(t, Options{})
	var a, b engine.Prompt
	plain.generate = scripted([]string{"ok"}, &a)
	require.Equal(t, http.StatusOK, do(plain, "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]}`).Code)
	plain.generate = scripted([]string{"ok"}, &b)
	require.Equal(t, http.StatusOK, do(plain, "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "enable_thinking": false}`).Code)
	assert.Equal(t, a.Tokens, b.Tokens)
}

// TestEnableThinkingErrors: invalid values are OpenAI errors naming the field.
func TestEnableThinkingErrors(t *testing.T) {
	h := newHandler(t, Options{})
	for _, tc := range []struct {
		fields, param, code, message string
	}{
		{`"enable_thinking": "false"`, "enable_thinking", "invalid_type", "enable_thinking must be a boolean, got a string"},
		{`"enable_thinking": 0`, "enable_thinking", "invalid_type", "enable_thinking must be a boolean"},
		{`"chat_template_kwargs": true`, "chat_template_kwargs", "invalid_type", "chat_template_kwargs must be an object, got a bool"},
		{`"chat_template_kwargs": ["enable_thinking"]`, "chat_template_kwargs", "invalid_type", "must be an object, got an array"},
		{`"chat_template_kwargs": {"enable_thinking": "false"}`, "chat_template_kwargs.enable_thinking", "invalid_type",
			"chat_template_kwargs.enable_thinking must be a boolean, got a string"},
		{`"enable_thinking": true, "chat_template_kwargs": {"enable_thinking": false}`, "enable_thinking", "invalid_value",
			"enable_thinking is true but chat_template_kwargs.enable_thinking is false"},
	} {
		w := do(h, "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], `+tc.fields+`}`)
		require.Equal(t, http.StatusBadRequest, w.Code, "%s: %s", tc.fields, w.Body.String())
		e := apiErrorOf(t, w.Body.Bytes())
		assertNullable(t, tc.param, e.Param, "param")
		assertNullable(t, tc.code, e.Code, "code")
		assert.Contains(t, e.Message, tc.message, tc.fields)
	}
}
